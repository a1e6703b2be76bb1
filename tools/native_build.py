#!/usr/bin/env python3
"""Compile the per-frame modules with mypyc, in place, or remove them: ``build`` | ``clean``.

``python3 dev.py`` runs ``build`` after installing: the modules below become C extensions next
to their sources (the same code, type-checked by ``mypy --strict`` already; about a third less
CPU a frame in offline replay, bench/replay.py). Without a C compiler, or with
``GIZMO_HOST_INTERPRETED=1``, the project runs interpreted, and says so. A build whose
sources are unchanged (their SHA-256 in the manifest, with mypy's and Python's versions) is
not redone. A failed build leaves nothing compiled behind (interpreted is always correct), and
is not tried again until a source, mypy or Python changes.

Modules are chosen for their cost per frame and for being plain typed Python: no class that
code elsewhere builds with ``object.__new__`` (``fusion.inputs``), and no coroutine of the live
path: compiled, a coroutine that returns from a ``try`` whose ``finally`` awaits returned
``None`` (``SerialLink._serve``), and with the scheduler and the services compiled a service's
stop once outlasted its 5 s bound in CI, so they stay interpreted (offline replay, its manual
clock's timers and the world adapters, which await nothing, are compiled). Module constants are
``Final``, so compiled code reads them without a dictionary lookup, except tuples of floats:
mypyc 1.x reads such a constant from another module as unset (``NameError``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gizmo_core.native import (  # noqa: E402 - after the sys.path line
    EXTENSION,
    manifest_path,
    source_digest,
    stale_modules,
)

# The compiled modules, each a source path from the root.
MODULES = (
    "fusion/camera.py",
    "fusion/config.py",
    "fusion/errors.py",
    "fusion/estimates.py",
    "fusion/geometry.py",
    "fusion/gimbal.py",
    "fusion/intake.py",
    "fusion/jump_rule.py",
    "fusion/observation_build.py",
    "fusion/placement.py",
    "fusion/ranging.py",
    "fusion/simclock.py",
    "fusion/snapshot.py",
    "fusion/sources.py",
    "fusion/targets.py",
    "fusion/timeline.py",
    "fusion/timesync.py",
    "fusion/verdict_check.py",
    "fusion/verdicts.py",
    "fusion/world.py",
    "fusion/tracking/assignment.py",
    "fusion/tracking/association.py",
    "fusion/tracking/config.py",
    "fusion/tracking/history.py",
    "fusion/tracking/motion.py",
    "fusion/tracking/noise.py",
    "fusion/tracking/tracker.py",
    "fusion/tracking/tracks.py",
    "hil_geometry/rotations.py",
    "gizmo_core/clock/envelope.py",
    "gizmo_core/clock/line.py",
    "gizmo_core/clock/mapping.py",
    "gizmo_core/clock/runs.py",
    "gizmo_host/stream/clock.py",
    "gizmo_host/stream/events.py",
    "gizmo_host/stream/pipeline.py",
    "gizmo_host/stream/store.py",
    "gizmo_host/stream/tracker.py",
    "gizmo_host/wire/parser.py",
    "gizmo_host/wire/result_checks.py",
    "gizmo_host/publish/lines.py",
    "gizmo_host/bridge/world_adapters.py",
    "gizmo_host/bridge/rfly_adapter.py",
    "gizmo_host/bridge/rfly_mounts.py",
    "gizmo_host/app/world_build.py",
    "rfly_link/dispatch.py",
    "gizmo_host/app/offline_replay.py",
    "gizmo_host/manual_clock.py",
    "gizmo_host/live/service.py",
    "gizmo_host/bridge/world_service.py",
)
# Compiled with Cython, where it is installed (the test extra): C forms of what a module does
# with numpy or with ``%``, which it uses when they are built (``motion.built_kernel``,
# ``events.line_template``).
CYTHON_MODULES = ("fusion/tracking/imm_kernel.pyx", "gizmo_host/stream/line_template.pyx")
OPT_OUT = "GIZMO_HOST_INTERPRETED"
# mypyc's runtime, shared by the compiled modules: inside a package, where the installed
# project's import path finds it from any directory (a top-level module would need the root).
SHARED = "gizmo_core._native"
_SETUP = """from setuptools import setup
from mypyc.build import mypycify

