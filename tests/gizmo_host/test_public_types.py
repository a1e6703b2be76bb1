"""A user's type checker sees gizmo_host's real types: ``py.typed`` ships in every package and
the lazily imported names (``GizmoService``...) are declared for type checkers, not ``object``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gizmo_host

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gizmo_host", "gizmo_core", "rfly_link", "fusion")

USER_SCRIPT = """\
from gizmo_host import GizmoService, __version__


def use(service: GizmoService) -> str:
    service.no_such_method()
    return __version__
"""


def test_every_package_ships_py_typed() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "py.typed").is_file(), package
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["*"]


def test_the_version_comes_from_the_package_metadata() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert gizmo_host.__version__ == pyproject["project"]["version"]


@pytest.mark.subprocess
def test_a_users_mypy_strict_reports_a_missing_gizmo_service_method(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(USER_SCRIPT)
    # The packages as a user's interpreter finds them on its path: mypy then requires py.typed
    # (without it: "module is installed, but missing library stubs or py.typed marker").
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MYPYPATH", None)
    args = ["--strict", "--cache-dir", str(tmp_path / "cache"), str(script)]
    done = subprocess.run(
        [sys.executable, "-m", "mypy", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert 'user.py:5: error: "GizmoService" has no attribute "no_such_method"' in out, out
    assert "py.typed" not in out and "import-untyped" not in out, out
    assert "Found 1 error in 1 file" in out, out
