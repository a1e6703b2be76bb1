"""``gizmo-decode``: decode VISION_RESULT v1 frames from hex text or a raw capture to JSON.

    gizmo-decode "A5 47 01 60 ..."        one frame -> one JSON document
    ... | gizmo-decode                    one hex frame per stdin line -> JSON Lines
    gizmo-decode --binary capture.bin     raw bytes -> JSON Lines, counters on stderr

Bad input exits 1 with one line per bad frame on stderr that names the fault; it is a debugging
tool, not a live port listener (that is ``gizmo-host run``).
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO, TextIO

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE, file_to_read
from gizmo_host.cli.flags import OneLineParser
from gizmo_host.errors import CrcMismatch, FrameError, HexError
from gizmo_host.jsonl import json_text
from gizmo_host.wire.parser import StreamParser
from gizmo_host.wire.protocol import BODY, CRC, CRC_END, CRC_START, VisionResult, crc16

_HEX_DIGITS = frozenset(string.hexdigits)
_READ_CHUNK = 1 << 16
_MAX_LINE_CHARS = 1024  # a frame is 70 hex digits: with spaces and a comment, far under


def parse_hex(text: str) -> bytes:
    """Hex digits in either case, whitespace anywhere, nothing else."""
    digits = "".join(text.split())
    for index, char in enumerate(digits):
        if char not in _HEX_DIGITS:
            raise HexError(f"invalid hex: {char!r} at digit {index} is not a hex digit")
    if len(digits) % 2:
        raise HexError(f"invalid hex: odd number of hex digits ({len(digits)})")
    return bytes.fromhex(digits)


def frame_report(frame: bytes, *, allow_bad_crc: bool = False) -> dict[str, Any]:
    """JSON-ready description of one frame; raises FrameError unless it is valid."""
    try:
        result = VisionResult.decode(frame)
    except CrcMismatch:
        if not allow_bad_crc:
            raise
        result = VisionResult._make(BODY.unpack_from(frame, CRC_START))
    return _with_crc(result, frame)


def _with_crc(result: VisionResult, frame: bytes) -> dict[str, Any]:
    computed = crc16(frame[CRC_START:CRC_END])
    (received,) = CRC.unpack_from(frame, CRC_END)
    out = {"type": "result", **result.to_dict()}
    out["crc"] = {
        "received": f"0x{received:04x}",
        "computed": f"0x{computed:04x}",
        "ok": computed == received,
    }
    return out


def _lines(stream: TextIO) -> Iterator[str | None]:
    """``stream``'s lines, ``None`` for one longer than ``_MAX_LINE_CHARS`` (its rest read and
    dropped): one with no end held the whole input in memory (rt59: ``< /dev/zero``)."""
    while line := stream.readline(_MAX_LINE_CHARS + 1):
        if len(line) > _MAX_LINE_CHARS and not line.endswith("\n"):
            while (rest := stream.readline(_MAX_LINE_CHARS)) and not rest.endswith("\n"):
                pass
            yield None
        else:
            yield line


def _decode_lines(
    lines: Iterable[str | None], out: TextIO, err: TextIO, allow_bad_crc: bool
) -> int:
    failures = 0
    for number, line in enumerate(lines, start=1):
        if line is None:
            failures += 1
            print(f"line {number}: expected at most {_MAX_LINE_CHARS} characters", file=err)
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            report = frame_report(parse_hex(line), allow_bad_crc=allow_bad_crc)
        except (HexError, FrameError) as exc:
            failures += 1
            print(f"line {number}: {exc}", file=err)
            continue
        print(json_text(report), file=out)
    return 1 if failures else 0


def _decode_binary(stream: BinaryIO, out: TextIO, err: TextIO) -> int:
    parser = StreamParser()
    while chunk := stream.read(_READ_CHUNK):
        for result in parser.feed(chunk):
            print(json_text({"type": "result", **result.to_dict()}), file=out)
    stats = parser.stats._asdict()
    stats["bytes_pending"] = parser.buffered
    print(json_text({"type": "stats", **stats}), file=err)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="gizmo-decode",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2],
    )
    parser.add_argument("hex", nargs="*", help="one frame as hex (spaces optional, any case)")
    parser.add_argument("--binary", metavar="FILE", help="decode a raw byte capture ('-' = stdin)")
    parser.add_argument(
        "--allow-bad-crc",
        action="store_true",
        help="print frames whose CRC is wrong (crc.ok=false) instead of failing",
    )
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    stdin = stdin or sys.stdin
    out, err = stdout or sys.stdout, stderr or sys.stderr
    args = build_parser().parse_args(argv)
    if args.binary is not None:
        if args.hex:
            print("error: give either hex text or --binary, not both", file=err)
            return EXIT_USAGE
        if args.binary == "-":
            return _decode_binary(stdin.buffer, out, err)
        try:
            file_to_read("--binary", args.binary)  # a FIFO or a device would block (rt59)
            with open(args.binary, "rb") as capture:
                return _decode_binary(capture, out, err)
        except ConfigError as exc:
            print(f"error: {exc}", file=err)
            return EXIT_USAGE
        except OSError as exc:
            print(f"error: cannot read {args.binary}: {exc.strerror or exc}", file=err)
            return EXIT_USAGE
    if not args.hex:
        return _decode_lines(_lines(stdin), out, err, args.allow_bad_crc)
    try:
        report = frame_report(parse_hex(" ".join(args.hex)), allow_bad_crc=args.allow_bad_crc)
    except (HexError, FrameError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    print(json.dumps(report, indent=2), file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
