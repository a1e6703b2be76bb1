"""Recycling of large frame buffers once nobody references them any more.

A 1.6 MB LiDAR frame needs a 1.6 MB assembly buffer and a 3.2 MB float32 array. Fresh
allocations of that size come from new pages that the kernel must fault in and zero, and that
are cold in the cache; on the target machine this halved the receive rate. The pools below hand
out a previous buffer again when its reference count shows that the consumer has dropped every
view of it (CPython reference counting makes this exact), and otherwise allocate a new one.
They are bounded: at most ``slots`` buffers are remembered; others are left to the consumer.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

# References held while a pooled object is being checked: the pool's list and getrefcount's
# argument.
_FREE_REFCOUNT = 2


class BytearrayPool:
    """Reusable ``bytearray`` buffers of at least the requested size."""

    def __init__(self, slots: int = 4) -> None:
        self._slots = slots
        self._items: list[bytearray] = []
        self.reused = 0
        self.allocated = 0

    def take(self, size: int) -> bytearray:
        items = self._items
        for i in range(len(items)):
            if len(items[i]) >= size and sys.getrefcount(items[i]) == _FREE_REFCOUNT:
                self.reused += 1
                return items[i]
        buffer = bytearray(size)
        self.allocated += 1
        if len(items) >= self._slots:
            items.pop(0)  # forget the oldest; its consumer keeps it alive as long as needed
        items.append(buffer)
        return buffer


class ArrayPool:
    """Reusable numpy arrays: the first ``shape[0]`` rows of a free array that is big enough.

    Point counts vary from frame to frame (non-repetitive LiDARs), so an array is reused for
    any request with the same dtype and row shape and no more rows than it has.
    """

    def __init__(self, slots: int = 4) -> None:
        self._slots = slots
        self._items: list[np.ndarray] = []
        self.reused = 0
        self.allocated = 0

    def take(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
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
