"""Every RflySim wire layout as a field table, compiled once into a little-endian ``struct.Struct``.

One module per part of the simulator; each layout cites its source by a short name, which
docs/protocol-decisions.md ("Sources and their short names") expands: ``VSP``, ``V411``,
``BRIDGE``, ``UE4`` and ``CFG`` are RflySim's documents (with their own section numbers),
``DEC`` is that page's decision where they disagree, ``SDK`` the public RflySim Python SDK.

:mod:`~rfly_link.wire.vision` (fragments, sensor payloads, sensor requests),
:mod:`~rfly_link.wire.coptersim` (state, control, replies, discovery, time),
:mod:`~rfly_link.wire.px4` (the 20100 and 40100 series), :mod:`~rfly_link.wire.dll` (DLL model
inputs and outputs), :mod:`~rfly_link.wire.rflysim3d` (RflySim3D send and receive);
:mod:`~rfly_link.wire.checksums` names every marker. Everything is re-exported here.
"""

from __future__ import annotations

from rfly_link.wire import checksums
from rfly_link.wire.coptersim import *  # noqa: F403
from rfly_link.wire.dll import *  # noqa: F403
from rfly_link.wire.layout import Field, Layout
from rfly_link.wire.px4 import *  # noqa: F403
from rfly_link.wire.rflysim3d import *  # noqa: F403
from rfly_link.wire.vision import *  # noqa: F403

__all__ = ["Field", "Layout", "checksums"]
