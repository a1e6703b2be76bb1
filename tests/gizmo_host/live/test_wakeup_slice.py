"""The reader's short scheduler slice: asked for, kept to the thread's policy and nice value,
and seen by the kernel (``/proc/.../sched``'s ``se.slice``, not the module's own read-back).

Each request runs in a thread of its own: a slice is per thread, and the test process's own
threads keep theirs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from gizmo_host.live.wakeup_slice import (
    DEFAULT_SLICE_US,
    MAX_SLICE_US,
    MIN_SLICE_US,
    _outcome,
    request_slice,
)

T = TypeVar("T")
GIZMO_HOST = Path(sys.executable).parent / "gizmo-host"
_RELEASE = tuple(int(n) for n in re.findall(r"\d+", os.uname().release)[:2])
SLICES_KNOWN = sys.platform == "linux" and _RELEASE >= (6, 12)
linux_with_slices = pytest.mark.skipif(
    not SLICES_KNOWN, reason="slice requests need Linux 6.12 or later"
)


def kernel_slice_ns(tid: int, pid: int | None = None) -> int | None:
    """The slice the scheduler holds for thread ``tid``, from its debug file (None: no file
    or no such line on this kernel)."""
    path = Path(f"/proc/{pid or os.getpid()}/task/{tid}/sched")
    try:
        text = path.read_text()
    except OSError:
        return None
    found = re.search(r"^se\.slice\s*:\s*(\d+)", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def in_a_thread(work: Callable[[], T]) -> T:
    """``work()`` run in a new thread (its slice, policy and nice value its own)."""
    out: list[T] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return out[0]


@linux_with_slices
@pytest.mark.parametrize("slice_us", [MIN_SLICE_US, DEFAULT_SLICE_US, 2000])
def test_the_kernel_runs_the_thread_in_the_slice_asked_for(slice_us):
    def work():
        before = kernel_slice_ns(threading.get_native_id())
        outcome = request_slice(slice_us)
        return before, outcome, kernel_slice_ns(threading.get_native_id())

    before, outcome, after = in_a_thread(work)
    assert outcome.granted_ns == slice_us * 1000, outcome.note
    assert outcome.note == f"scheduler slice {slice_us} us"
    if after is not None:  # the scheduler's own debug file agrees
        assert before != slice_us * 1000 or slice_us == DEFAULT_SLICE_US
        assert after == slice_us * 1000


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's scheduler")
def test_the_threads_nice_value_and_policy_are_kept():
    """Lowering nice needs a privilege a service may not have; the request passes the
    thread's own value, and the policy it runs under."""

    def work():
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, 7)
        outcome = request_slice(DEFAULT_SLICE_US)
        return outcome, os.getpriority(os.PRIO_PROCESS, tid), os.sched_getscheduler(0)

    outcome, nice, policy = in_a_thread(work)
    assert nice == 7
    assert policy == os.SCHED_OTHER
    if SLICES_KNOWN:
        assert outcome.granted_ns == DEFAULT_SLICE_US * 1000


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's scheduler")
def test_a_thread_under_another_policy_is_left_as_it_is():
    def work():
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        before = kernel_slice_ns(threading.get_native_id())
        outcome = request_slice(DEFAULT_SLICE_US)
        after = kernel_slice_ns(threading.get_native_id())
        return outcome, os.sched_getscheduler(0), before, after

    outcome, policy, before, after = in_a_thread(work)
    assert outcome.granted_ns is None
    assert outcome.note == "the thread runs under SCHED_BATCH: left as it is"
    assert policy == os.SCHED_BATCH
    assert after == before


@pytest.mark.skipif(sys.platform != "linux", reason="Linux's scheduler")
def test_zero_asks_for_nothing():
    def work():
        before = kernel_slice_ns(threading.get_native_id())
        return before, request_slice(0), kernel_slice_ns(threading.get_native_id())

    before, outcome, after = in_a_thread(work)
    assert outcome == (0, None, "no slice asked for (runtime.wakeup_slice_us = 0)")
    assert after == before


@pytest.mark.parametrize("slice_us", [-1, 1, MIN_SLICE_US - 1, MAX_SLICE_US + 1])
def test_a_slice_the_kernel_would_clamp_is_refused(slice_us):
    with pytest.raises(ValueError, match=rf"expected 100\.\.100000 us or 0, got {slice_us}"):
        request_slice(slice_us)


def test_a_machine_without_known_syscall_numbers_is_said():
    outcome = request_slice(DEFAULT_SLICE_US, machine="sparc64")
    assert outcome.granted_ns is None
    if sys.platform == "linux":
        assert outcome.note == "no scheduler slice request on sparc64"


def test_a_kernel_that_ignored_the_request_is_told_apart():
    """Before 6.12 the call succeeds and ``sched_runtime`` reads back 0 under the normal
    policy; any other value than the one asked for is reported as it is."""
    assert _outcome(300, 300_000).granted_ns == 300_000
    ignored = _outcome(300, 0)
    assert ignored.granted_ns is None
    assert "Linux 6.12" in ignored.note
    other = _outcome(300, 1_400_000)
    assert other == (300, None, "asked for a 300 us slice, the kernel holds 1400000 ns")


def _run_until_logged(tmp_path: Path, *flags: str) -> tuple[str, dict[int, int | None]]:
    """Start the real ``gizmo-host run`` on a pty, read its log up to the wake-up line and
    the first link state, then every thread's slice; stop it."""
    master, slave = os.openpty()
    service = subprocess.Popen(
        [os.fspath(GIZMO_HOST), "run", "--serial", os.ttyname(slave), *flags],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wakeup = ""
        assert service.stderr is not None and service.stdout is not None
        for line in service.stderr:
            if "wake-up:" in line:
                wakeup = line
                break
        assert wakeup, "no wake-up line in the log"
        for line in service.stdout:  # the version line, then the link's first state
            if '"type":"link"' in line:
                break
        tids = [int(t) for t in os.listdir(f"/proc/{service.pid}/task")]
        slices = {tid: kernel_slice_ns(tid, service.pid) for tid in tids}
    finally:
        service.kill()
        service.wait()
        service.stdout.close()
        service.stderr.close()
        os.close(slave)
        os.close(master)
    return wakeup, slices


@pytest.mark.subprocess
@linux_with_slices
def test_gizmo_host_run_reads_in_its_short_slice_on_every_thread(tmp_path):
    wakeup, slices = _run_until_logged(tmp_path)
    assert f"scheduler slice {DEFAULT_SLICE_US} us" in wakeup
    if None not in slices.values():
        assert set(slices.values()) == {DEFAULT_SLICE_US * 1000}, slices


@pytest.mark.subprocess
@linux_with_slices
def test_gizmo_host_run_with_zero_keeps_the_kernels_slice(tmp_path):
    default = in_a_thread(lambda: kernel_slice_ns(threading.get_native_id()))
    wakeup, slices = _run_until_logged(tmp_path, "--wakeup-slice-us", "0")
    assert "no slice asked for" in wakeup
    if default is not None:
        assert set(slices.values()) == {default}, slices
