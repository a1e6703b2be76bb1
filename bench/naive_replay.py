#!/usr/bin/env python3
"""The simplest program that does ``gizmo-host replay --offline``'s job, as a whole-process
baseline: read a capture's serial chunks with the ``mcap`` library, parse them byte at a time
(``NaiveParser``), print one compact JSON line a frame.

Usage: ``naive_replay.py CAPTURE.mcap``. The standard library and ``mcap`` only, on purpose:
a baseline shares nothing with the code it measures (its frame layout is written out here, from
the protocol's table, not imported), and it pays no start-up of the project's. Its stdout is
block-buffered whatever ``PYTHONUNBUFFERED`` says, as the replay's own output is.
"""

from __future__ import annotations

import binascii
import json
import struct
import sys
from collections.abc import Callable
from typing import Any

# VISION_RESULT v1 after the sync bytes and before the CRC, in wire order (docs/protocol.md)
NAMES = (
    "version", "msg_type", "header_flags", "sequence", "payload_len", "source_id",
    "result_type", "result_sequence", "timestamp_ms", "confidence", "flags", "age_ms",
    "x", "y", "w", "h", "id", "aux",
)  # fmt: skip
BODY = struct.Struct("<BBBHHBBHIBBHhhhhhh")
UART_TOPIC = "/gizmo/uart"


class NaiveParser:
    """Byte-at-a-time state machine: the usual first implementation, kept as the baseline.
    ``make`` builds a result from the frame's values (a plain tuple here)."""

    def __init__(self, make: Callable[[tuple[Any, ...]], Any] = tuple) -> None:
        self.state = 0
        self.frame = bytearray()
        self.make = make

    def feed(self, data: bytes) -> list[Any]:
        out = []
        for byte in data:
            if self.state == 0:
                if byte == 0xA5:
                    self.frame = bytearray((byte,))
                    self.state = 1
            elif self.state == 1:
                if byte == 0x47:
                    self.frame.append(byte)
                    self.state = 2
                else:
                    self.state = 1 if byte == 0xA5 else 0
                    self.frame = bytearray((byte,))
            else:
                self.frame.append(byte)
                if len(self.frame) == 35:
                    self.state = 0
                    frame = bytes(self.frame)
                    if (
                        frame[2] == 1
                        and frame[3] == 0x60
                        and frame[7] == 24
                        and frame[8] == 0
                        and binascii.crc_hqx(frame[2:33], 0xFFFF) == frame[33] | frame[34] << 8
                    ):
                        out.append(self.make(BODY.unpack_from(frame, 2)))
        return out


def main(path: str) -> int:
    from mcap.reader import make_reader

    parser = NaiveParser()
    with open(path, "rb") as stream, open(sys.stdout.fileno(), "w", closefd=False) as out:
        for _, _, message in make_reader(stream).iter_messages(topics=[UART_TOPIC]):
            for values in parser.feed(message.data):
                line = json.dumps(dict(zip(NAMES, values, strict=True)), separators=(",", ":"))
                out.write(line + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: naive_replay.py CAPTURE.mcap", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
