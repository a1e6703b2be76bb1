"""The host against MAVSDK playing the autopilot (``tests/support/mavsdk_autopilot.py``): the
normal path (bound, locked, poses on the truth, the clock on the test's own wall-to-monotonic
offset) and finding 9: MAVSDK answers TIMESYNC only after it has been answered, so the host
answers it before its own lock; an autopilot that never answers TIMESYNC is a HOLD
``clock_not_locked``, its poses heard, never ``no_pose``."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

from fusion import LinkStatus
from gizmo_core import HoldReason, LinkState
from gizmo_core.clock import ClockStatus
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import config_from_mapping
from tests.support.fusion_inputs import observation
from tests.support.mavlink_rig import until
from tests.support.mavsdk_autopilot import hovering, mavsdk_autopilot

pytestmark = [pytest.mark.realtime]

MS = 1_000_000
LOCK_DEADLINE_S = 30.0

CAMERA = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0, "mount_rpy_deg": [0, -90, 0]}


def host() -> Host:
    return Host.serving(
        config_from_mapping(
            {
                "serial": {"path": "/nonexistent/gizmo0"},
                "publish": {"stdout": False, "stats_interval_s": 0.2},
                "camera": CAMERA,
                "mavlink": {"url": "udpin:127.0.0.1:0", "target_system": 1},
            }
        )
    )


def wall_minus_monotonic_ns() -> int:
    """The test's own clock offset (the tightest of a few reads)."""
    best = None
    for _ in range(20):
        a = time.monotonic_ns()
        wall = time.time_ns()
        b = time.monotonic_ns()
        if best is None or b - a < best[0]:
            best = (b - a, wall - (a + b) // 2)
    assert best is not None
    return best[1]


def test_mavsdk_as_the_autopilot_binds_locks_and_its_poses_are_the_truth() -> None:
    h = host()
    poses: list[Any] = []

    async def scenario() -> None:
        async with h:
            link = h.mavlink
            assert link is not None
            link.poses._on_pose = _tee(link.poses._on_pose, poses)
            await until(lambda: link.transport.local_port is not None)
            async with mavsdk_autopilot(link.transport.local_port) as autopilot:
                # MAVSDK's server starts and then answers TIMESYNC: ~1-2 s alone, several on a
                # busy machine (8 s was missed); a deadline only bounds a hang.
                await until(lambda: link.session.locked, timeout=LOCK_DEADLINE_S)
                await until(
                    lambda: sum(p.clock_status is ClockStatus.LOCKED for p in poses) > 50,
                    timeout=LOCK_DEADLINE_S,
                )
                assert autopilot.timesync_enabled
                session = link.session.stats(h.scheduler.now_ns())
        assert session["autopilot"] == [1, 1] and session["conflict"] is False
        assert session["counts"]["timesync_answered_unlocked"] >= 1  # MAVSDK asked first
        offset = wall_minus_monotonic_ns()
        locked = [p for p in poses if p.clock_status is ClockStatus.LOCKED]
        errors_ms = sorted(abs(p.host_ns - (p.sim_time_ns - offset)) / 1e6 for p in locked)
        median = errors_ms[len(errors_ms) // 2]
        print(f"mavsdk: clock mapping error median {median:.3f} ms, max {errors_ms[-1]:.3f} ms")
        # The typical pose within 5 ms of the truth; none grossly off (a wrong epoch or unit
        # is seconds). Alone the median is 0.05-0.2 ms; in the suite's parallel phase MAVSDK's
        # server (another process, stamping its own sends) was seen at 2.2 and 4.9 ms. Not a
        # p95: on a loaded machine a few TIMESYNC rounds are slow, and the mapping they leave
        # for a moment is 1-3 ms off.
        assert median < 5.0 and errors_ms[-1] < 20.0
        for p in locked:
            truth, _ = hovering(p.sim_time_ns)
            assert math.dist(p.position_ned_m, truth) < 1e-3

    asyncio.run(scenario())


def test_an_autopilot_that_never_answers_timesync_holds_clock_not_locked() -> None:
    """MAVSDK without its TIMESYNC: poses stream, no answer ever comes."""
    h = host()

    async def scenario() -> None:
        async with h:
            link = h.mavlink
            assert link is not None and h.world is not None
            await until(lambda: link.transport.local_port is not None)
            async with mavsdk_autopilot(link.transport.local_port, timesync=False):
                await until(lambda: link.poses.counts["unmapped"] > 50, timeout=LOCK_DEADLINE_S)
                now = h.scheduler.now_ns()  # and the board sees a target (red team FAIL 5)
                h.world.apply(LinkStatus(now - 300 * MS, LinkState.UP))
                h.world.apply(observation(now - 40 * MS, rx_ns=now - 30 * MS))
                snapshot = h.world.snapshot(h.scheduler.now_ns())
        assert not link.session.locked
        assert HoldReason.CLOCK_NOT_LOCKED in snapshot.reasons
        assert HoldReason.NO_POSE not in snapshot.reasons
        assert snapshot.sources["pose"].state.value == "RESYNC"
        target = snapshot.target(snapshot.selected)
        assert HoldReason.CLOCK_NOT_LOCKED in target.reasons
        assert HoldReason.NO_POSE not in target.reasons

    asyncio.run(scenario())


def _tee(callback, into: list):
    def both(pose):
        into.append(pose)
        if callback is not None:
            callback(pose)

    return both
