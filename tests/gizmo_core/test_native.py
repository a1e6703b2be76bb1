"""The compiled build (tools/native_build.py): a module compiled from an older source is
refused, and the build is all or nothing."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import sys
from pathlib import Path

import pytest

from gizmo_core.native import (
    EXTENSION,
    ROOT,
    is_compiled,
    manifest_path,
    stale_modules,
)
from gizmo_host.cli import main as cli_main

sys.path.insert(0, str(ROOT / "tools"))
from native_build import CYTHON_MODULES, MODULES


def _tree(tmp_path: Path, sources: dict[str, str], built: dict[str, str]) -> Path:
    """A root with ``sources`` (path -> text), an extension beside each of ``built``'s, and a
    manifest recording ``built`` (path -> the text it was built from)."""
    for path, text in sources.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    for path in built:
        (tmp_path / path).with_suffix("").with_suffix(EXTENSION).write_bytes(b"\x7fELF")
    recorded = {path: hashlib.sha256(text.encode()).hexdigest() for path, text in built.items()}
    manifest_path(tmp_path).parent.mkdir(exist_ok=True)
    manifest_path(tmp_path).write_text(json.dumps({"sources": recorded}))
    return tmp_path


def test_a_build_of_the_very_sources_is_fresh(tmp_path):
    root = _tree(tmp_path, {"fusion/a.py": "A = 1\n"}, {"fusion/a.py": "A = 1\n"})
    assert stale_modules(root) == []


def test_a_source_changed_since_the_build_is_stale(tmp_path):
    root = _tree(tmp_path, {"fusion/a.py": "A = 2\n", "fusion/b.py": "B = 1\n"},
                 {"fusion/a.py": "A = 1\n", "fusion/b.py": "B = 1\n"})  # fmt: skip
    assert stale_modules(root) == ["fusion/a.py"]


def test_an_extension_no_build_recorded_is_stale(tmp_path):
    root = _tree(tmp_path, {"gizmo_host/stream/c.py": "C = 1\n"}, {})
    (root / "gizmo_host/stream/c.py").with_suffix(EXTENSION).write_bytes(b"\x7fELF")
    assert stale_modules(root) == ["gizmo_host/stream/c.py"]


def test_nothing_compiled_is_nothing_stale(tmp_path):
    root = _tree(tmp_path, {"fusion/a.py": "A = 1\n"}, {})
    manifest_path(root).unlink()
    assert stale_modules(root) == []


def test_a_command_refuses_to_run_on_a_stale_build(monkeypatch, capsys):
    monkeypatch.setattr(cli_main, "stale_modules", lambda: ["fusion/targets.py"])
    assert cli_main.main(["replay", "--offline", "missing.mcap"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fusion/targets.py" in err and "dev.py env" in err


def test_the_build_is_all_or_nothing():
    """Every listed module compiled, or none: a half-made build is cleaned away. The tests
    install Cython, so a compiled build here has the Cython modules too (whose tests would
    otherwise skip their C forms unseen)."""
    names = [m.removesuffix(".py").replace("/", ".") for m in MODULES]
    compiled = {name: is_compiled(importlib.import_module(name)) for name in names}
    assert len(set(compiled.values())) == 1, compiled
    for module in CYTHON_MODULES:
        built = (ROOT / module).with_suffix(EXTENSION).exists()
        assert built is next(iter(compiled.values())), module


def test_an_extension_built_from_a_changed_pyx_is_stale(tmp_path):
    """A Cython module's source is its ``.pyx``: a build of an older one is refused too."""
    root = _tree(tmp_path, {"fusion/k.pyx": "def f(): pass\n"}, {"fusion/k.pyx": "old\n"})
    assert stale_modules(root) == ["fusion/k.pyx"]
    fresh = _tree(tmp_path / "b", {"fusion/k.pyx": "x\n"}, {"fusion/k.pyx": "x\n"})
    assert stale_modules(fresh) == []


@pytest.mark.parametrize("module", MODULES)
def test_no_compiled_module_defines_a_coroutine(module):
    """mypyc miscompiled a coroutine once, and a compiled stop once hung CI: the compiled
    services return ``gizmo_host.live.lifecycle``'s interpreted coroutines instead."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    found = [node.name for node in ast.walk(tree) if isinstance(node, ast.AsyncFunctionDef)]
    assert found == [], f"{module}: async def {', '.join(found)}"


@pytest.mark.parametrize("module", MODULES + CYTHON_MODULES)
def test_every_listed_module_is_a_source_of_the_product(module):
    assert (ROOT / module).is_file()
    assert module.split("/")[0] in {
        "fusion",
        "gizmo_core",
        "gizmo_host",
        "hil_geometry",
        "rfly_link",
    }
