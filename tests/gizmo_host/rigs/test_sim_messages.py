"""The stand-in's core without sockets: every datagram it emits decodes with rfly_link's own
decoders (dispatch by port, the reassembler, the sensor decoders) back to the ground truth;
streams keep their rates on any timeline; requests are answered the way CopterSim does."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion.geometry import quat_rotate
from gizmo_host.rigs.rflysim import (
    Datagram,
    Rates,
    SimTime,
    StandIn,
    build_scenario,
    builders,
    sensorset,
)
from gizmo_host.rigs.rflysim.views import camera_pose, project
from rfly_link import dispatch, ports
from rfly_link import messages as m
from rfly_link.config_json import VisionSensorConfig
from rfly_link.reassembly import Reassembler
from rfly_link.sensors import PointCloud, TargetList, decode_sensor

SECOND = 1_000_000_000
SENDER = ("127.0.0.9", 40000)
CONTROL = ports.coptersim_control_port(1)


def run(stand_in: StandIn, until_ns: int, wall_ms: int = 1_700_000_000_000) -> list[Datagram]:
    """Poll exactly when due, as a punctual runner would; every datagram sent."""
    out: list[Datagram] = []
    t = 0
    while t <= until_ns:
        out += stand_in.poll(t, wall_ms + t // 1_000_000).datagrams
        t = stand_in.next_due_ns()
    return out


def sensor_values(
    stand_in: StandIn, datagrams: list[Datagram]
) -> dict[int, list[tuple[VisionSensorConfig, object, float]]]:
    """Sensor frames reassembled per port (one reassembler each, as one receiver per port)."""
    by_port = {s.port: s for s in stand_in.sensors.simulated}
    reassemblers = defaultdict(Reassembler)
    values: dict[int, list[tuple[VisionSensorConfig, object, float]]] = defaultdict(list)
    for d in datagrams:
        sensor = by_port.get(d.address[1])
        if sensor is None or d.kind == "gimbal":
            continue
        for frame in reassemblers[d.address[1]].feed(memoryview(d.data), SENDER, 0):
            value = decode_sensor(sensor.type_id, frame.payload, sensor.decode_params())
            values[sensor.type_id].append((sensor, value, frame.timestamp_s))
    return values


ORBIT = build_scenario("orbit", time=SimTime(start_s=50.0))


def test_every_datagram_decodes_on_its_port_to_the_truth() -> None:
    stand_in = StandIn(ORBIT)
    datagrams = run(stand_in, SECOND)
    kinds = Counter(d.kind for d in datagrams)
    # 1 s at the default rates, both ends included: 100 Hz states, 1 Hz heartbeats per vehicle.
    assert kinds["state"] == 101 and kinds["other_state"] == 202
    assert kinds["heartbeat"] == 6 and kinds["gimbal"] == 11
    states = {}
    for d in datagrams:
        if d.kind in ("state", "other_state"):
            msg = dispatch.decode(d.data, port=d.address[1])
            assert isinstance(msg, m.SOut2Simulator)
            assert d.address == ("127.0.0.1", ports.coptersim_state_port(msg.copter_id))
            states.setdefault(msg.copter_id, []).append(msg)
    assert sorted(states) == [1, 2, 3]
    for copter_id, msgs in states.items():
        for msg in msgs[::10]:
            truth = ORBIT.truth(msg.runned_time_s - 50.0)
            state = truth.ego if copter_id == 1 else truth.target(copter_id)
            assert msg.position_ned_m == pytest.approx(state.state.position_ned_m, abs=1e-9)
            assert msg.quaternion_wxyz == pytest.approx(state.state.quaternion_wxyz, abs=1e-6)
            lat, lon, alt = msg.position_gps
            assert alt == pytest.approx(builders.GPS_HOME[2] - msg.position_ned_m[2])
            assert lat > 0 and lon > 0


def test_heartbeats_count_per_vehicle_on_the_wall_clock() -> None:
    stand_in = StandIn(ORBIT, rates=Rates(heartbeat_hz=2.0))
    beats = [
        dispatch.decode(d.data, port=d.address[1])
        for d in run(stand_in, 2 * SECOND, wall_ms=1_000)
        if d.kind == "heartbeat"
    ]
    assert all(isinstance(b, m.RflyTimeStmp) for b in beats)
    by_copter: dict[int, list[m.RflyTimeStmp]] = defaultdict(list)
    for b in beats:
        assert isinstance(b, m.RflyTimeStmp)
        by_copter[b.copter_id].append(b)
    for copter_beats in by_copter.values():
        assert [b.heart_count for b in copter_beats] == [0, 1, 2, 3, 4]
        assert [b.running_ms for b in copter_beats] == [0, 500, 1000, 1500, 2000]
        assert {b.sys_start_time_ms for b in copter_beats} == {1_000}


def test_the_gimbal_status_carries_its_entry_and_the_laser_range() -> None:
    stand_in = StandIn(ORBIT)
    (gimbal,) = stand_in.sensors.of_type(m.TypeId.GIMBAL)
    (status,) = (d for d in stand_in.poll(0).datagrams if d.kind == "gimbal")
    msg = dispatch.decode(status.data, port=ports.RFLYSIM3D_OUT_PORT)
    assert isinstance(msg, m.GimbalStatus)
    assert (msg.seq_id, msg.type_id, msg.width_px, msg.height_px) == (4, 9, 1280.0, 720.0)
    assert msg.sensor_ang_eular == pytest.approx((0.0, -45.0, 0.0), abs=1e-5)
    camera = sensorset.sensor_camera(gimbal)
    assert msg.fx_px == pytest.approx(camera.fx_px)
    # Nose on the car, 10 m out and 10 m up: the laser, 45° down, ends on the car's roof.
    truth = ORBIT.truth(0.0)
    origin, direction = builders.sensor_ray(gimbal, truth.ego.state)
    hit = [origin[i] + direction[i] * msg.laser_range_m for i in range(3)]
    assert hit[2] == pytest.approx(-1.5, abs=1e-4)  # the top of a 1.5 m high car
    assert abs(hit[0]) < 2.25 and abs(hit[1]) < 0.9


def test_the_distance_sensor_ranges_along_its_axis_to_the_target_or_the_ground() -> None:
    stand_in = StandIn(ORBIT)
    values = sensor_values(stand_in, run(stand_in, 15 * SECOND))[m.TypeId.DISTANCE]
    assert len(values) == 15 * 20 + 1
    hits = Counter()
    for _, value, _ in values:
        assert isinstance(value, m.DistanceSensor)
        start, impact = np.array(value.ray_start_m), np.array(value.impact_point_m)
        assert np.linalg.norm(impact - start) == pytest.approx(value.distance_m, rel=1e-5)
        on_ground = abs(impact[2]) < 1e-4
        hits["ground" if on_ground else "car"] += 1
        if not on_ground:  # the car's box: its centre is the box origin
            assert value.box_origin_m == pytest.approx((0.0, 0.0, -0.75))
    assert hits["car"] > 100 and hits["ground"] > 10  # the spin sweeps the laser off the car


def test_the_boxes_hold_the_projected_targets() -> None:
    stand_in = StandIn(ORBIT)
    (sensor,) = stand_in.sensors.of_type(m.TypeId.BOX_TARGETS)
    camera = sensorset.sensor_camera(sensor)
    values = sensor_values(stand_in, run(stand_in, 20 * SECOND))[m.TypeId.BOX_TARGETS]
    assert len(values) == 20 * 30 + 1
    seen = Counter()
    for _, value, sim_time in values:
        assert isinstance(value, TargetList)
        truth = ORBIT.truth(sim_time - 50.0)
        pose = camera_pose(camera, truth.ego.state)
        for box in value.targets:
            assert isinstance(box, m.BoxTarget)
            seen[box.copter_id] += 1
            centre = project(camera, pose, truth.target(box.copter_id).state.position_ned_m)
            assert centre is not None
            assert box.min_x - 1e-3 <= centre[0] <= box.max_x + 1e-3 or box.credibility < 1
            assert box.min_y - 1e-3 <= centre[1] <= box.max_y + 1e-3 or box.credibility < 1
            assert -0.5 <= box.min_x < box.max_x <= 639.5 and -0.5 <= box.min_y < box.max_y <= 479.5
            assert 0 < box.credibility <= 1
    # The car is in view but for the spin; nobody else gets a box for CopterID 1.
    assert seen[2] > 400 and 1 not in seen
    assert seen[2] < len(values)


def test_the_lidar_cloud_is_the_ground_and_the_car_around_the_ego() -> None:
    stand_in = StandIn(ORBIT)
    values = sensor_values(stand_in, run(stand_in, SECOND))[m.TypeId.LIDAR_BODY]
    assert len(values) == 11
    for sensor, cloud, sim_time in values:
        assert isinstance(cloud, PointCloud)
        truth = ORBIT.truth(sim_time - 50.0)
        assert cloud.copter_id == 1 and cloud.position_m == pytest.approx(
            truth.ego.state.position_ned_m, abs=1e-5
        )
        assert 0 < cloud.point_count <= 32 * 4
        origin, _ = builders.sensor_ray(sensor, truth.ego.state)
        q = truth.ego.state.quaternion_wxyz  # the LiDAR's mount is level: body axes
        for xyz, stencil in zip(cloud.xyz_m, cloud.stencil, strict=True):
            world = [
                o + r for o, r in zip(origin, quat_rotate(q, tuple(map(float, xyz))), strict=True)
            ]
            if stencil == 0:
                assert world[2] == pytest.approx(0.0, abs=0.01)  # int16 steps of 60/32767 m
            else:
                assert stencil == 2 and -1.5 - 0.01 <= world[2] <= 0.01


def test_streams_keep_their_rates_and_skip_rather_than_burst_when_polled_late() -> None:
    stand_in = StandIn(ORBIT, rates=Rates(others_hz=0, heartbeat_hz=0, gimbal_hz=0, truth_hz=0))
    assert Counter(d.kind for d in run(stand_in, 2 * SECOND))["state"] == 201
    late = StandIn(ORBIT, rates=Rates(others_hz=0, lidar_hz=0, boxes_hz=0, distance_hz=0))
    late.poll(0)
    out = late.poll(SECOND // 2)  # half a second late: one state, not fifty
    assert Counter(d.kind for d in out.datagrams)["state"] == 1
    assert late.stats.skipped["state"] == 49
    assert late.next_due_ns() == SECOND // 2 + 10_000_000  # back on the 100 Hz grid


def test_a_rate_of_zero_turns_a_stream_off_and_bad_rates_are_refused() -> None:
    quiet = StandIn(
        ORBIT,
        rates=Rates(
            state_hz=0,
            others_hz=0,
            heartbeat_hz=0,
            gimbal_hz=0,
            distance_hz=0,
            boxes_hz=0,
            lidar_hz=0,
            truth_hz=0,
        ),
    )
    assert quiet.poll(0).datagrams == [] and quiet.next_due_ns() == 2**63 - 1
    with pytest.raises(ValueError, match="state_hz"):
        Rates(state_hz=-1)
    with pytest.raises(ValueError, match="truth_hz"):
        Rates(truth_hz=5000)


def request(sensor: m.CopterSimSensor, rate_hz: int, ip: str = "127.0.0.1", port: int = 0) -> bytes:
    address = tuple(int(part) for part in ip.split("."))
    return m.SensorReqCopterSim(
        sensor_type=int(sensor), update_freq_hz=rate_hz, port=port, ip=address
    ).encode()


def quiet_stand_in(time: SimTime | None = None) -> StandIn:
    rates = Rates(
        state_hz=0,
        others_hz=0,
        heartbeat_hz=0,
        gimbal_hz=0,
        distance_hz=0,
        boxes_hz=0,
        lidar_hz=0,
        truth_hz=0,
    )
    scenario = build_scenario("orbit", time=SimTime() if time is None else time)
    return StandIn(scenario, rates=rates)


def test_odometry_streams_at_the_requested_rate_to_the_reply_port() -> None:
    stand_in = quiet_stand_in(SimTime(start_s=10.0, jump_at_s=0.5, jump_by_s=3.0))
    stand_in.receive(request(m.CopterSimSensor.ODOMETRY, 50), SENDER, CONTROL, 100_000_000)
    replies = run(stand_in, SECOND)
    # The SDK's default reply IP (127.0.0.1) is answered to the sender; port 0 is 31000 + N - 1.
    assert {d.address for d in replies} == {(SENDER[0], ports.coptersim_reply_port(1))}
    odoms = [dispatch.decode(d.data, port=31000) for d in replies]
    assert all(isinstance(o, m.OdomReply) for o in odoms)
    assert len(odoms) == 46  # from 0.1 s to 1.0 s at 50 Hz
    assert [o.sequence for o in odoms] == list(range(46))  # type: ignore[union-attr]
    flagged = [o.simulation_time_s for o in odoms if o.discontinuity]  # type: ignore[union-attr]
    assert flagged == [pytest.approx(13.5)]  # once, on the first reply after the jump
    for o in odoms:
        assert isinstance(o, m.OdomReply)
        assert o.copter_id == 1 and o.frame_type == 1 and o.pose_valid
        t = o.simulation_time_s - 10.0 - (3.0 if o.simulation_time_s > 13.4 else 0.0)
        state = stand_in.scenario.truth(t).ego.state
        assert o.position_ned_m == pytest.approx(state.position_ned_m, abs=1e-9)
        assert o.velocity_ned_m_s == pytest.approx(state.velocity_ned_m_s, abs=1e-5)


def test_imu_replies_go_where_the_request_says_and_a_repeat_changes_the_rate() -> None:
    stand_in = quiet_stand_in()
    stand_in.receive(request(m.CopterSimSensor.IMU, 10, "10.1.2.3", 5555), SENDER, CONTROL, 0)
    stand_in.receive(request(m.CopterSimSensor.IMU, 100, "10.1.2.3", 5555), SENDER, CONTROL, 0)
    replies = run(stand_in, SECOND // 10)
    assert {d.address for d in replies} == {("10.1.2.3", 5555)}
    imus = [dispatch.decode(d.data, port=31000) for d in replies]
    assert len(imus) == 11 and stand_in.stats.subscriptions == 1
    for imu in imus:
        assert isinstance(imu, m.ImuReply)
        assert math.hypot(*imu.acceleration_frd_m_s2) == pytest.approx(
            math.hypot(9.80665, 0.4), rel=1e-5
        )


def test_the_other_vehicles_answer_on_their_own_control_ports() -> None:
    stand_in = quiet_stand_in()
    assert stand_in.control_ports() == {30100: 1, 30102: 2, 30104: 3}
    stand_in.receive(request(m.CopterSimSensor.ODOMETRY, 10), SENDER, 30102, 0)
    (reply,) = stand_in.poll(0).datagrams
    odom = dispatch.decode(reply.data, port=31001)
    assert isinstance(odom, m.OdomReply) and odom.copter_id == 2
    assert reply.address == (SENDER[0], ports.coptersim_reply_port(2))


def test_bad_requests_are_counted_by_cause_and_answered_by_nothing() -> None:
    stand_in = quiet_stand_in()
    stand_in.receive(request(m.CopterSimSensor.IMU, 1001), SENDER, CONTROL, 0)
    stand_in.receive(b"\x00" * 7, SENDER, CONTROL, 0)
    stand_in.receive(request(m.CopterSimSensor.IMU, 10), SENDER, 30110, 0)
    stand_in.receive(m.SILIntFloat.yaw(1, 0.5).encode(), SENDER, CONTROL, 0)
    odd = m.SensorReqCopterSim(sensor_type=7, update_freq_hz=10, port=5000, ip=(127, 0, 0, 1))
    stand_in.receive(odd.encode(), SENDER, CONTROL, 0)
    assert stand_in.poll(0).datagrams == []
    assert stand_in.stats.drops == {
        "bad_rate": 1,
        "wrong_length": 1,
        "not_a_control_port": 1,
        "ignored_SILIntFloat": 1,
        "unknown_sensor_type": 1,
    }
    assert stand_in.stats.requests == 0


def test_subscriptions_are_bounded() -> None:
    stand_in = quiet_stand_in()
    for port in range(6000, 6020):
        stand_in.receive(request(m.CopterSimSensor.IMU, 10, port=port), SENDER, CONTROL, 0)
    assert stand_in.stats.subscriptions == 16 and stand_in.stats.drops == {"subscriptions_full": 4}
    assert len(stand_in.poll(0).datagrams) == 16


@given(st.binary(max_size=200), st.sampled_from([30100, 30102, 30104, 30106, 20005]))
def test_any_bytes_on_any_port_are_a_counted_drop_or_a_request(data: bytes, port: int) -> None:
    stand_in = quiet_stand_in()
    stand_in.receive(data, SENDER, port, 0)
    stats = stand_in.stats
    assert stats.requests + sum(stats.drops.values()) == 1
