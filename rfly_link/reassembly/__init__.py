"""Sans-I/O reassembly of RflySim vision-sensor UDP fragments into sensor frames.

:mod:`~rfly_link.reassembly.fragments` reads and writes the fragment headers,
:mod:`~rfly_link.reassembly.frame` assembles one frame, and
:mod:`~rfly_link.reassembly.reassembler` keeps every frame in flight within its bounds.
Everything is re-exported here.
"""

from __future__ import annotations

from rfly_link.reassembly.fragments import (
    FRAGMENT_SIZE,
    FragmentHeader,
    fragment_payload,
    read_header,
)
from rfly_link.reassembly.frame import PartialFrame, SensorFrame
from rfly_link.reassembly.reassembler import Reassembler, ReassemblerStats

__all__ = [
    "FRAGMENT_SIZE",
    "FragmentHeader",
    "PartialFrame",
    "Reassembler",
    "ReassemblerStats",
    "SensorFrame",
    "fragment_payload",
    "read_header",
]
