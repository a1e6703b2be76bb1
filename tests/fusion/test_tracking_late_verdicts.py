"""A late measurement and the key's verdict (red team rt9 F4): a frame that arrives after its
TTL but within the replay window is fused into the track in its place, and is no measurement
"that no track took": it must not HOLD the key's track, which is current, as ``stale``. Nor
may it make anything look fresher: the track's capture, age and ``valid_until`` stay its
newest capture's. A frame later than the window is dropped: it is listed apart, and its
reasons hold the key until the next in-order frame, as documented.

The expected verdicts are worked out here from the arrival schedule alone (which frames have
arrived, their captures, the TTL and the window), never from the model; the position from the
closed-form path. The boxes are exact but for the board's rounding to its units: no
frame falls outside the gate (a miss would HOLD the track ``coasting``, which the schedule
cannot tell)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fusion import LinkStatus, PoseSample, VisionObservation
from gizmo_core import Decision, HoldReason, LinkState
from tests.support.tracking_sim import LEVEL, MS, PINHOLE, TTL_MS, Path2D, host, model, vehicle

FRAME_S = 1 / 30
WINDOW_MS = 500.0  # the default replay window (``oosm_window_ms``)
SECONDS = 8.0


def _box(t: float, path: Path2D) -> tuple[int, int]:
    """The board's box centre (its units) of the target at ``t``."""
    position = vehicle(path, t)[0]
    pixel = PINHOLE.project_point(PINHOLE.pose(position, LEVEL), path.at(t)[0])
    assert pixel is not None
    return round(pixel[0] * 2000 / 639 - 1000), round(pixel[1] * 2000 / 479 - 1000)


def _schedule(late_ms: float, phase: int) -> list[tuple[int, int, tuple[int, int]]]:
    """Frames ``(arrival, capture, box centre)``: every third one from ``phase`` on
    ``late_ms`` after its capture, the others 20 ms after."""
    path = Path2D(3.0, 30.0, [])
    frames = []
    for k in range(1, int(SECONDS * 30)):
        t = k * FRAME_S
        delay_ms = late_ms if k % 3 == phase else 20.0
        frames.append((host(t) + round(delay_ms * MS), host(t), _box(t, path)))
    return frames


def _expected(frames: list[tuple[int, int, tuple[int, int]]], now: int) -> tuple[bool, int]:
    """Whether the key PROCEEDs at ``now``, and the capture its line shows: the newest capture
    that has arrived (a late frame is never newer). It HOLDs once that is past its TTL, and
    while the frame that arrived last came later than the window before the captures that
    arrived ahead of it (dropped: listed apart, stale)."""
    arrived = sorted((f for f in frames if f[0] <= now), key=lambda f: f[0])
    newest = max(f[1] for f in arrived)
    last = arrived[-1]
    ahead = [f[1] for f in arrived[:-1]]
    dropped = bool(ahead) and last[1] < max(ahead) - round(WINDOW_MS * MS)
    return now - newest <= round(TTL_MS * MS) and not dropped, newest


def _dropped(frames: list[tuple[int, int, tuple[int, int]]]) -> int:
    """How many frames arrive later than the window before a capture that arrived ahead."""
    newest, count = -(2**63), 0
    for _, capture, _ in sorted(frames, key=lambda f: f[0]):
        count += capture < newest - round(WINDOW_MS * MS)
        newest = max(newest, capture)
    return count


