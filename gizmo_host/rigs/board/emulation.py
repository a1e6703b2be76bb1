"""One emulated board, cycle by cycle, sans-I/O: detections in, bytes to send out, faults counted.

``Emulation.cycle(index, detections, connected=...)`` runs recognition cycle ``index`` (captured
at ``start_ns + index * period``): it applies the board faults due by then (wrap, reset, clock
skew and jumps, line delay, silence, hang-up), asks the output policy for the cycle's frames,
numbers and stamps them on the board (``timestamp_ms`` = the device clock when the frame
leaves, capture + latency or later behind a slower frame; ``age_ms`` = from the image's instant
to then: the capture, or a detection's older ``seen_ns``) and passes each through the fault
injector. The I/O shell sleeps until ``send_ns`` (``emit_ns``, later by a line delay), writes
the chunks at the line rate and performs a hang-up when one is due.

``host`` in :meth:`stats` is what a receiver that read every byte written should count, in the
host's own counter names: frames that left intact (``frames_ok``), bytes that were not part of
one (``bytes_discarded``), and from the sequence numbers of the valid frames the protocol rule
(docs/protocol-decisions.md, Gizmo UART) gives the ``lost``, ``duplicates``,
``discontinuities`` and ``resets`` (a device restart seen after a valid frame; a device clock
step while the frames keep their order is no reset: the host's clock confirms it as a step).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, NamedTuple

from gizmo_host.rigs.board.board import BoardModel
from gizmo_host.rigs.board.detections import LatencyModel, OutputPolicy, TargetInView
from gizmo_host.rigs.board.faults import Fault, FaultKind, FaultTimeline
from gizmo_host.rigs.board.injector import FaultInjector
from gizmo_host.stream.tracker import (
    ADVANCE_TOLERANCE_MS,
    DEFAULT_REORDER_WINDOW,
    SEQUENCE_MODULUS,
    device_clock_advance_ms,
    implausible_gap,
    is_clock_step,
    is_device_reset,
)
from gizmo_host.wire.protocol import FRAME_LEN, VisionResult

_BOARD_EVENTS = (
    FaultKind.WRAP,
    FaultKind.RESET,
    FaultKind.SILENCE,
    FaultKind.HANGUP,
    FaultKind.CLOCK_SKEW,
    FaultKind.CLOCK_JUMP,
    FaultKind.DELAY,
)


def _age_ms(emit_ns: int, seen_ns: int) -> int:
    """``age_ms`` of a frame sent at ``emit_ns`` whose image was taken at ``seen_ns``."""
    return min(max(round((emit_ns - min(seen_ns, emit_ns)) / 1e6), 0), 65535)


class Cycle(NamedTuple):
    """One recognition cycle's output."""

    capture_ns: int
    emit_ns: int  # capture + latency: when the board reads its clock and sends
    chunks: tuple[bytes, ...]  # to write in order, each paced at the line rate
    results: tuple[VisionResult, ...]  # the frames produced (sent or not, damaged or not)
    hangup: Fault | None  # a hang-up starts after these chunks: close the port for duration_s
    send_ns: int  # when the line delivers them: emit_ns, later by a line delay (in order)


