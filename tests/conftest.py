"""Shared test settings: hypothesis profiles sized for a 2-core CI machine, and a check that
no test leaks an asyncio task."""

import asyncio
import asyncio.runners
import contextlib
import os
import signal

import pytest
from hypothesis import HealthCheck, settings

from gizmo_core.native import stale_message, stale_modules

# CI is deterministic (the same examples each run, so a landing is never refused by the luck of
# the draw); the edit loop draws new examples each run and is where properties find new cases.
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("thorough", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def pytest_configure(config: pytest.Config) -> None:
    stale = stale_modules()
    if stale:  # the tests would test code the sources no longer say
        pytest.exit(stale_message(stale), returncode=2)
    config.addinivalue_line(
        "markers",
        "long: over ~7 s of wall clock (mostly waiting): started first, so that the workers of "
        "a phase end together instead of one of them running it alone at the end",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first; the others keep their order (a stable sort)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def no_leaked_asyncio_tasks(monkeypatch):
    """Fail a test whose ``asyncio.run`` ends with tasks still pending: a leaked task (a
    reader, a timer's coroutine, a service left running) that ``asyncio.run`` would otherwise
    cancel silently on the way out."""
    leaked: list[str] = []
    original = asyncio.runners._cancel_all_tasks

    def checking(loop):
        leaked.extend(
            task.get_name() + ": " + repr(task.get_coro())
            for task in asyncio.all_tasks(loop)
            if not task.done()
        )
        original(loop)

    monkeypatch.setattr(asyncio.runners, "_cancel_all_tasks", checking)
    yield
    assert not leaked, f"asyncio tasks leaked past asyncio.run: {leaked}"


def _children() -> set[int]:
    """This process's live child processes: each thread's ``children`` file (Linux), else the
    ppid field of every process in /proc (50 times slower: 1.5 ms, twice a test)."""
    me, candidates = os.getpid(), set()
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children") as children:
                candidates.update(int(pid) for pid in children.read().split())
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN, or a thread just gone
        candidates = {int(e) for e in os.listdir("/proc") if e.isdigit()}
    found = set()
    for pid in candidates:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(pid)
    return found


@pytest.fixture(autouse=True)
def no_leftover_processes():
    """Kill what a test started and left running: a test that fails before it stops its
    ``gizmo-host run`` would otherwise leave it reading ports and CPU for the rest of the suite
    (six were found still running after failed runs). A module-scoped fixture's processes were
    started before the test, so they are not touched."""
    if not os.path.isdir("/proc"):
        yield
        return
    before = _children()
    yield
    for pid in _children() - before:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