def _run(late_ms: float, phase: int) -> tuple[int, int, list[str]]:
    """Snapshots at 50 Hz and after every frame from 1 s on (the track confirmed): the
    lines that PROCEED, those that do as expected, and what went wrong."""
    path, world = Path2D(3.0, 30.0, []), model(True)
    frames = _schedule(late_ms, phase)
    events: list[tuple[int, int, object]] = []
    for k in range(int((SECONDS + 1) * 100) + 1):
        t = k / 100
        position, velocity = vehicle(path, t)
        pose = PoseSample(host(t), round(t * 1e9), 0, position, LEVEL, velocity)
        events.append((host(t) + MS, 1, pose))
    for rx, capture, (cx, cy) in frames:
        obs = VisionObservation(1, 5, 11, "car", 80, True, False, True, cx, cy, 30, 40,
                                capture, rx, 0, True)  # fmt: skip
        events.append((rx, 0, obs))
    events.sort(key=lambda e: (e[0], e[1]))
    world.apply(LinkStatus(events[0][0] - MS, LinkState.UP))
    proceed = matched = 0
    wrong: list[str] = []
    tick, next_tick = 20 * MS, host(1.0)
    last_rx = max(f[0] for f in frames)

    def check(now: int) -> None:
        nonlocal proceed, matched
        snap = world.snapshot(now)
        go, newest = _expected(frames, now)
        proceed += snap.verdict is Decision.PROCEED
        line = snap.target(snap.selected) if snap.selected else None
        listed = [t for t in snap.targets if t.key == "1:5:11"]
        if go:
            ok = snap.verdict is Decision.PROCEED and line is not None and len(listed) == 1
            if ok and line is not None:
                ok = (
                    line.capture_ns == newest
                    and line.age_ms == (now - newest) / 1e6
                    and snap.valid_until_ns <= newest + round(TTL_MS * MS)
                    and line.position_ned_m is not None
                )
                if ok and line.position_ned_m is not None:
                    truth = path.at((newest - host(0)) / 1e9)[0]
                    ok = math.dist(line.position_ned_m[:2], truth[:2]) < 0.2
        else:
            ok = snap.verdict is Decision.HOLD and HoldReason.STALE in snap.reasons
        matched += ok
        if not ok and len(wrong) < 5:
            wrong.append(f"{(now - host(0)) / 1e9:.3f} s: {snap.verdict.name} {snap.reasons}, "
                         f"expected {'PROCEED' if go else 'HOLD stale'} at {newest}")  # fmt: skip

    for arrival, _, item in events:
        while next_tick < arrival and next_tick <= last_rx:
            check(next_tick)
            next_tick += tick
        world.apply(item)
        if isinstance(item, VisionObservation) and arrival >= host(1.0):
            check(arrival)
    assert world.stats()["late_dropped"] == _dropped(frames)
    assert world.stats()["late_fused"] >= len(frames) // 3 - _dropped(frames)
    return proceed, matched, wrong


@pytest.mark.parametrize("late_ms", [100.0, 300.0, 450.0])
@pytest.mark.parametrize("phase", [0, 1])
def test_a_late_frame_fused_in_its_place_does_not_hold_the_current_track(
    late_ms: float, phase: int
) -> None:
    """Every third frame after its TTL (300, 450 ms) or before it (100 ms), within the window:
    each line is as the schedule says: PROCEED on the newest capture that has arrived (its
    age and ``valid_until`` that capture's, one entry for the key), HOLD ``stale`` once that
    is past its TTL. Before the fix, 300 ms HOLD about half the lines."""
    proceed, matched, wrong = _run(late_ms, phase)
    lines = _count_lines(late_ms, phase)
    assert matched == lines, wrong
    assert proceed >= 0.95 * lines


def test_a_frame_later_than_the_window_is_dropped_and_holds_its_key() -> None:
    """700 ms late: dropped (counted), listed apart and stale: the key HOLDs from its arrival
    to the next in-order frame's, and never PROCEEDs on it."""
    proceed, matched, wrong = _run(700.0, 0)
    lines = _count_lines(700.0, 0)
    assert matched == lines, wrong
    assert proceed < 0.9 * lines  # it did hold, for a while after each


def _count_lines(late_ms: float, phase: int) -> int:
    frames = _schedule(late_ms, phase)
    last_rx = max(f[0] for f in frames)
    ticks = len(range(host(1.0), last_rx + 1, 20 * MS))
    return ticks + sum(1 for f in frames if f[0] >= host(1.0))


def test_the_schedule_has_late_frames_past_the_ttl() -> None:
    """The oracle's own check: at 300 ms a third of the frames arrive past the TTL, inside
    the window, and each is older than the newest capture already arrived."""
    frames = _schedule(300.0, 0)
    late = [f for f in frames if f[0] - f[1] > round(TTL_MS * MS)]
    assert len(late) == len(frames) // 3
    arrivals = np.array([f[0] for f in frames])
    for rx, capture, _ in late:
        before = [f[1] for f in frames if f[0] < rx]
        assert max(before) > capture and max(before) - capture < round(WINDOW_MS * MS)
        assert (arrivals < rx).sum() > 0
