#!/usr/bin/env python3
"""Bootstrap and task runner that needs nothing but Python >= 3.10.

``python3 dev.py demo`` and ``python3 dev.py test`` create ``.venv`` on first use, install the
project with its test extras there (again only when ``pyproject.toml`` changes), compile the
per-frame modules with mypyc where a C compiler is at hand (``tools/native_build.py``; again
only when their sources change; ``GIZMO_HOST_INTERPRETED=1`` runs everything interpreted),
write the project's bytecode (``_compile_bytecode``), then run.
``test`` runs ruff (lint and format), ``mypy --strict``, import-linter's layer contracts and
pytest, stopping at the first that fails; ``test --fast`` skips the tests marked realtime,
subprocess or hil (the edit loop; CI runs everything). pytest runs in parallel with
pytest-xdist, in three phases (see ``pytest_in_phases``). ``regen-goldens`` rewrites the golden
outputs in ``tests/captures`` from their captures, on purpose (``--captures``: rebuild the
synthetic captures first).

The interpreter that runs dev.py owns the venv: ``.venv`` is the first one's, and another
Python gets its own (``python3.10 dev.py test --fast`` uses ``.venv-3.10``), so every supported
Python can be checked from one checkout.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
EXTRAS = "test,images,uvloop,record,demo,mavlink,foxglove,zenoh,ros2,report"
FAST = "not realtime and not subprocess and not hil"
WAITING = "(realtime or subprocess) and not hil"


def _venv_for(version: tuple[int, int]) -> Path:
    """``.venv`` unless it was made by another Python, then ``.venv-X.Y``."""
    default = ROOT / ".venv"
    cfg = default / "pyvenv.cfg"
    if not cfg.exists():
        return default
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() in {"version", "version_info"}:
            made_by = tuple(int(p) for p in value.strip().split(".")[:2])
            return default if made_by == version else ROOT / f".venv-{version[0]}.{version[1]}"
    return default


VENV = _venv_for(sys.version_info[:2])
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed-pyproject-sha256"


def _python() -> str:
    return str(BIN / ("python.exe" if os.name == "nt" else "python"))


def ensure_env() -> None:
    """Create the venv and install the project editable, unless already current."""
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + EXTRAS.encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want:
        return
    if not BIN.exists():
        print(f"dev.py: creating {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    pip = [_python(), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "-e", f".[{EXTRAS}]"], check=True, cwd=ROOT)
    STAMP.write_text(want)


def run(*args: str) -> int:
    """Run a task's command; Ctrl-C is the command's to handle (the demo ends with its
    summary), so dev.py forwards it and waits instead of dying with a traceback."""
    process = subprocess.Popen([str(a) for a in args], cwd=ROOT)
    while True:
        try:
            return process.wait()
        except KeyboardInterrupt:
            process.send_signal(signal.SIGINT)  # a no-op echo when the terminal sent it too


def main(argv: list[str]) -> int:
    task = argv[0] if argv else "help"
    rest = argv[1:]
    if task == "help" or task not in {"demo", "test", "lint", "bench", "env", "regen-goldens"}:
        print(__doc__.strip())
        print(
            "\ntasks: demo, test [--fast] [pytest args], lint, bench, env, "
            "regen-goldens [--captures]"
        )
        return 0 if task == "help" else 2
    ensure_env()
    # The per-frame modules compiled with mypyc where a C compiler is at hand (or interpreted,
    # and it says so): redone only when their sources change (tools/native_build.py).
    rc = run(_python(), ROOT / "tools" / "native_build.py", "build") or _compile_bytecode()
    if rc or task == "env":
        return rc
    if task == "demo":
        return run(BIN / "gizmo-host", "demo", *rest)
    if task == "regen-goldens":
        return run(_python(), "-m", "tests.captures.generate", *rest)
    if task == "lint":
        return run(BIN / "ruff", "check", ".") or run(BIN / "ruff", "format", "--check", ".")
    if task == "bench":
        rc = 0
        for script in sorted((ROOT / "bench").glob("[!_]*.py")):  # _name: a shared module
            print(f"== {script.name}", flush=True)
            rc |= run(_python(), script)
        return rc
    # test: the static checks first (fast, and each names what is wrong), then the suite.
    fast = "--fast" in rest
    rest = [a for a in rest if a != "--fast"]
    for check in (
        [BIN / "ruff", "check", "."],
        [BIN / "ruff", "format", "--check", "."],
        [
            BIN / "mypy",
            "--strict",
            "gizmo_host",
            "gizmo_core",
            "rfly_link",
            "fusion",
            "hil_geometry",
        ],
        [BIN / "lint-imports"],
    ):
        rc = run(*check)
        if rc:
            return rc
    print(f"dev.py: pytest on Python {sys.version.split()[0]} in {VENV.name}", flush=True)
    return pytest_in_phases(rest, fast=fast)


NO_TESTS = 5  # pytest's exit status when a selection holds no test
PACKAGES = ("gizmo_host", "gizmo_core", "rfly_link", "fusion", "hil_geometry")


def _compile_bytecode() -> int:
    """Write the project's bytecode (``__pycache__``, ignored by git), as pip does for an
    installed package: an editable checkout has none, and where ``PYTHONDONTWRITEBYTECODE`` is
    set no command ever writes it, so each one compiled every module it imports from source
    (about 65 ms of a ``gizmo-host`` start-up of 240). Only changed sources are redone."""
    return run(_python(), "-m", "compileall", "-q", "-j", "0", *PACKAGES)


def _cache_bytecode() -> None:
    """Let pytest and every interpreter the tests start (a few hundred ``gizmo-host`` runs,
    doctors and emulators) keep compiled bytecode, in ``.venv/pycache`` so the tree stays
    clean. Under ``PYTHONDONTWRITEBYTECODE`` each of them compiled the project from source
    again (0.15-0.2 s a process) and each pytest rewrote every test module's asserts (~6 s)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(VENV / "pycache"))


