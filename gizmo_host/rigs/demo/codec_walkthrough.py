"""``gizmo-host demo --protocol``: the protocol core at work with no hardware attached.

It decodes the spec's example frame, then builds a noisy byte stream the way a real UART line
looks on a bad day (garbage, false ``A5 47`` starts, corrupted frames, ragged read sizes) and
shows that the stream parser recovers every intact frame and accounts for every other byte.
"""

from __future__ import annotations

import random

from gizmo_host.jsonl import json_text
from gizmo_host.wire.batch import decode_capture, to_results
from gizmo_host.wire.parser import StreamParser
from gizmo_host.wire.protocol import SYNC, VisionResult
from gizmo_host.wire.results import BlobColor, DetectorId, ResultType

SPEC_EXAMPLE_HEX = (
    "A5 47 01 60 00 2A 00 18 00 01 01 2A 00 E8 03 00 00 57 05 0C 00 83 FF 36 00 9A 01 68 01 01 "
    "00 00 00 9C D9"
)


DEFAULT_FRAMES = 40
DEFAULT_SEED = 7


def synthetic_results(count: int, rng: random.Random) -> list[VisionResult]:
    """A plausible 30 Hz sequence: a red blob drifting right, a face, a lost frame now and then."""
    results = []
    for n in range(count):
        lost = rng.random() < 0.1
        kind = n % 3
        result_type, ident = (
            (ResultType.COLOR_BLOB, BlobColor.RED),
            (ResultType.DETECTOR, DetectorId.FACE),
            (ResultType.LINE, 0),
        )[kind]
        results.append(
            VisionResult(
                sequence=(65530 + n) & 0xFFFF,
                result_sequence=(65530 + n) & 0xFFFF,
                result_type=result_type,
                id=ident,
                timestamp_ms=1000 + 33 * n,
                confidence=0 if lost else rng.randint(60, 99),
                flags=0x06 if lost else 0x05,
                age_ms=rng.randint(8, 20),
                x=-600 + 30 * n,
                y=rng.randint(-50, 50) if kind != 2 else 500,
                w=rng.randint(200, 400),
                h=(h := rng.randint(200, 400)),
                aux=h if result_type == ResultType.LINE else 0,
            )
        )
    return results


def noisy_stream(results: list[VisionResult], rng: random.Random) -> tuple[bytes, set[int]]:
    """Frames with garbage between them; returns the stream and the indices left intact."""
    out, intact = bytearray(), set()
    for index, result in enumerate(results):
        roll = rng.random()
        if roll < 0.15:
            out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
        elif roll < 0.25:
            out += SYNC + bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        frame = bytearray(result.encode())
        if rng.random() < 0.1:
            frame[rng.randrange(2, len(frame))] ^= 1 << rng.randrange(8)
        else:
            intact.add(index)
        out += frame
    return bytes(out), intact


def run(frames: int = DEFAULT_FRAMES, seed: int = DEFAULT_SEED, json_lines: bool = False) -> int:
    """Decode the spec's example, then a noisy stream of ``frames`` frames; 0 when every
    intact frame came back and nothing else did."""
    rng = random.Random(seed)
    example = VisionResult.decode(bytes.fromhex(SPEC_EXAMPLE_HEX))
    emit = (lambda obj: print(json_text(obj))) if json_lines else None
    if emit:
        emit({"type": "result", **example.to_dict()})
    else:
        print("spec example frame:", SPEC_EXAMPLE_HEX)
        print(
            f"  tracked={str(example.tracked).lower()} lost={str(example.lost).lower()} "
            f"id={example.id} -> {example.interpretation}"
        )

    sent = synthetic_results(frames, rng)
    stream, intact = noisy_stream(sent, rng)
    parser = StreamParser()
    received: list[VisionResult] = []
    offset = 0
    while offset < len(stream):  # ragged reads, as a serial port delivers them
        size = rng.randint(1, 64)
        received += parser.feed(stream[offset : offset + size])
        offset += size
    expected = [sent[i] for i in sorted(intact)]
    batch = to_results(decode_capture(stream))
    stats = parser.stats
    if emit:
        for result in received:
            emit({"type": "result", **result.to_dict()})
        emit({"type": "stats", **stats._asdict(), "bytes_pending": parser.buffered})
    else:
        print(
            f"\nnoisy stream: {len(stream)} bytes, {len(sent)} frames sent, "
            f"{len(sent) - len(intact)} corrupted on purpose"
        )
        for result in received:
            flag = "lost" if result.lost else "tracked" if result.tracked else "-"
            print(
                f"  seq={result.sequence:5d} t={result.timestamp_ms:6d} ms {flag:7s} "
                f"{result.interpretation}"
            )
        print(f"\nparser stats: {dict(stats._asdict())}, pending={parser.buffered}")
    ok = received == expected and batch == received
    if not emit:
        print(
            "every intact frame recovered, nothing else emitted, batch decoder agrees:",
            "yes" if ok else "NO",
        )
    return 0 if ok else 1