class Emulation:
    """The board, its output policy and its faults, on host times passed in."""

    def __init__(
        self,
        *,
        board: BoardModel,
        policy: OutputPolicy,
        latency: LatencyModel,
        timeline: FaultTimeline,
        start_ns: int,
        rate_hz: float = 30.0,
    ) -> None:
        if not board.live_clock:
            raise ValueError("board: expected a live_clock BoardModel (host times drive it)")
        self.board = board
        self.policy = policy
        self.latency = latency
        self.timeline = timeline
        self.start_ns = start_ns
        self.period_ns = round(1e9 / rate_hz)
        self.injector = FaultInjector(timeline)
        self._latency_rng = random.Random(f"{timeline.seed}:latency")
        self._events = [f for f in timeline.faults if f.kind in _BOARD_EVENTS]
        self._next_event = 0
        self._quiet_until_ns = start_ns  # silence, a reset's boot, an unpowered hang-up
        self._restart_at_ns: int | None = None  # a powered-down hang-up restarts the board
        self._last_emit_ns = start_ns
        self._last_produced: int | None = None
        self.cycles = self.produced = self.detected = self.not_detected = 0
        self.frames_written = self.frames_unsent = self.bytes_written = 0
        self.wrap_events = self.wraps = self.reset_events = self.quiet_cycles = 0
        self.silence_events = self.hangups = self.hangup_unsent = 0
        self.host_disconnects = 0  # hang-ups a reader had the port open for (the runner says)
        self.silence_s = 0.0
        self.skew_events = self.jump_events = self.jumps_forward = self.jumps_backward = 0
        self.jumps_large = 0  # beyond the tracker's 1 s tolerance
        self.delay_events = 0
        self._delay_ns = 0  # the line's added delay now
        self._delay_until_ns: int | None = None
        self._last_send_ns = start_ns
        # The host's view, from the valid frames written.
        self._last_valid: int | None = None  # the sequence, device time, send time of the last
        self._last_valid_ms = self._last_valid_ns = 0  # valid frame
        self._restart_seen = False  # a restart since the last valid frame
        self._hung_up = False
        self.host_frames_ok = self.host_bytes_discarded = self.host_lost = 0
        self.host_duplicates = self.host_resets = self.host_discontinuities = 0

    def capture_ns(self, index: int) -> int:
        return self.start_ns + index * self.period_ns

    def elapsed_s(self, now_ns: int) -> float:
        return (now_ns - self.start_ns) / 1e9

    def cycle(
        self, index: int, detections: Sequence[TargetInView], *, connected: bool = True
    ) -> Cycle:
        capture_ns = self.capture_ns(index)
        self.cycles += 1
        hangup = self._board_events(capture_ns)
        if self._restart_at_ns is not None and capture_ns >= self._restart_at_ns:
            self._restart(self._restart_at_ns)
            self._restart_at_ns = None
        if capture_ns < self._quiet_until_ns:
            self.quiet_cycles += 1
            return Cycle(capture_ns, capture_ns, (), (), hangup, capture_ns)
        latency_ms = self.latency.draw(self._latency_rng)
        # The recognition starts with the image: the capture, or a source's newer one (a late
        # cycle). Frames leave in order: a long latency delays the next cycle's frames too.
        image_ns = max([capture_ns, *(d.seen_ns for d in detections if d.seen_ns is not None)])
        emit_ns = max(image_ns + latency_ms * 1_000_000, self._last_emit_ns)
        self._last_emit_ns = emit_ns
        if self._delay_until_ns is not None and capture_ns >= self._delay_until_ns:
            self._delay_ns, self._delay_until_ns = 0, None
        send_ns = self._last_send_ns = max(emit_ns + self._delay_ns, self._last_send_ns)
        t_s = self.elapsed_s(capture_ns)
        chunks: list[bytes] = []
        results = []
        for fields in self.policy.frames(detections):
            result = self.board.next_result(
                flags=fields.flags,
                now_ns=emit_ns,
                id=fields.id,
                confidence=fields.confidence,
                age_ms=_age_ms(emit_ns, capture_ns if fields.seen_ns is None else fields.seen_ns),
                x=fields.x,
                y=fields.y,
                w=fields.w,
                h=fields.h,
            )
            results.append(result)
            self._count_produced(result, detected=fields.target is not None)
            if not connected:
                self.frames_unsent += 1
                self.hangup_unsent += self._hung_up
                continue
            outcome = self.injector.apply(result.encode(), t_s)
            chunks.extend(outcome.chunks)
            written = sum(map(len, outcome.chunks))
            self.bytes_written += written
            self.frames_written += 1
            self.host_bytes_discarded += written - FRAME_LEN * outcome.valid_copies
            for _ in range(outcome.valid_copies):
                self._valid(result, send_ns)
        return Cycle(capture_ns, emit_ns, tuple(chunks), tuple(results), hangup, send_ns)

    def hung_up(self, *, observed: bool) -> None:
        """The runner closed the port for a hang-up; ``observed``: a reader had it open.

        The host counts a disconnect when its open connection ends, so only an observed
        hang-up is one it must count. Not observed: a hang-up while the port was still down
        from the previous one, or before the reader reopened it; and hang-ups due in one
        cycle close the port once."""
        self.host_disconnects += observed

    def reconnected(self) -> None:
        """The port is back after a hang-up (the runner calls this)."""
        self._hung_up = False

    # -- board faults ----------------------------------------------------------------------

    def _board_events(self, capture_ns: int) -> Fault | None:
        hangup = None
        while self._next_event < len(self._events):
            fault = self._events[self._next_event]
            at_ns = self.start_ns + round(fault.at_s * 1e9)
            if at_ns > capture_ns:
                break
            self._next_event += 1
            if fault.kind is FaultKind.HANGUP:
                hangup = fault
                self._hang_up(fault, at_ns)
            else:
                self._apply(fault, at_ns)
        return hangup

    def _apply(self, fault: Fault, at_ns: int) -> None:
        board = self.board
        if fault.kind is FaultKind.WRAP:
            self.wrap_events += 1
            board.sequence = fault.sequence
        elif fault.kind is FaultKind.RESET:
            self.reset_events += 1
            self._restart(at_ns)
            self._quiet_until_ns = max(self._quiet_until_ns, at_ns + round(fault.down_s * 1e9))
        elif fault.kind is FaultKind.SILENCE:
            self.silence_events += 1
            self.silence_s += fault.duration_s
            self._quiet_until_ns = max(self._quiet_until_ns, at_ns + round(fault.duration_s * 1e9))
        elif fault.kind is FaultKind.CLOCK_SKEW:
            self.skew_events += 1
            board.set_skew(fault.ppm, at_ns)
        elif fault.kind is FaultKind.CLOCK_JUMP:
            self.jump_events += 1
            if fault.delta_ms > 0:
                self.jumps_forward += 1
            else:
                self.jumps_backward += 1
            board.jump_clock(fault.delta_ms, at_ns)
            if abs(fault.delta_ms) > ADVANCE_TOLERANCE_MS:
                self.jumps_large += 1
        elif fault.kind is FaultKind.DELAY:
            self.delay_events += 1
            self._delay_ns = fault.delta_ms * 1_000_000
            self._delay_until_ns = (
                at_ns + round(fault.duration_s * 1e9) if fault.duration_s > 0 else None
            )

    def _hang_up(self, fault: Fault, at_ns: int) -> None:
        self.hangups += 1
        self._hung_up = True
        if fault.reset:  # the board loses power with the port: it boots when plugged back
            end_ns = at_ns + round(fault.duration_s * 1e9)
            self._quiet_until_ns = max(self._quiet_until_ns, end_ns)
            self._restart_at_ns = end_ns

    def _restart(self, at_ns: int) -> None:
        self.board.reset(boot_ms=0, now_ns=at_ns)
        self._restart_seen = self._restart_seen or self._last_valid is not None

    # -- accounting ------------------------------------------------------------------------

    def _count_produced(self, result: VisionResult, *, detected: bool) -> None:
        self.produced += 1
        if detected:
            self.detected += 1
        else:
            self.not_detected += 1
        if self._last_produced == SEQUENCE_MODULUS - 1 and result.sequence == 0:
            self.wraps += 1
        self._last_produced = result.sequence

    def _valid(self, result: VisionResult, sent_ns: int) -> None:
        """A valid frame went out: what the host's sequence tracking makes of it."""
        self.host_frames_ok += 1
        last, last_ms, last_ns = self._last_valid, self._last_valid_ms, self._last_valid_ns
        sequence = result.sequence
        self._last_valid, self._last_valid_ms, self._last_valid_ns = (
            sequence,
            result.timestamp_ms,
            sent_ns,
        )
        if last is None:
            return
        step = (sequence - last) % SEQUENCE_MODULUS
        restarted, self._restart_seen = self._restart_seen, False
        # The protocol rule on the send times. The same number again: the very frame (a
        # duplicate), or at an earlier device time a reset, at a later one a discontinuity (a
        # wrap onto the last one). Otherwise a restart shows when the device clock fell back
        # (hidden behind enough destroyed frames, the clock seems to advance and only the
        # sequence shows); a device clock step (or a jump beyond what the time between two
        # valid frames allows) is no reset while the frames keep their order.
        advance = device_clock_advance_ms(last_ms, result.timestamp_ms, sent_ns - last_ns)
        if step == 0:
            if result.timestamp_ms == last_ms and not restarted:
                self.host_duplicates += 1
            elif advance is None or advance < 0 or (advance == 0 and not restarted):
                self.host_resets += 1
            else:
                self.host_discontinuities += 1
            return
        stepped = is_clock_step(step, last_ms, result.timestamp_ms)
        if is_device_reset(step, advance, DEFAULT_REORDER_WINDOW, clock_step=stepped):
            self.host_resets += 1
        elif step < SEQUENCE_MODULUS // 2 and not implausible_gap(step, advance):
            self.host_lost += step - 1
        else:
            self.host_discontinuities += 1

    def stats(self) -> dict[str, Any]:
        """Every count, JSON-ready (``--stats``)."""
        return {
            "seed": self.timeline.seed,
            "cycles": self.cycles,
            "frames": {
                "produced": self.produced,
                "detected": self.detected,
                "not_detected": self.not_detected,
                "written": self.frames_written,
                "unsent": self.frames_unsent,
            },
            "bytes_written": self.bytes_written,
            "faults": {
                **self.injector.stats(),
                "wrap": {"events": self.wrap_events, "wraps": self.wraps},
                "reset": {"events": self.reset_events},
                "silence": {"events": self.silence_events, "seconds": round(self.silence_s, 6)},
                "quiet_cycles": self.quiet_cycles,
                "hangup": {
                    "events": self.hangups,
                    "observed": self.host_disconnects,
                    "frames_unsent": self.hangup_unsent,
                },
                "clock_skew": {"events": self.skew_events, "ppm": self.board.skew_ppm},
                "delay": {"events": self.delay_events, "ms": self._delay_ns // 1_000_000},
                "clock_jump": {
                    "events": self.jump_events,
                    "forward": self.jumps_forward,
                    "backward": self.jumps_backward,
                    "large": self.jumps_large,
                },
            },
            "host": {
                "frames_ok": self.host_frames_ok,
                "bytes_discarded": self.host_bytes_discarded,
                "lost": self.host_lost,
                "duplicates": self.host_duplicates,
                "resets": self.host_resets,
                "discontinuities": self.host_discontinuities,
                "disconnects": self.host_disconnects,
            },
        }
