"""The reader's scheduler slice: a short one, so that a frame arriving preempts a busy task.

Linux's fair scheduler (EEVDF, 6.6 and later) gives each task a virtual deadline one slice
ahead of its virtual runtime, and a waking task runs at once only if its deadline comes before
that of the task running. With the default slice (0.75 ms times 1 + log2 of the CPUs), a
reader woken by a frame on a busy machine may first wait out the rest of another task's slice.
From 6.12 a task may ask for a shorter slice (``sched_setattr(2)``'s ``sched_runtime`` under
the normal policy, 0.1 to 100 ms, no privilege needed): its deadlines come sooner, so it
preempts. A reader's wake-up fits in it: 0.2-0.3 ms of CPU at 30 frames/s (0.5-0.8 % of a
core in ``bench/serial_link.py``), 0.06-0.08 ms a read on a saturated 921600 line.
On a busy 2-core machine it cut the median wait for a line by a tenth to a third, and the p99
by as much or more (``bench/wakeup_slice.py``, docs/run.md); the kernel's own delivery of the
bytes, and the consumer's wake-up, it does not shorten.

:func:`request_slice` asks for the calling thread, keeping its policy and nice value, and reads
back what the kernel holds: older kernels take the call and ignore the value, and it says so.
Threads started later inherit the slice.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys
from typing import Final, NamedTuple

__all__ = [
    "DEFAULT_SLICE_US",
    "MAX_SLICE_US",
    "MIN_SLICE_US",
    "SliceRequest",
    "request_slice",
    "syscall_numbers",
]

DEFAULT_SLICE_US: Final = 300  # a 30/s wake-up's work; a fifth of the default slice on 2 CPUs
MIN_SLICE_US: Final = 100  # the kernel's range for a custom slice (it clamps to it)
MAX_SLICE_US: Final = 100_000

# struct sched_attr as of SCHED_ATTR_SIZE_VER1 (56 bytes): size, policy, flags, nice,
# priority, runtime, deadline, period, util_min, util_max
_SCHED_ATTR: Final = struct.Struct("<IIQiIQQQII")
_SCHED_OTHER: Final = 0
_POLICIES: Final = {
    1: "SCHED_FIFO",
    2: "SCHED_RR",
    3: "SCHED_BATCH",
    5: "SCHED_IDLE",
    6: "SCHED_DEADLINE",
}
# (sched_setattr, sched_getattr) by ``platform.machine()``: x86-64's own table, the generic
# one (arm64, riscv64) and 32-bit ARM's (Raspberry Pi OS 32-bit)
_SYSCALLS: Final = {
    "x86_64": (314, 315),
    "aarch64": (274, 275),
    "arm64": (274, 275),
    "riscv64": (274, 275),
    "armv7l": (380, 381),
    "armv6l": (380, 381),
}


class SliceRequest(NamedTuple):
    """What came of asking for a slice."""

    requested_us: int  # 0: none was asked for
    granted_ns: int | None  # the slice the kernel now holds for the thread; None: not granted
    note: str  # what happened, for the log


def syscall_numbers(machine: str) -> tuple[int, int] | None:
    """``sched_setattr`` and ``sched_getattr``'s numbers on ``machine``; None: not known."""
    return _SYSCALLS.get(machine)


def request_slice(slice_us: int, machine: str | None = None) -> SliceRequest:
    """Ask the kernel to run the calling thread in slices of ``slice_us`` (0: ask nothing; the
    thread keeps the slice it started with).

    Never raises for what the platform lacks: the note says why the slice was not granted."""
    if slice_us == 0:
        return SliceRequest(0, None, "no slice asked for (runtime.wakeup_slice_us = 0)")
    if not MIN_SLICE_US <= slice_us <= MAX_SLICE_US:
        raise ValueError(f"expected {MIN_SLICE_US}..{MAX_SLICE_US} us or 0, got {slice_us}")
    numbers = syscall_numbers(machine or platform.machine()) if sys.platform == "linux" else None
    if numbers is None:
        where = sys.platform if sys.platform != "linux" else machine or platform.machine()
        return SliceRequest(slice_us, None, f"no scheduler slice request on {where}")
    policy = os.sched_getscheduler(0)
    if policy != _SCHED_OTHER:  # systemd's CPUSchedulingPolicy, chrt: the operator's choice
        name = _POLICIES.get(policy, f"policy {policy}")
        return SliceRequest(slice_us, None, f"the thread runs under {name}: left as it is")
    set_nr, get_nr = numbers
    libc = ctypes.CDLL(None, use_errno=True)
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # kept: lowering it would need a privilege
    attr = ctypes.create_string_buffer(
        _SCHED_ATTR.pack(_SCHED_ATTR.size, _SCHED_OTHER, 0, nice, 0, slice_us * 1000, 0, 0, 0, 0)
    )
    # syscall(2) takes longs: ctypes would pass a Python int as a C int
    this_thread, no_flags = ctypes.c_long(0), ctypes.c_long(0)
    if libc.syscall(ctypes.c_long(set_nr), this_thread, attr, no_flags) != 0:
        code = ctypes.get_errno()
        return SliceRequest(
            slice_us, None, f"sched_setattr refused: {errno.errorcode.get(code, code)}"
        )
    held = ctypes.create_string_buffer(_SCHED_ATTR.size)
    size = ctypes.c_long(_SCHED_ATTR.size)
    if libc.syscall(ctypes.c_long(get_nr), this_thread, held, size, no_flags) != 0:
        code = ctypes.get_errno()
        return SliceRequest(
            slice_us, None, f"sched_getattr refused: {errno.errorcode.get(code, code)}"
        )
    return _outcome(slice_us, _SCHED_ATTR.unpack(held.raw)[5])


def _outcome(slice_us: int, held_ns: int) -> SliceRequest:
    """What a read-back ``sched_runtime`` of ``held_ns`` says of a request for ``slice_us``:
    a kernel before 6.12 reports 0 for the normal policy, having ignored the request."""
    if held_ns == slice_us * 1000:
        return SliceRequest(slice_us, held_ns, f"scheduler slice {slice_us} us")
    if held_ns == 0:
        return SliceRequest(
            slice_us, None, "this kernel has no slice requests (Linux 6.12 and later have)"
        )
    return SliceRequest(
        slice_us, None, f"asked for a {slice_us} us slice, the kernel holds {held_ns} ns"
    )
