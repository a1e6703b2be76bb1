"""The tree says what runs on the vehicle and what simulates it, and keeps one of each.

import-linter checks the imports (``pyproject.toml``: the product never imports the rigs,
stream and wire import no fusion); these check what it cannot: where the simulators live, the
product's size, the tests' layout, and that the shared pieces exist once.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gizmo_host", "gizmo_core", "rfly_link", "fusion", "hil_geometry")
RIGS = ROOT / "gizmo_host" / "rigs"
MAX_PRODUCT_LINES = 20_000
MAX_FLAT_TESTS = 10


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_the_simulators_live_in_the_rigs_and_nowhere_else() -> None:
    for part in ("board", "rflysim", "autopilot", "demo", "certify"):
        assert (RIGS / part / "__init__.py").is_file(), part
    assert (RIGS / "rig.py").is_file()
    for gone in ("emulator", "standin", "certify"):
        assert not (ROOT / "gizmo_host" / gone).exists(), gone
    simulators = re.compile(r"^class (StandIn|StandinAutopilot|PrecLandVehicle|Emulation|Rig)\b")
    for path in _sources():
        if RIGS in path.parents:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            assert not simulators.match(line), f"{path.relative_to(ROOT)}: {line}"


def test_the_product_without_rigs_and_commands_stays_small() -> None:
    lines = sum(
        len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "gizmo_host").rglob("*.py")
        if RIGS not in path.parents and ROOT / "gizmo_host" / "cli" not in path.parents
    )
    assert lines <= MAX_PRODUCT_LINES, lines


def test_the_tests_are_laid_out_like_the_packages() -> None:
    flat = sorted(p.name for p in (ROOT / "tests" / "gizmo_host").glob("test_*.py"))
    assert len(flat) <= MAX_FLAT_TESTS, flat
    subpackages = {p.name for p in (ROOT / "gizmo_host").iterdir() if (p / "__init__.py").exists()}
    for directory in (ROOT / "tests" / "gizmo_host").iterdir():
        if directory.is_dir() and directory.name != "__pycache__":
            assert directory.name in subpackages, directory.name


def test_one_config_error_one_usage_status_one_json_encoder() -> None:
    found: dict[str, list[str]] = {"ConfigError": [], "EXIT_USAGE": [], "JSONEncoder": []}
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = str(path.relative_to(ROOT))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "ConfigError":
                found["ConfigError"].append(where)
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "EXIT_USAGE" for t in node.targets
            ):
                found["EXIT_USAGE"].append(where)
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "JSONEncoder":
                found["JSONEncoder"].append(where)
    assert found == {
        "ConfigError": ["gizmo_core/errors.py"],
        "EXIT_USAGE": ["gizmo_host/cli/common.py"],
        "JSONEncoder": ["gizmo_host/jsonl.py"],
    }


def test_no_module_of_ours_is_imported_by_its_name_as_a_string() -> None:
    """A string import escapes import-linter and mypy: every import of ours is a statement."""
    ours = re.compile(rf"""["']({"|".join(PACKAGES)})(\.[\w.]*)?["']""")
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("import_module", "__import__"):
                text = ast.unparse(node)
                assert not ours.search(text) and "__name__" not in text, (
                    f"{path.relative_to(ROOT)}: {text}"
                )
