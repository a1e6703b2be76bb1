"""Black box: a stand-in autopilot on a skewed clock with 8-16 ms delivery lag, the world
model fed by the MAVLink pose alone, and LANDING_TARGET checked against the truth.

The board's boxes are drawn with the simulator's camera (:class:`hil_geometry.pinhole.Pinhole`,
from the same table values), never with the camera model under test, so an error in fusion's
focal length, principal point or pixel convention fails the bounds instead of cancelling out.
The figures (p95 over a few seconds of flight) are printed for the record (``-s``); the
asserts are the issue's acceptance bounds, which are accuracy, not timing.
"""

from __future__ import annotations

import asyncio
import math
import time

import pytest
from scipy.spatial.transform import Rotation

from fusion import (
    CameraConfig,
    CameraModel,
    LinkStatus,
    PoseSample,
    VisionObservation,
    WorldConfig,
    WorldModel,
)
from gizmo_core import LinkState
from gizmo_core.clock import ClockStatus
from gizmo_host.mavlink import LandingFields, LandingTargetSender, Profile
from hil_geometry.pinhole import Pinhole
from tests.support.mavlink_rig import circling, rig, until

pytestmark = [pytest.mark.realtime]

TARGET_NED = (0.5, -0.3, 0.0)
CAMERA = CameraConfig(
    width_px=640,
    height_px=480,
    hfov_deg=90.0,
    mount_rpy_deg=(0.0, -90.0, 0.0),
    mount_position_frd_m=(0.1, 0.0, 0.05),
)
# The board's camera: the simulator's own model of the same lens and mount (not fusion's).
BOARD_CAMERA = Pinhole.from_table(
    CAMERA.width_px,
    CAMERA.height_px,
    hfov_deg=CAMERA.hfov_deg,
    mount_rpy_deg=CAMERA.mount_rpy_deg,
    mount_position_frd_m=CAMERA.mount_position_frd_m,
)

VISION_LATENCY_NS = 30_000_000
SAMPLES = 100


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _body_matrix(q):
    w, x, y, z = q
    return Rotation.from_quat([x, y, z, w])  # scipy is (x, y, z, w): an independent oracle


def true_line_of_sight_ned(t_ns: int):
    """The camera-to-target line in NED at ``t_ns``, from the truth (scipy)."""
    truth = circling(t_ns)
    r = _body_matrix(truth.quaternion_wxyz)
    camera = [
        p + m
        for p, m in zip(truth.position_ned_m, r.apply(CAMERA.mount_position_frd_m), strict=True)
    ]
    return [t - c for t, c in zip(TARGET_NED, camera, strict=True)]


def true_line_of_sight_body(t_ns: int):
    """The camera-to-target line in body FRD at ``t_ns``, from the truth (scipy)."""
    truth = circling(t_ns)
    r = _body_matrix(truth.quaternion_wxyz)
    camera = [
        p + m
        for p, m in zip(truth.position_ned_m, r.apply(CAMERA.mount_position_frd_m), strict=True)
    ]
    return r.inv().apply([t - c for t, c in zip(TARGET_NED, camera, strict=True)])


def observation(capture_ns: int, now_ns: int) -> VisionObservation | None:
    """The pad as the board reports it: its pixel through the simulator's camera on the true
    pose at the capture, in the spec's box units."""
    truth = circling(capture_ns)
    pose = BOARD_CAMERA.pose(truth.position_ned_m, truth.quaternion_wxyz)
    pixel = BOARD_CAMERA.project_point(pose, TARGET_NED)
    if pixel is None or not BOARD_CAMERA.in_image(*pixel):
        return None
    u, v = pixel
    cx = round(u * 2000 / (CAMERA.width_px - 1) - 1000)
    cy = round(v * 2000 / (CAMERA.height_px - 1) - 1000)
    return VisionObservation(
        source_id=1, result_type=1, id=1, label="pad", confidence=90, tracked=True, lost=False,
        has_box=True, center_x=cx, center_y=cy, width=120, height=120,
        host_capture_ns=capture_ns, host_rx_ns=now_ns, epoch=0, clock_locked=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("profile", "slow_timesync"),
    [(Profile.ARDUPILOT, False), (Profile.PX4, False), (Profile.PX4, True)],
    ids=["ardupilot", "px4", "px4-slow-timesync"],
)
@pytest.mark.long
def test_landing_target_against_the_truth(profile, slow_timesync):
    """``slow_timesync``: TIMESYNC answers lag 8-16 ms too, so no round trip is under 10 ms
    (the estimator's gate adapts; PX4's own 10 ms filter never takes a sample: no offset)."""
    asyncio.run(fly(profile, slow_timesync))


