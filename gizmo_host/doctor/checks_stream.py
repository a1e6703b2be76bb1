"""The doctor's checks of what the port carries: bytes, frames and errors, the baud rate, and
the board behind it (sequence, device clock, latency). Pure: facts in."""

from __future__ import annotations

import math

from gizmo_host.doctor.facts import Facts, StreamFacts
from gizmo_host.doctor.verdict import Check, Status, percentile
from gizmo_host.doctor.verdict import ok as _ok

MIN_FRAME_RATE_HZ = 5.0  # the board sends a frame per recognition cycle (30 Hz), found or not
DISCARDED_WARN = 0.01
DISCARDED_FAIL = 0.2
LOST_WARN = 0.02
SKEW_WARN_PPM = 200.0
LATENCY_WARN_MS = 100.0  # the board's processing age, p95


# -- the stream and the board ----------------------------------------------------------------


def _rate(s: StreamFacts) -> float:
    return s.frames_ok / s.seconds if s.seconds > 0 else 0.0


def stream_checks(facts: Facts) -> list[Check]:
    s = facts.stream
    if s.skipped is not None:
        return [Check("stream", Status.SKIP, f"not read: {s.skipped}")]
    counts = f"{s.bytes_in} bytes, {s.frames_ok} frames in {s.seconds:.1f} s at {s.baudrate} baud"
    if s.bytes_in == 0:
        return [
            Check(
                "stream",
                Status.FAIL,
                f"no byte in {s.seconds:.1f} s",
                "the board sends nothing: check its power, the TX->RX wire and the ground, and "
                "that the board's firmware runs",
            )
        ]
    out: list[Check] = []
    if s.frames_ok == 0:
        decoding = [rate for rate, frames in sorted(s.rates_tried.items()) if frames > 0]
        if decoding:
            out.append(
                Check(
                    "baud rate",
                    Status.FAIL,
                    f"{counts}: bytes but no valid frame; at {decoding[0]} baud "
                    f"{s.rates_tried[decoding[0]]} frames decode",
                    f"set [serial] baudrate = {decoding[0]} (or the board's rate to {s.baudrate})",
                )
            )
        else:
            tried = ", ".join(str(r) for r in sorted(s.rates_tried)) or "none"
            out.append(
                Check(
                    "stream",
                    Status.FAIL,
                    f"{counts}: bytes but no valid frame at any rate tried ({tried})",
                    "not a Gizmo board's VISION_RESULT stream: check the wiring (TX to RX), "
                    "the port, and the board's protocol version",
                )
            )
        return out
    rate = _rate(s)
    if rate < MIN_FRAME_RATE_HZ:
        out.append(
            Check(
                "stream",
                Status.WARN,
                f"{counts}: {rate:.1f} frames/s",
                f"the board should send >= {MIN_FRAME_RATE_HZ:.0f}/s; check its load and "
                "its recognition rate",
            )
        )
    else:
        out.append(_ok("stream", f"{counts}: {rate:.1f} frames/s"))
    ratio = s.bytes_discarded / s.bytes_in
    errors = (
        f"{s.crc_errors} CRC errors, {s.header_errors} header errors, "
        f"{100 * ratio:.2f}% of bytes discarded"
    )
    if ratio > DISCARDED_FAIL:
        out.append(
            Check(
                "stream errors",
                Status.FAIL,
                errors,
                "a noisy line: shorter or shielded cable, common ground, lower baud rate",
            )
        )
    elif ratio > DISCARDED_WARN or s.crc_errors:
        out.append(Check("stream errors", Status.WARN, errors, "check the cable and the ground"))
    else:
        out.append(_ok("stream errors", errors))
    return out


def board_checks(facts: Facts) -> list[Check]:
    s = facts.stream
    if s.skipped is not None or s.frames_ok == 0:
        return [Check("board", Status.SKIP, "no frame to judge it by")]
    out: list[Check] = []
    lost_ratio = s.lost / (s.frames_ok + s.lost)
    seq = f"{s.lost} frames lost in sequence gaps ({100 * lost_ratio:.1f}%), {s.resets} resets"
    if s.resets:
        out.append(
            Check(
                "board sequence",
                Status.WARN,
                seq,
                "the board restarted while read: check its power supply (brown-outs)",
            )
        )
    elif lost_ratio > LOST_WARN:
        out.append(Check("board sequence", Status.WARN, seq, "check the line (see stream errors)"))
    else:
        out.append(_ok("board sequence", seq))
    skew = "-" if s.skew_ppm is None or not math.isfinite(s.skew_ppm) else f"{s.skew_ppm:+.0f}"
    clock = f"device clock {s.clock_status or 'unknown'}, skew {skew} ppm"
    if s.clock_status != "locked":
        out.append(
            Check(
                "board clock",
                Status.WARN,
                clock,
                "not locked within the sample: read longer (--seconds 10); a board whose "
                "timestamp_ms does not advance with its frames never locks",
            )
        )
    elif s.skew_ppm is not None and abs(s.skew_ppm) > SKEW_WARN_PPM:
        out.append(Check("board clock", Status.WARN, clock, "the board's oscillator is off"))
    else:
        out.append(_ok("board clock", clock))
    p50, p95 = percentile(s.latency_ms, 0.5), percentile(s.latency_ms, 0.95)
    if p50 is not None and p95 is not None:
        most = max(s.latency_ms)
        text = f"board latency (age_ms) p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {most:.0f}"
        if p95 > LATENCY_WARN_MS:
            out.append(
                Check("board latency", Status.WARN, text, "the board is overloaded or throttled")
            )
        else:
            out.append(_ok("board latency", text))
    return out
