"""Which of the autopilot's two pose streams places poses: ODOMETRY, or ATTITUDE_QUATERNION
paired with LOCAL_POSITION_NED; and whether the two agree.

An autopilot may send both, from one estimator or two: one stream places poses and the
other's are counted ``mixed``, never both (their poses interleaved look like jumps). Each
stream's poses of the last
``WINDOW_MS`` are counted once by their boot times, at most one each ``MIN_SPACING_MS`` (a
repeated message, or a stamp that repeats, freezes or steps by a microsecond, adds none), and
only those that arrived within ``MAX_LATENCY_MS`` of the time they are for (where the clock
maps it; when neither stream has such poses, every distinct one counts). A stream *serves*
while its counted poses came no more than ``SERVING_GAP_MS`` apart (the world's pose gap
bound) up to now. The first stream to count a pose is chosen. The other takes over only when
the chosen one fails: when it has fallen silent (``QUIET_MS``, and twice its own interval)
and the other has spoken since, or when it no longer serves and the other does *and* the two
were seen to agree in the last ``WINDOW_MS``. Never because the other sends more: that would
be a vote, and a second voice at the autopilot's address could win it (red team rt21: 1.9 m
off at 200 poses a second, just inside the cross-check, took over good pairs at 50 Hz).

Both streams speak for the one autopilot bound at its address: where both place the vehicle at
one time (the other's poses around it, or its nearest carried by its velocity), they must agree
within ``MAX_DISAGREEMENT_M``. Otherwise one of them is a second voice (or a broken estimator):
a conflict, which the world HOLDs for (``pose_conflict``), never a vote.

Red teams found each simpler rule wanting: "ODOMETRY once heard" held the world for good on
an autopilot streaming the pairs (rt14); "ODOMETRY while heard" held it while ODOMETRY came at
3-12 Hz beside pairs at 50 Hz (rt17); "ODOMETRY while it arrives at 20 Hz" was won by the same
ODOMETRY delivered twice, refused ODOMETRY at 15 Hz beside pairs at 5 Hz, lost to pairs that
were all invalid, preferred ODOMETRY stamped 0 or 300 ms late, and switched 40 times in 6 s on
a jittery 20 Hz (rt18); counting without spacing or a cross-check let ODOMETRY 8 m off, sent 4
times with stamps a microsecond apart, take over, and kept pairs at 9 Hz (each gap too long
for the world) against ODOMETRY at 15 Hz (rt20); a switch for sending more let a second voice
1.9 m off take over, and one sent only where no pose of the other stream was near enough to
compare took over pairs at 10 Hz, 8 m off (rt21).
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from enum import Enum

from fusion.geometry import Vec3

WINDOW_MS = 1000.0  # the poses each stream served are counted over this
MIN_SPACING_MS = 5.0  # poses closer than this in boot time count once
SERVING_GAP_MS = 100.0  # a stream whose poses come further apart serves the world no more
MAX_LATENCY_MS = 50.0  # a pose arriving later than this after its time serves less
MAX_DISAGREEMENT_M = 2.0  # the two streams' positions for one time, at most this far apart
QUIET_MS = 150.0  # a chosen stream silent this long (and twice its interval) gives way
_BRACKET_NS = 100_000_000  # the other stream's poses around a time, at most this far apart
_NEAR_NS = 60_000_000  # else its nearest, carried by its velocity, at most this far off
_KEPT = 16  # each stream's newest positions kept for the cross-check


class PoseStream(Enum):
    ODOMETRY = "odometry"
    PAIRS = "pair"


class StreamChoice:
    """The stream that places poses (``chosen``), from the poses each one offers."""

    def __init__(self) -> None:
        self._window_ns = round(WINDOW_MS * 1e6)
        self._spacing_ns = round(MIN_SPACING_MS * 1e6)
        self._gap_ns = round(SERVING_GAP_MS * 1e6)
        self._quiet_ns = round(QUIET_MS * 1e6)
        self._max_latency_ns = round(MAX_LATENCY_MS * 1e6)
        # per stream: the arrivals of its counted poses in the window, of the timely ones
        self._distinct: dict[PoseStream, deque[int]] = {s: deque() for s in PoseStream}
        self._timely: dict[PoseStream, deque[int]] = {s: deque() for s in PoseStream}
        self._counted: dict[PoseStream, int] = {}  # the newest counted boot time
        # per stream: its newest positions by boot time, for the cross-check
        self._positions: dict[PoseStream, deque[tuple[int, Vec3, Vec3 | None]]] = {
            s: deque(maxlen=_KEPT) for s in PoseStream
        }
        self._agreed_ns: int | None = None  # the newest cross-check within the bound: its arrival
        self.chosen: PoseStream | None = None

    def offer(self, stream: PoseStream, boot_ns: int, rx_ns: int, latency_ns: int | None) -> bool:
        """A pose of ``stream`` for ``boot_ns`` arrived at ``rx_ns``, ``latency_ns`` after the
        host time it is for (``None``: unmapped); whether it places (its stream is chosen)."""
        counted = self._counted.get(stream)
        if counted is None or boot_ns >= counted + self._spacing_ns:
            self._counted[stream] = boot_ns
            self._distinct[stream].append(rx_ns)
            if latency_ns is None or latency_ns <= self._max_latency_ns:
                self._timely[stream].append(rx_ns)
        self._choose(rx_ns)
        return self.chosen is stream

    def disagreement_m(
        self,
        stream: PoseStream,
        boot_ns: int,
        position: Vec3,
        velocity: Vec3 | None,
        rx_ns: int,
    ) -> float | None:
        """How far ``position`` (``stream``'s, for ``boot_ns``) lies from the other stream's
        position for that time: interpolated between its poses around it, or carried from its
        nearest within ``_NEAR_NS`` by that pose's velocity (``None``: it has no pose near);
        keeps the pose for the other stream's checks."""
        other = PoseStream.PAIRS if stream is PoseStream.ODOMETRY else PoseStream.ODOMETRY
        self._positions[stream].append((boot_ns, position, velocity))
        before = after = None
        for kept in self._positions[other]:
            t = kept[0]
            if t <= boot_ns and (before is None or t > before[0]):
                before = kept
            if t >= boot_ns and (after is None or t < after[0]):
                after = kept
        if before is not None and after is not None and after[0] - before[0] <= _BRACKET_NS:
            span = after[0] - before[0]
            f = 0.0 if span == 0 else (boot_ns - before[0]) / span
            there = [a + f * (b - a) for a, b in zip(before[1], after[1], strict=True)]
            return self._apart(math.dist(there, position), rx_ns)
        near = [kept for kept in (before, after) if kept is not None]
        if not near:
            return None
        t, there_at, speed = min(near, key=lambda kept: abs(kept[0] - boot_ns))
        dt_s = (boot_ns - t) * 1e-9
        if abs(dt_s) * 1e9 > _NEAR_NS or (speed is None and abs(dt_s) * 1e9 > _NEAR_NS / 3):
            return None
        if speed is not None:
            there_at = (
                there_at[0] + speed[0] * dt_s,
                there_at[1] + speed[1] * dt_s,
                there_at[2] + speed[2] * dt_s,
            )
        return self._apart(math.dist(there_at, position), rx_ns)

    def _apart(self, distance_m: float, rx_ns: int) -> float:
        if distance_m <= MAX_DISAGREEMENT_M:
            self._agreed_ns = rx_ns
        return distance_m

    def _serves(self, arrivals: deque[int], now_ns: int) -> bool:
        if len(arrivals) < 2 or now_ns - arrivals[-1] > self._gap_ns:
            return False
        return all(b - a <= self._gap_ns for a, b in itertools.pairwise(arrivals))

    def _choose(self, now_ns: int) -> None:
        oldest = now_ns - self._window_ns
        for arrivals in (*self._distinct.values(), *self._timely.values()):
            while arrivals and arrivals[0] < oldest:
                arrivals.popleft()
        counts = self._timely
        if not any(counts.values()):
            counts = self._distinct
        chosen = self.chosen
        if chosen is None:
            best = max(PoseStream, key=lambda s: len(counts[s]))
            self.chosen = best if counts[best] else None
            return
        other = PoseStream.PAIRS if chosen is PoseStream.ODOMETRY else PoseStream.ODOMETRY
        theirs, ours = counts[other], counts[chosen]
        if not theirs:
            return
        if self._quiet(ours, now_ns) and (not ours or theirs[-1] > ours[-1]):
            self.chosen = other  # the chosen one fell silent: whatever still speaks
            return
        agreed = self._agreed_ns
        if (
            agreed is not None
            and now_ns - agreed <= self._window_ns
            and self._serves(theirs, now_ns)
            and not self._serves(ours, now_ns)
        ):
            self.chosen = other

    def _quiet(self, arrivals: deque[int], now_ns: int) -> bool:
        """Silent for ``QUIET_MS`` and twice its own interval (a 5 Hz stream is silent 200 ms
        between its poses)."""
        if not arrivals:
            return True
        quiet_ns = self._quiet_ns
        if len(arrivals) >= 2:
            quiet_ns = max(quiet_ns, 2 * (arrivals[-1] - arrivals[0]) // (len(arrivals) - 1))
        return now_ns - arrivals[-1] > quiet_ns

    def reset(self) -> None:
        """Forget both streams (the autopilot rebooted: boot times start again)."""
        for arrivals in (*self._distinct.values(), *self._timely.values()):
            arrivals.clear()
        for positions in self._positions.values():
            positions.clear()
        self._counted.clear()
        self._agreed_ns = None
        self.chosen = None