async def fly(profile, slow_timesync=False):
    model = CameraModel(CAMERA)
    world = WorldModel(model, WorldConfig(pose_required=True))
    now = time.monotonic_ns()
    world.apply(LinkStatus(now, LinkState.UP))

    def pose(p: PoseSample) -> None:
        world.apply(p)

    slow = {"lag_timesync": True} if slow_timesync else {}
    async with rig(on_pose=pose, skew_ppm=120.0, lag_ms=(8.0, 16.0), seed=7, **slow) as r:
        sender = LandingTargetSender(
            r.session, profile, attitude_at=r.pose_source.attitude_at, rate_hz=20.0
        )
        await until(lambda: r.session.locked and len(r.poses) > 20)
        positions: list[float] = []
        bearings: list[float] = []
        captures: dict[int, int] = {}  # time_usec sent -> the host capture time
        samples = SAMPLES // 2 if slow_timesync else SAMPLES  # the clock is what it adds
        while len(r.standin.landing_targets) < samples:
            await asyncio.sleep(1 / 30)
            now = time.monotonic_ns()
            obs = observation(now - VISION_LATENCY_NS, now)
            assert obs is not None
            world.apply(obs)
            snapshot = world.snapshot(now)
            outcome = sender.offer(snapshot, now)
            if isinstance(outcome, LandingFields):
                sent = snapshot.target(snapshot.selected or "")
                assert sent is not None
                captures[outcome.time_usec] = sent.capture_ns
            target = snapshot.target(obs.key)
            if target is not None and target.position_ned_m is not None:
                positions.append(math.dist(target.position_ned_m, TARGET_NED))
                truth = true_line_of_sight_ned(target.capture_ns)
                cos = sum(a * b for a, b in zip(target.bearing_ned, truth, strict=True))
                bearings.append(math.degrees(math.acos(min(1.0, cos / math.hypot(*truth)))))
        received = list(r.standin.landing_targets)
        # Each pose was placed with the mapping of its arrival: its boot time against the
        # stand-in's true clock at the host time it was given.
        clock_error_ms = [
            abs(r.standin.boot_ns(p.host_ns) - p.sim_time_ns) / 1e6
            for p in r.poses
            if p.clock_status is ClockStatus.LOCKED
        ]
        offset_ns = r.standin.px4_offset_ns
        px4_offset_ms = 0.0 if offset_ns is None else offset_ns / 1e6
    time_errors_ms, angle_errors_deg, position_errors_m = [], [], []
    for item in received:
        fields = item.fields
        host_capture_ns = captures[fields["time_usec"]]
        truth_us = r.standin.boot_ns(host_capture_ns) / 1000
        time_errors_ms.append(abs(fields["time_usec"] - truth_us) / 1000)
        if profile is Profile.ARDUPILOT:
            assert fields["frame"] == 12 and fields["position_valid"] == 0
            rebuilt = [-math.tan(fields["angle_y"]), math.tan(fields["angle_x"]), 1.0]
            truth = true_line_of_sight_body(host_capture_ns)
            cos = sum(a * b for a, b in zip(rebuilt, truth, strict=True)) / (
                math.hypot(*rebuilt) * math.hypot(*truth)
            )
            angle_errors_deg.append(math.degrees(math.acos(min(1.0, cos))))
            assert fields["distance"] == pytest.approx(math.hypot(*truth), rel=0.05)
            assert fields["size_x"] > 0 and fields["size_y"] > 0
        else:
            assert fields["frame"] == 1 and fields["position_valid"] == 1
            position_errors_m.append(math.dist((fields["x"], fields["y"], fields["z"]), TARGET_NED))
    print(
        f"\n{profile.value}{' slow TIMESYNC' * slow_timesync}: n={len(time_errors_ms)} "
        f"time_usec err p95 "
        f"{p95(time_errors_ms):.3f} ms; clock mapping err p95 {p95(clock_error_ms):.3f} ms "
        f"(max {max(clock_error_ms):.3f}); PX4 offset {px4_offset_ms:+.3f} ms; world bearing "
        f"p95 {p95(bearings):.3f} deg, position p95 {p95(positions):.3f} m; "
        f"latency {sender.stats()['latency_ms']}"
    )
    if angle_errors_deg:
        print(f"ardupilot angle err p95 {p95(angle_errors_deg):.3f} deg")
    if position_errors_m:
        print(f"px4 position err p95 {p95(position_errors_m):.3f} m")
    # Slow TIMESYNC: both legs lag 8-16 ms, so a round trip's asymmetry is up to 8 ms and the
    # offset is known to half of it, 4 ms; plus 1 ms for a loaded host's scheduling (3.5 ms
    # was seen in CI; 2.4-2.9 typical). Otherwise 3 ms, as before (0.2-0.4 ms typical).
    assert p95(time_errors_ms) <= (5.0 if slow_timesync else 3.0)
    assert p95(bearings) <= 0.7 and p95(positions) <= 0.25
    assert abs(px4_offset_ms) <= 3.0
    if profile is Profile.ARDUPILOT:
        assert p95(angle_errors_deg) <= 0.7
    else:
        assert p95(position_errors_m) <= 0.25