def pytest_in_phases(rest: list[str], *, fast: bool = False) -> int:
    """The suite in three phases that never overlap: the tests that compute, one worker per
    core (pytest-xdist); the realtime and subprocess tests, which mostly wait on the wall clock
    (a 21 s liveness run uses 1 s of CPU; the phase, ~310 s of waiting, uses under one core),
    two workers per core (91 s here against 111 s with one per core plus one, and it passed
    with two CPU hogs running beside it); then the HIL chains, the certify matrix and the
    junk flood, one module at a time (they time whole emulated boards, hosts and simulators
    and judge HOLD latencies; a module's chains are one fixture, in one worker).
    ``--fast``: the first phase only. A test paced on the wall clock so never shares the CPU
    with the hypothesis tests. Arguments that choose the markers or the workers (``-m``,
    ``-n``, ``-p no:xdist``) run one pytest instead, as given (after ``--fast``'s marker)."""
    pytest = [_python(), "-m", "pytest"]
    _cache_bytecode()
    if any(a in ("-m", "no:xdist") or a.startswith(("-n", "--numprocesses")) for a in rest):
        return run(*pytest, *(["-m", FAST] if fast else []), *rest)
    cores = os.cpu_count() or 1
    # The HIL modules share their chains in a module fixture: ``loadfile`` keeps a module in
    # one worker (``loadgroup``'s xdist_group does nothing with pytest 9.2 and xdist 3.8,
    # which sets a node id attribute pytest no longer reads), in the order collected (the
    # tests marked long first: see tests/conftest.py), not the files with most tests first.
    load = ["--dist", "loadgroup"]
    phases = [(FAST, cores, load)]
    if not fast:
        by_file = ["--dist", "loadfile", "--no-loadscope-reorder"]
        # The HIL phase one file at a time: its chains and certify each bind a set of free
        # UDP ports and judge HOLD latencies; two files at once lost certify's lean matrix in
        # one CI run (its process ended without a summary), for 12 s saved.
        phases += [(WAITING, 2 * cores, load), ("hil", 1, by_file)]
    codes = []
    for markers, workers, dist in phases:
        parallel = ["-n", str(min(workers, 8)), *dist] if workers > 1 else []
        codes.append(run(*pytest, "-m", markers, *parallel, *rest))
        if codes[-1] not in (0, NO_TESTS):
            return codes[-1]
    return NO_TESTS if all(c == NO_TESTS for c in codes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
