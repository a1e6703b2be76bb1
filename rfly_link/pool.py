"""Recycling of large frame buffers once nobody references them any more.

A 1.6 MB LiDAR frame needs a 1.6 MB assembly buffer and a 3.2 MB float32 array. Fresh
allocations of that size come from new pages that the kernel must fault in and zero, and that
are cold in the cache; on the target machine this halved the receive rate. The pools below hand
out a previous buffer again when its reference count shows that the consumer has dropped every
view of it (CPython reference counting makes this exact), and otherwise allocate a new one.
They are bounded: at most ``slots`` buffers are remembered; others are left to the consumer.

Frame buffers are anonymous private mappings rather than ``bytearray``: pages are faulted in
only where data lands (a fragment claiming a 32 MiB frame costs one fragment of memory, not a
32 MiB memset), and a freed buffer goes straight back to the kernel, where malloc's arenas kept
freed multi-megabyte blocks resident (a 64 MiB budget measured 200-330 MB of RSS under a flood).
"""

from __future__ import annotations

import mmap
import sys
from typing import Any

import numpy as np
import numpy.typing as npt

# References held while a pooled object is being checked: the pool's list and getrefcount's
# argument.
_FREE_REFCOUNT = 2


class BufferPool:
    """Reusable frame buffers of at least the requested size, within a byte budget.

    Call from one thread (the reader's): reference counts are read without a lock.
    """

    def __init__(self, slots: int = 4) -> None:
        self._slots = slots
        self._items: list[mmap.mmap] = []
        self.reused = 0
        self.allocated = 0

    def take(self, size: int, *, budget: int | None = None) -> mmap.mmap:
        """A free buffer of ``size`` to ``budget`` bytes, else a new one of ``size`` bytes.

        Idle buffers are then forgotten, oldest first, until they and the one returned total at
        most ``budget`` bytes (a forgotten buffer is freed at once: nobody references it).
        """
        limit = sys.maxsize if budget is None else max(size, budget)
        items = self._items
        chosen: mmap.mmap | None = None
        for i in range(len(items)):
            if size <= len(items[i]) <= limit and sys.getrefcount(items[i]) == _FREE_REFCOUNT:
                chosen = items[i]
                self.reused += 1
                break
        if budget is not None:  # before allocating, so memory never exceeds the budget
            self._shed(budget - (size if chosen is None else len(chosen)), keep=chosen)
        if chosen is None:
            chosen = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
            self.allocated += 1
            if len(items) >= self._slots:
                items.pop(0)  # forget the oldest; its consumer keeps it alive as long as needed
            items.append(chosen)
        return chosen

    def idle_bytes(self) -> int:
        """Bytes of remembered buffers that nobody else references."""
        items = self._items
        return sum(
            len(items[i]) for i in range(len(items)) if sys.getrefcount(items[i]) == _FREE_REFCOUNT
        )

    def _shed(self, allowed: int, *, keep: mmap.mmap | None) -> None:
        items = self._items
        idle = [
            i
            for i in range(len(items))
            if items[i] is not keep and sys.getrefcount(items[i]) == _FREE_REFCOUNT
        ]
        excess = sum(len(items[i]) for i in idle) - allowed
        drop: list[int] = []
        for i in idle:  # oldest first
            if excess <= 0:
                break
            drop.append(i)
            excess -= len(items[i])
        for i in reversed(drop):
            del items[i]


class ArrayPool:
    """Reusable numpy arrays: the first ``shape[0]`` rows of a free array that is big enough.

    Point counts vary from frame to frame (non-repetitive LiDARs), so an array is reused for
    any request with the same dtype and row shape and no more rows than it has.
    """

    def __init__(self, slots: int = 4) -> None:
        self._slots = slots
        self._items: list[npt.NDArray[Any]] = []
        self.reused = 0
        self.allocated = 0

    def take(self, shape: tuple[int, ...], dtype: Any) -> npt.NDArray[Any]:
        items = self._items
        wanted = np.dtype(dtype)
        rows, rest = shape[0], tuple(shape[1:])
        for i in range(len(items)):
            a = items[i]
            fits = a.dtype == wanted and a.shape[1:] == rest and a.shape[0] >= rows
            del a
            if fits and sys.getrefcount(items[i]) == _FREE_REFCOUNT:
                self.reused += 1
                return items[i][:rows]
        array = np.empty(shape, dtype=wanted)
        self.allocated += 1
        if len(items) >= self._slots:
            items.pop(0)
        items.append(array)
        return array
