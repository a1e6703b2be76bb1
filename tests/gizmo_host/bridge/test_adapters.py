"""The adapters from rfly_link messages and the live link to fusion inputs: what becomes an
input, what is counted instead, and how each stream's sim time is mapped."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import (
    GimbalLaserRange,
    GimbalSample,
    ImuSample,
    LaserRange,
    LidarPoints,
    PointFrame,
    PoseSample,
    SimClockEstimator,
    SourceConflict,
    VisionObservation,
)
from fusion import geometry as g
from gizmo_core import ConfigError, HoldReason
from gizmo_host.bridge.rfly_adapter import MAX_LIDAR_POINTS, RflyAdapter, RflyPoseStream
from gizmo_host.bridge.rfly_sources import RflySimSetup
from gizmo_host.bridge.world_adapters import GizmoAdapter, result_label
from gizmo_host.rigs.rflysim import builders, sensorset
from gizmo_host.rigs.rflysim.kinematics import SimVehicleState
from gizmo_host.stream.clock import ClockStatus
from gizmo_host.stream.events import ReceivedResult
from gizmo_host.stream.tracker import SequenceEvent
from gizmo_host.wire.protocol import VisionResult
from gizmo_host.wire.result_checks import is_target
from rfly_link import messages as m
from rfly_link.sensors import PointCloud, decode_sensor

MS = 1_000_000
STATE = SimVehicleState(
    position_ned_m=(1.0, 2.0, -10.0),
    velocity_ned_m_s=(0.5, 0.0, 0.0),
    acceleration_ned_m_s2=(0.0, 0.0, 0.0),
    quaternion_wxyz=(1.0, 0.0, 0.0, 0.0),
    euler_rad=(0.0, 0.0, 0.0),
    angular_rate_frd_rad_s=(0.0, 0.0, 0.3),
    specific_force_frd_m_s2=(0.0, 0.0, -9.81),
)
SENSORS = sensorset.builtin_config().sensors
DISTANCE = next(s for s in SENSORS if s.type_id == m.TypeId.DISTANCE)
GIMBAL_CAMERA = next(s for s in SENSORS if s.type_id == m.TypeId.GIMBAL)


def locked_adapter(copter_id: int, **kwargs: object) -> RflyAdapter:
    """An adapter whose sim clocks lock on their first sample (no lock period), so one
    message shows what it maps to; the lock period has tests of its own."""
    return RflyAdapter(
        copter_id,
        estimator=lambda: SimClockEstimator(lock_ms=0.0),
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_state_of_the_configured_vehicle_is_a_pose_and_a_rate() -> None:
    adapter = locked_adapter(1)
    rx_ns = 5_000 * MS
    pose, rate = adapter.message(builders.state_168(1, 3, STATE, 12.5), rx_ns)
    assert isinstance(pose, PoseSample) and isinstance(rate, ImuSample)
    assert pose.position_ned_m == (1.0, 2.0, -10.0) and pose.sim_time_ns == 12_500_000_000
    assert pose.host_ns <= rx_ns  # mapped sim time: never after its own arrival
    assert rate.angular_rate_frd_rad_s == pytest.approx((0.0, 0.0, 0.3))
    assert adapter.message(builders.state_168(2, 3, STATE, 12.5), rx_ns) == []
    assert adapter.counts["other_copter"] == 1


def test_only_the_configured_pose_source_makes_poses() -> None:
    """Two streams with their own sim clocks would fight over one pose history."""
    adapter = locked_adapter(1, pose_source=RflyPoseStream.ODOMETRY)
    assert adapter.message(builders.state_168(1, 3, STATE, 1.0), 10 * MS) == []
    assert adapter.counts["not_pose_source"] == 1
    odom = builders.odometry(1, 1, STATE, 1.0, discontinuity=False)
    items = adapter.message(odom, 11 * MS)
    assert [type(i) for i in items] == [PoseSample, ImuSample]
    assert adapter.last_odometry_rx_ns == 11 * MS


def test_an_odometry_discontinuity_starts_a_new_pose_epoch() -> None:
    adapter = locked_adapter(1, pose_source=RflyPoseStream.ODOMETRY)
    epochs = []
    for n in range(5):
        odom = builders.odometry(n, 1, STATE, 1.0 + n * 0.01, discontinuity=n == 3)
        pose = adapter.message(odom, (100 + 10 * n) * MS)[0]
        assert isinstance(pose, PoseSample)
        epochs.append(pose.epoch)
    assert epochs[:3] == [epochs[0]] * 3 and epochs[3] == epochs[4] > epochs[0]


def test_unusable_values_are_counted_never_raised() -> None:
    adapter = locked_adapter(1, pose_source=RflyPoseStream.ODOMETRY)
    nan_time = builders.odometry(1, 1, STATE, math.nan, discontinuity=False)
    # frame_type 2 is not NED/FRD: axes the adapter cannot know.
    body_frame = dataclasses.replace(nan_time, simulation_time_s=1.0, frame_type=2)
    assert adapter.message(nan_time, MS) == [] and adapter.message(body_frame, MS) == []
    assert adapter.counts["dropped_invalid"] == 2
    # Finite, but no vehicle is 1e200 m away (red team: it was a pose, held only as a jump).
    far = STATE._replace(position_ned_m=(0.0, 0.0, -1e200))
    far_odometry = builders.odometry(2, 1, far, 1.0, discontinuity=False)
    assert adapter.message(far_odometry, 2 * MS) == []
    assert adapter.counts["dropped_invalid"] == 3
    assert adapter.message(m.CopterSimCrash(copter_id=1), MS) == []
    assert adapter.counts["ignored"] == 1


def test_a_distance_frame_needs_its_config_entry_and_zero_is_no_return() -> None:
    adapter = locked_adapter(1)
    reading = m.DistanceSensor(distance_m=7.5, copter_id=1)
    assert adapter.message(reading, MS) == []  # no Config.json entry: no mount
    (hit,) = adapter.message(reading, 2 * MS, frame_time_s=3.0, sensor=DISTANCE)
    zero = dataclasses.replace(reading, distance_m=0.0)
    (miss,) = adapter.message(zero, 3 * MS, frame_time_s=3.001, sensor=DISTANCE)
    # Untimed (no frame time, or not a number) or beyond the sensor's range: junk, counted.
    beyond = dataclasses.replace(reading, distance_m=DISTANCE.other_params[0] + 1.0)
    assert adapter.message(reading, 4 * MS, sensor=DISTANCE) == []
    assert adapter.message(reading, 4 * MS, frame_time_s=math.nan, sensor=DISTANCE) == []
    assert adapter.message(beyond, 4 * MS, frame_time_s=3.002, sensor=DISTANCE) == []
    assert adapter.counts["dropped_invalid"] == 3
    assert isinstance(hit, LaserRange) and hit.distance_m == 7.5
    assert hit.mount.rpy_deg == pytest.approx(sensorset.mount_rpy_deg(DISTANCE))
    assert isinstance(miss, LaserRange) and miss.distance_m is None


def test_gimbal_status_gives_angles_and_a_laser_only_for_its_own_gimbal() -> None:
    camera = sensorset.sensor_camera(GIMBAL_CAMERA)
    status = builders.gimbal_status(GIMBAL_CAMERA, camera, 12.0)
    adapter = locked_adapter(1, gimbal_seq_id=GIMBAL_CAMERA.seq_id)
    laser, sample = adapter.message(status, 7 * MS)  # the laser first: see the adapter
    assert isinstance(sample, GimbalSample) and isinstance(laser, GimbalLaserRange)
    assert sample.fx_px == pytest.approx(camera.fx_px) and laser.distance_m == 12.0
    other = locked_adapter(1, gimbal_seq_id=GIMBAL_CAMERA.seq_id + 1)
    assert other.message(status, 7 * MS) == [] and other.counts["other_gimbal"] == 1
    no_focal = dataclasses.replace(status, other_params=(0.0,) * 16)
    laser, sample = adapter.message(no_focal, 8 * MS)
    assert isinstance(sample, GimbalSample) and sample.fx_px is None
    assert isinstance(laser, GimbalLaserRange) and laser.distance_m is None


@pytest.mark.parametrize(
    ("result_type", "ident", "label"),
    [(5, 11, "pedestrian"), (1, 1, "red")],
)
def test_result_labels_are_words(result_type: int, ident: int, label: str) -> None:
    assert result_label(result_type, ident) == label


@pytest.mark.parametrize("type_id", [m.TypeId.LIDAR_BODY, m.TypeId.LIDAR_WORLD])
def test_a_lidar_scan_becomes_points_that_lie_where_the_rays_hit(type_id: int) -> None:
    """The stand-in's LiDAR over flat ground, 10 m below: through the adapter, every point
    lands on the ground in world NED (body points through the mount and the vehicle's pose)."""

    lidar = next(s for s in SENSORS if s.type_id == m.TypeId.LIDAR_BODY)
    lidar = dataclasses.replace(lidar, type_id=int(type_id))
    payload = builders.lidar_payload(lidar, STATE, [])
    cloud = decode_sensor(lidar.type_id, payload, lidar.decode_params())
    adapter = locked_adapter(1)
    (points,) = adapter.message(cloud, 9 * MS, frame_time_s=4.0, sensor=lidar)
    assert isinstance(points, LidarPoints) and len(points.points_m) == cloud.point_count > 0
    if type_id == m.TypeId.LIDAR_BODY:
        assert points.frame is PointFrame.BODY_FRD
        world = [
            g.add(STATE.position_ned_m, g.quat_rotate(STATE.quaternion_wxyz, tuple(p)))
            for p in points.points_m
        ]
    else:
        assert points.frame is PointFrame.WORLD_NED
        world = [tuple(p) for p in points.points_m]
    scale_m = lidar.other_params[0] / 32767
    assert max(abs(p[2]) for p in world) < 4 * scale_m  # on the ground, to the int16 step
    assert adapter.message(cloud, 9 * MS, sensor=lidar) == []  # untimed: dropped
    other = dataclasses.replace(cloud, copter_id=2)
    assert adapter.message(other, 9 * MS, frame_time_s=4.0, sensor=lidar) == []
    assert adapter.counts["dropped_invalid"] == 1 and adapter.counts["other_copter"] == 1


def test_a_huge_lidar_scan_is_thinned_to_the_cap() -> None:

    lidar = next(s for s in SENSORS if s.type_id == m.TypeId.LIDAR_BODY)
    lidar = dataclasses.replace(lidar, type_id=int(m.TypeId.LIDAR_WORLD))
    xyz = np.zeros((10 * MAX_LIDAR_POINTS + 7, 3), dtype=np.float32)
    xyz[0] = np.nan  # a float32 layout may carry one: dropped, not an error
    cloud = PointCloud(lidar.type_id, None, 1, 1, (0.0,) * 3, (0.0,) * 3, None, xyz, xyz[:, 0])  # type: ignore[arg-type]
    adapter = locked_adapter(1)
    (points,) = adapter.message(cloud, 9 * MS, frame_time_s=4.0, sensor=lidar)
    assert len(points.points_m) <= MAX_LIDAR_POINTS and adapter.counts["lidar_thinned"] == 1


def test_points_that_are_not_numbers_go_before_the_thinning_and_are_counted() -> None:
    """Red team rt34: the thinning kept every tenth row before the non-finite ones went, so a
    cloud padded with NaNs thinned its real points away. 100 real points behind 200,000 NaN
    rows are all kept; the NaN rows are counted, and nothing is thinned."""
    lidar = next(s for s in SENSORS if s.type_id == m.TypeId.LIDAR_BODY)
    lidar = dataclasses.replace(lidar, type_id=int(m.TypeId.LIDAR_WORLD))
    real = np.column_stack([np.arange(100.0), np.zeros(100), np.full(100, -5.0)])
    xyz = np.vstack([np.full((200_000, 3), np.nan), real]).astype(np.float32)
    cloud = PointCloud(lidar.type_id, None, 1, 1, (0.0,) * 3, (0.0,) * 3, None, xyz, xyz[:, 0])  # type: ignore[arg-type]
    adapter = locked_adapter(1)
    (points,) = adapter.message(cloud, 9 * MS, frame_time_s=4.0, sensor=lidar)
    assert np.array_equal(points.points_m, real)
    assert adapter.counts["lidar_points_invalid"] == 200_000
    assert adapter.counts["lidar_thinned"] == 0
    assert points.max_range_m == lidar.other_params[0]
    assert points.sensor_position_frd_m == lidar.sensor_pos_xyz_m


def test_a_scan_whose_sensor_sits_beyond_any_vehicle_is_one_invalid_input() -> None:
    """A Config.json position 20,000 km from the body origin (finite: read) leaves every scan
    of that sensor unusable: each is one ``dropped_invalid``, not a ``lidar`` scan as well."""
    lidar = next(s for s in SENSORS if s.type_id == m.TypeId.LIDAR_BODY)
    lidar = dataclasses.replace(
        lidar, type_id=int(m.TypeId.LIDAR_WORLD), sensor_pos_xyz_m=(2e7, 0.0, 0.0)
    )
    xyz = np.zeros((4, 3), dtype=np.float32)
    cloud = PointCloud(lidar.type_id, None, 1, 1, (0.0,) * 3, (0.0,) * 3, None, xyz, xyz[:, 0])  # type: ignore[arg-type]
    adapter = locked_adapter(1)
    assert adapter.message(cloud, 9 * MS, frame_time_s=4.0, sensor=lidar) == []
    assert (adapter.counts["dropped_invalid"], adapter.counts["lidar"]) == (1, 0)


SIM = ("127.0.0.1", 40001)
SPOOF = ("127.0.0.1", 40002)


def test_a_second_sender_of_the_pose_stream_is_a_conflict_never_a_pose() -> None:
    """Issue 17 item 1: a second local process sending the ego's state won silently."""
    adapter = locked_adapter(1)
    honest = builders.state_168(1, 3, STATE, 10.0)
    (pose, _rate) = adapter.message(honest, 100 * MS, sender=SIM)
    spoof_state = STATE._replace(position_ned_m=(1.0, 32.0, -10.0))
    (conflict,) = adapter.message(
        builders.state_168(1, 3, spoof_state, 10.01), 101 * MS, sender=SPOOF
    )
    assert isinstance(conflict, SourceConflict) and conflict.source == "pose"
    assert "40002" in conflict.detail and "40001" in conflict.detail
    assert adapter.counts["sender_conflict"] == 1
    # The kept sender's poses still flow (the world holds on the conflict meanwhile).
    items = adapter.message(builders.state_168(1, 3, STATE, 10.02), 102 * MS, sender=SIM)
    assert isinstance(items[0], PoseSample) and items[0].position_ned_m == pose.position_ned_m
    # After a second without the kept sender another may take over (a restarted CopterSim):
    # it settles 4 s (each message a conflict, the world holding), then its poses count.
    for k in range(8):
        (settle,) = adapter.message(
            builders.state_168(1, 3, STATE, 11.021 + 0.5 * k), (1_103 + 500 * k) * MS, sender=SPOOF
        )
        assert isinstance(settle, SourceConflict) and "settling" in settle.detail
    assert adapter.counts["sender_rebound"] == 8
    later = adapter.message(builders.state_168(1, 3, STATE, 15.021), 5_103 * MS, sender=SPOOF)
    assert isinstance(later[0], PoseSample)


def test_a_spoofer_who_speaks_first_in_a_silence_is_a_conflict_once_the_sender_is_back():
    """Red team rt10: CopterSim restarts (silent 1 s); a spoofer on another port speaks first
    and alone for 3 s (a PROCEED 30 m off half a second in, before). It settles: no pose of
    its counts, the world holds; CopterSim, back, is a conflict: never a vote."""
    adapter = locked_adapter(1)
    adapter.message(builders.state_168(1, 3, STATE, 10.0), 100 * MS, sender=SIM)
    spoofed = STATE._replace(position_ned_m=(1.0, 32.0, -10.0))
    (settle,) = adapter.message(builders.state_168(1, 3, spoofed, 11.2), 1_150 * MS, sender=SPOOF)
    assert isinstance(settle, SourceConflict)
    for k in range(1, 30):  # the spoofer alone for 3 s: settling, no pose
        (held,) = adapter.message(
            builders.state_168(1, 3, spoofed, 11.2 + 0.1 * k), (1_150 + 100 * k) * MS, sender=SPOOF
        )
        assert isinstance(held, SourceConflict)
    (back,) = adapter.message(builders.state_168(1, 3, STATE, 0.5), 4_100 * MS, sender=SIM)
    assert isinstance(back, SourceConflict) and "40001" in back.detail
    assert adapter.counts["sender_conflict"] == 1 and adapter.counts["sender_rebound"] == 30
    assert adapter.counts["poses"] == 1  # the honest sender's first, before the silence


@pytest.mark.parametrize(("max_skew_ppm", "followed"), [(None, False), (2000.0, True)])
def test_a_simulation_running_slow_is_followed_only_within_the_configured_bound(
    max_skew_ppm: float | None, followed: bool
) -> None:
    """A lockstep simulation 0.1 % slow (its time 1 ms a second behind the host's) through
    the adapter [rflysim] makes: by default (200 ppm) it falls behind and its poses hold
    ``jumped`` for good; with ``max_skew_ppm = 2000`` every pose after the lock is ``locked``,
    mapped no fresher than the truth and no later than its 2 ms transport."""
    setup = RflySimSetup(1) if max_skew_ppm is None else RflySimSetup(1, max_skew_ppm=max_skew_ppm)
    adapter = setup.adapter()
    start_ns, delay_ns = 1_000 * MS, 2 * MS
    out: list[tuple[float, PoseSample]] = []
    for k in range(6_000):  # 60 s of simulation time at 100 Hz
        sim_s = 100.0 + 0.01 * k
        true_host_ns = start_ns + 0.01 * k * 1e9 / (1 - 1e-3)  # when it was that time here
        items = adapter.message(
            builders.state_168(1, 3, STATE, sim_s), round(true_host_ns) + delay_ns, sender=SIM
        )
        out += [(true_host_ns, item) for item in items if isinstance(item, PoseSample)]
    assert len(out) == 6_000
    statuses = [pose.clock_status for _, pose in out]
    last_10_s = statuses[-1_000:]
    if followed:
        first = statuses.index(ClockStatus.LOCKED)
        assert first < 100 and all(status is ClockStatus.LOCKED for status in statuses[first:])
        for true_host_ns, pose in out[first:]:
            assert true_host_ns - 1 <= pose.host_ns <= true_host_ns + delay_ns + 1
    else:
        assert all(status is ClockStatus.JUMPED for status in last_10_s)


def test_a_sensor_with_two_senders_feeds_nothing_until_the_conflict_is_quiet() -> None:
    adapter = locked_adapter(1)
    reading = m.DistanceSensor(distance_m=7.5, copter_id=1)
    assert (
        len(adapter.message(reading, 10 * MS, frame_time_s=1.0, sensor=DISTANCE, sender=SIM)) == 1
    )
    assert adapter.message(reading, 20 * MS, frame_time_s=1.01, sensor=DISTANCE, sender=SPOOF) == []
    assert adapter.message(reading, 30 * MS, frame_time_s=1.02, sensor=DISTANCE, sender=SIM) == []
    assert adapter.counts["sender_conflict"] == 2
    quiet = 20 * MS + 1_000 * MS + 1
    assert len(adapter.message(reading, quiet, frame_time_s=2.02, sensor=DISTANCE, sender=SIM)) == 1


def test_sensor_readings_need_a_locked_clock_and_outliers_are_dropped_everywhere() -> None:
    """Issue 17 items 2 and 3: a stale start burst and a glitched stamp timed laser readings."""
    adapter = RflyAdapter(1)  # the real lock period
    reading = m.DistanceSensor(distance_m=7.5, copter_id=1)
    got = [
        adapter.message(
            reading, (1_000 + 10 * k) * MS, frame_time_s=1.0 + k * 0.01, sensor=DISTANCE
        )
        for k in range(40)
    ]
    first = next(k for k, items in enumerate(got) if items)
    assert 24 <= first <= 26 and adapter.counts["clock_locking"] == first
    glitch = adapter.message(reading, 1_400 * MS, frame_time_s=1.47, sensor=DISTANCE)  # 70 ms ahead
    assert glitch == [] and adapter.counts["clock_outliers"] == 1
    (after,) = adapter.message(reading, 1_410 * MS, frame_time_s=1.41, sensor=DISTANCE)
    assert isinstance(after, LaserRange) and after.host_ns == 1_410 * MS - 1_000 * MS + 1_000 * MS
    # A pose with an outlier stamp is dropped too; one of a locking clock carries its status.
    states = [builders.state_168(1, 3, STATE, 5.0 + k * 0.01) for k in range(3)]
    (pose, *_rest) = adapter.message(states[0], 2_000 * MS)
    assert isinstance(pose, PoseSample) and pose.clock_status.settling


@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 9), st.integers(0, 3), st.integers(0, 7)),
        max_size=40,
    ),
    st.integers(0, 1100),
)
def test_a_results_observation_is_the_one_its_fields_give_whatever_the_adapter_kept(
    results: list[tuple[int, int, int, int]], padding: int
) -> None:
    """The adapter keeps each target's label and key (by source, type and id, for at most
    1024 targets): every observation is still what ``VisionObservation`` gives for the
    result's fields, one target after another, after the kept ones run out."""
    adapter = GizmoAdapter()
    for ident in range(padding):  # targets seen before: the cache fills at 1024
        adapter.observation(_received(VisionResult(source_id=9, result_type=5, id=ident)))
    for source_id, result_type, ident, flags in results:
        result = VisionResult(
            source_id=source_id, result_type=result_type, id=ident, flags=flags,
            confidence=70, x=10, y=-20, w=30, h=40,
        )  # fmt: skip
        obs = adapter.observation(_received(result))
        assert obs is not None
        label = result_label(result_type, ident)
        # Tracked and not lost, but a type or id v1 does not define (the reserved tag 3, types
        # beyond 5, a colour 0 or beyond 5, a detector id not 1-3 or 10-14): a frame of its
        # source that saw nothing (rt15), and says why.
        undefined = (
            result_type == 3
            or result_type > 5
            or (result_type == 1 and not 1 <= ident <= 5)
            or (result_type == 5 and ident not in (1, 2, 3, 10, 11, 12, 13, 14))
        )
        if flags & 3 == 1 and undefined:
            truth = VisionObservation(
                source_id, result_type, ident, label, 0, False, False,
                False, 0, 0, 0, 0, 5 * MS, 6 * MS, 0, True, False, HoldReason.INVALID_RESULT,
            )  # fmt: skip
        else:
            truth = VisionObservation(
                source_id, result_type, ident, label, 70, flags & 1 != 0, flags & 2 != 0,
                is_target(result_type, ident), 10, -20, 30, 40, 5 * MS, 6 * MS, 0, True, False,
            )  # fmt: skip
        assert obs == truth
        assert obs.key == f"{source_id}:{result_type}:{ident}" == truth.key


def _received(result: VisionResult) -> ReceivedResult:
    return ReceivedResult(
        result, 6 * MS, 5 * MS, 0, 0, ClockStatus.LOCKED, SequenceEvent.IN_ORDER, 7 * MS
    )


def test_a_config_json_ranging_sensor_off_the_vehicle_is_one_config_error() -> None:
    """Live, the same rule as a capture's (``RflySimSetup``): a ConfigError naming
    ``rflysim.config`` and the sensor, which the command prints as one line (exit 2)."""
    ground = dataclasses.replace(DISTANCE, target_mount_type=2)
    with pytest.raises(ConfigError, match=r"VisionSensors\[\d+\] \(SeqID \d+\)") as raised:
        RflySimSetup(1, range_sensors=(ground,))
    assert raised.value.key == "rflysim.config"
    assert RflySimSetup(1, range_sensors=(DISTANCE,)).range_sensors == (DISTANCE,)