modules = {modules!r}
extensions = mypycify(modules, opt_level="3", group_name={group!r})
if {cython!r}:
    from Cython.Build import cythonize

    extensions += cythonize({cython!r}, build_dir="build/cython", quiet=True)
setup(name="gizmo-host-native", ext_modules=extensions)
"""


def _compiler() -> str | None:
    """The C compiler Python's own build used, if this machine has it."""
    command = shlex.split(str(sysconfig.get_config_var("CC") or "cc"))
    return shutil.which(command[0]) if command else None


def _cython_version() -> str | None:
    try:
        from Cython import __version__  # noqa: PLC0415 - the test extra's
    except ImportError:
        return None
    return str(__version__)


def _wanted(mypy_version: str, cython_version: str | None) -> dict[str, object]:
    cython = CYTHON_MODULES if cython_version else ()
    return {
        "python": sys.version,
        "mypy": mypy_version,
        "cython": cython_version,
        "sources": {m: source_digest(ROOT / m) for m in (*MODULES, *cython)},
    }


def clean() -> None:
    """Remove this interpreter's compiled modules and the manifest."""
    for package in {m.split("/")[0] for m in (*MODULES, *CYTHON_MODULES)}:
        for extension in (ROOT / package).rglob(f"*{EXTENSION}"):
            extension.unlink()
    for shared in ROOT.glob(f"*__mypyc{EXTENSION}"):  # an older build's, at the root
        shared.unlink()
    manifest_path().unlink(missing_ok=True)


def build() -> int:
    if os.environ.get(OPT_OUT):
        clean()
        print(f"native: {OPT_OUT} is set: running interpreted", flush=True)
        return 0
    if _compiler() is None:
        clean()
        print("native: no C compiler here: running interpreted (about 1.4x the CPU a frame)")
        return 0
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        clean()
        print("native: no Python headers here (python3-dev): running interpreted")
        return 0
    try:
        from mypy.version import __version__ as mypy_version  # noqa: PLC0415 - test extra
    except ImportError:
        clean()
        print("native: mypy (its mypyc) is not installed: running interpreted")
        return 0
    cython_version = _cython_version()
    cython = CYTHON_MODULES if cython_version else ()
    want = _wanted(mypy_version, cython_version)
    manifest = manifest_path()
    log = manifest.with_suffix(".log")
    try:
        have = json.loads(manifest.read_text())
    except (OSError, ValueError):
        have = None
    built = all((ROOT / m).with_suffix(EXTENSION).exists() for m in (*MODULES, *cython))
    if have == want and built and not stale_modules():
        return 0
    if have == {**want, "failed": True}:  # not tried again until something changes
        print(f"native: the last build of these sources failed ({log}): running interpreted")
        return 0
    clean()
    with_cython = f" and {len(cython)} with Cython" if cython else " (no Cython: numpy's IMM)"
    print(
        f"native: compiling {len(MODULES)} modules with mypyc{with_cython} (about two minutes)",
        flush=True,
    )
    log.parent.mkdir(exist_ok=True)
    setup = log.with_name("native_setup.py")
    setup.write_text(_SETUP.format(modules=list(MODULES), group=SHARED, cython=list(cython)))
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, setup, "build_ext", "--inplace"],
            check=False,
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    if done.returncode != 0:
        clean()
        manifest.write_text(json.dumps({**want, "failed": True}, indent=1, sort_keys=True))
        tail = log.read_text().strip().splitlines()[-3:]
        print(f"native: the build failed ({log}): running interpreted", *tail, sep="\n  ")
        return 0
    manifest.write_text(json.dumps(want, indent=1, sort_keys=True))
    print(f"native: {len(MODULES) + len(cython)} modules compiled", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv == ["build"]:
        return build()
    if argv == ["clean"]:
        clean()
        return 0
    print("usage: native_build.py build|clean", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
