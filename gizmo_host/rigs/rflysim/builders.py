"""Messages from the ground truth, with rfly_link's own encoders: pure functions, no I/O.

CopterSim's side (the 168-byte state, odometry and IMU replies, the heartbeat) comes from a
vehicle's :class:`~gizmo_host.rigs.rflysim.kinematics.SimVehicleState`; RflySim3D's side (the gimbal
status, the distance sensor, TypeID 30 boxes, LiDAR clouds) from ray casts and projections of the
scenario (:mod:`gizmo_host.rigs.rflysim.bodies`, :mod:`gizmo_host.rigs.rflysim.views`). Sensor
payloads leave as vision-sensor fragments made by :func:`rfly_link.reassembly.fragment_payload`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gizmo_host.rigs.rflysim import sensorset
from gizmo_host.rigs.rflysim.bodies import Hit, Placed, cast
from gizmo_host.rigs.rflysim.kinematics import GRAVITY_M_S2, SimVehicleState
from gizmo_host.rigs.rflysim.views import camera_pose, direction_ned, image_box
from hil_geometry.pinhole import Pinhole
from hil_geometry.rotations import Vec3, add, quat_multiply, quat_rotate, quat_rotate_inverse, sub
from rfly_link import messages as m
from rfly_link.config_json import VisionSensorConfig
from rfly_link.messages import TypeId
from rfly_link.reassembly import FRAGMENT_SIZE, fragment_payload
from rfly_link.sensors import INT16_FULL_SCALE, PointLayout, encode_point_cloud, encode_targets

EARTH_RADIUS_M = 6378137.0
GPS_HOME = (40.1540302, 116.2593683, 50.0)  # the stand-in's map origin: lat, lon deg, alt m
HOVER_RPM = 5000.0
ODOM_VALID = (
    m.OdomFlags.POSITION_VALID
    | m.OdomFlags.ATTITUDE_VALID
    | m.OdomFlags.VELOCITY_VALID
    | m.OdomFlags.ANGULAR_VELOCITY_VALID
)
LIDAR_ELEVATIONS_DEG = (-10.0, -40.0)  # first and last vertical ray
_I32 = 2**31


def gps_of(position_ned_m: Vec3, home: Vec3 = GPS_HOME) -> Vec3:
    """Flat-earth latitude, longitude (degrees) and altitude (metres) of a NED position."""
    lat0, lon0, alt0 = home
    n, e, d = position_ned_m
    lat = lat0 + math.degrees(n / EARTH_RADIUS_M)
    lon = lon0 + math.degrees(e / (EARTH_RADIUS_M * math.cos(math.radians(lat0))))
    return (lat, lon, alt0 - d)


def state_168(
    copter_id: int, vehicle_type: int, state: SimVehicleState, sim_time_s: float, *, motors: int = 4
) -> m.SOut2Simulator:
    """CopterSim's 168-byte true state (``30100 + 2N - 1``)."""
    force = math.sqrt(sum(f * f for f in state.specific_force_frd_m_s2))
    rpm = (HOVER_RPM * math.sqrt(force / GRAVITY_M_S2),) * motors  # thrust grows as rpm²
    return m.SOut2Simulator(
        copter_id=copter_id,
        vehicle_type=vehicle_type,
        velocity_ned_m_s=state.velocity_ned_m_s,
        euler_rad=state.euler_rad,
        quaternion_wxyz=state.quaternion_wxyz,
        motor_rpm=rpm + (0.0,) * (8 - motors),
        acceleration_frd_m_s2=state.specific_force_frd_m_s2,
        angular_rate_frd_rad_s=state.angular_rate_frd_rad_s,
        runned_time_s=sim_time_s,
        position_ned_m=state.position_ned_m,
        position_gps=gps_of(state.position_ned_m),
    )


def odometry(
    sequence: int, copter_id: int, state: SimVehicleState, sim_time_s: float, *, discontinuity: bool
) -> m.OdomReply:
    """The 88-byte odometry reply: world NED, body FRD (``frame_type`` 1), all valid."""
    flags = ODOM_VALID | (m.OdomFlags.DISCONTINUITY if discontinuity else 0)
    return m.OdomReply(
        sequence=sequence % 2**32,
        simulation_time_s=sim_time_s,
        copter_id=copter_id,
        frame_type=m.OdomFrameType.NED_FRD,
        flags=int(flags),
        position_ned_m=state.position_ned_m,
        quaternion_wxyz=state.quaternion_wxyz,
        velocity_ned_m_s=state.velocity_ned_m_s,
        angular_velocity_frd_rad_s=state.angular_rate_frd_rad_s,
    )


def imu(sequence: int, state: SimVehicleState, sim_time_s: float) -> m.ImuReply:
    """The 40-byte IMU reply: specific force and body rate in FRD."""
    return m.ImuReply(
        sequence=sequence % _I32,
        simulation_time_s=sim_time_s,
        acceleration_frd_m_s2=state.specific_force_frd_m_s2,
        angular_rate_frd_rad_s=state.angular_rate_frd_rad_s,
    )


def heartbeat(copter_id: int, start_ms: int, now_ms: int, count: int) -> m.RflyTimeStmp:
    """CopterSim's ``RflyTimeStmp`` to port 20005: wall-clock milliseconds and a counter."""
    return m.RflyTimeStmp(
        copter_id=copter_id,
        sys_start_time_ms=start_ms,
        sys_current_time_ms=now_ms,
        heart_count=count % _I32,
    )


def sensor_ray(
    sensor: VisionSensorConfig, ego: SimVehicleState, axis: Vec3 = (1.0, 0.0, 0.0)
) -> tuple[Vec3, Vec3]:
    """A ray from the sensor along ``axis`` (sensor axes): its NED origin and unit direction."""
    origin = add(ego.position_ned_m, quat_rotate(ego.quaternion_wxyz, sensor.sensor_pos_xyz_m))
    q = quat_multiply(ego.quaternion_wxyz, sensorset.mount_quaternion(sensor))
    return origin, direction_ned(q, axis)


def laser_hit(
    sensor: VisionSensorConfig,
    ego: SimVehicleState,
    bodies: Sequence[Placed],
    ground_down_m: float,
    max_range_m: float,
) -> Hit | None:
    origin, direction = sensor_ray(sensor, ego)
    return cast(origin, direction, bodies, ground_down_m=ground_down_m, max_range_m=max_range_m)


def distance_payload(
    sensor: VisionSensorConfig,
    ego: SimVehicleState,
    bodies: Sequence[Placed],
    ground_down_m: float = 0.0,
) -> bytes:
    """TypeID 5 (56 B): the range along the sensor's axis; 0 m when nothing is in range."""
    max_range = sensor.other_params[0] or sensorset.DEFAULT_DISTANCE_RANGE_M
    origin, _ = sensor_ray(sensor, ego)
    hit = laser_hit(sensor, ego, bodies, ground_down_m, max_range)
    rpy = sensorset.mount_rpy_deg(sensor)
    yaw = math.degrees(ego.euler_rad[2])
    return m.DistanceSensor(
        distance_m=0.0 if hit is None else hit.distance_m,
        copter_id=sensor.target_copter,
        ray_start_m=origin,
        angle_euler=(rpy[0], rpy[1], rpy[2] + yaw),  # degrees; the mount turned with the nose
        impact_point_m=origin if hit is None else hit.point_ned_m,
        box_origin_m=origin if hit is None else hit.object_center_ned_m,
    ).encode()


def boxes_payload(
    sensor: VisionSensorConfig,
    camera: Pinhole,
    ego: SimVehicleState,
    bodies: Sequence[Placed],
) -> bytes:
    """TypeID 30: the vehicles in the image as pixel boxes, nearest first.

    ``otherParams[0]`` is the detection range and ``[1]`` the most boxes (0: no limit); the
    credibility is the part of the box inside the image.
    """
    pose = camera_pose(camera, ego)
    max_range = sensor.other_params[0] or math.inf
    limit = int(sensor.other_params[1]) or len(bodies)
    found = []
    for placed in bodies:
        distance = math.dist(placed.position_ned_m, pose.position_ned_m)
        if distance > max_range:
            continue
        box = image_box(camera, pose, placed)
        if box is not None:
            found.append((distance, box))
    found.sort(key=lambda pair: pair[0])
    targets = [
        m.BoxTarget(b.copter_id, b.visible_fraction, b.min_x, b.min_y, b.max_x, b.max_y)
        for _, b in found[:limit]
    ]
    return encode_targets(targets)


def lidar_directions(sensor: VisionSensorConfig) -> list[Vec3]:
    """Unit rays in sensor axes: ``DataWidth`` across ``CameraFOV``, ``DataHeight`` down."""
    across = max(1, sensor.data_width)
    down = max(1, sensor.data_height)
    fov = sensor.camera_fov_deg or 360.0
    if fov >= 360.0:
        azimuths = [360.0 * i / across for i in range(across)]
    else:
        azimuths = [-fov / 2 + fov * i / max(1, across - 1) for i in range(across)]
    top, bottom = LIDAR_ELEVATIONS_DEG
    elevations = [top + (bottom - top) * j / max(1, down - 1) for j in range(down)]
    out = []
    for el in elevations:
        ce, se = math.cos(math.radians(el)), math.sin(math.radians(el))
        for az in azimuths:
            out.append((ce * math.cos(math.radians(az)), ce * math.sin(math.radians(az)), -se))
    return out


def lidar_payload(
    sensor: VisionSensorConfig,
    ego: SimVehicleState,
    bodies: Sequence[Placed],
    ground_down_m: float = 0.0,
) -> bytes:
    """TypeID 20 (points in sensor axes from the sensor) or 21 (world NED points), int16.

    Scaled by ``otherParams[0]`` (the range); rays with no return within it send no point. With
    ``SendProtocol[7] > 0`` each point carries the CopterID it hit (0: the ground).
    """
    scale = sensor.other_params[0]
    origin, _ = sensor_ray(sensor, ego)
    q_sensor = quat_multiply(ego.quaternion_wxyz, sensorset.mount_quaternion(sensor))
    rows = []
    for axis in lidar_directions(sensor):
        direction = quat_rotate(q_sensor, axis)
        hit = cast(origin, direction, bodies, ground_down_m=ground_down_m, max_range_m=scale)
        if hit is None:
            continue
        if sensor.type_id == TypeId.LIDAR_WORLD:
            point = hit.point_ned_m
        else:
            point = quat_rotate_inverse(q_sensor, sub(hit.point_ned_m, origin))
        rows.append((*point, float(hit.copter_id)))
    with_stencil = sensor.send_protocol[7] > 0
    layout = PointLayout.PREFIX36_INT16_XYZS if with_stencil else PointLayout.PREFIX36_INT16_XYZ
    points = np.array(rows, dtype=np.float64).reshape(-1, 4)
    ints = np.empty((points.shape[0], 4), dtype=np.int16)
    xyz = np.rint(points[:, :3] * (INT16_FULL_SCALE / scale))
    ints[:, :3] = np.clip(xyz, -INT16_FULL_SCALE, INT16_FULL_SCALE)
    ints[:, 3] = points[:, 3]
    return encode_point_cloud(
        layout,
        ints if with_stencil else ints[:, :3],
        copter_id=sensor.target_copter,
        axis_type=0,
        position_m=ego.position_ned_m,
        euler_rad=ego.euler_rad,
    )


def gimbal_status(
    sensor: VisionSensorConfig, camera: Pinhole, laser_range_m: float
) -> m.GimbalStatus:
    """The gimbal's status (148 B, port 20006): its entry's fields, attitude and intrinsics.

    ``other_params``: [3] fx, [4] fy, [5] width, [6] height, [7] laser range (m, 0 for no
    return), as docs/protocol-decisions.md names them (version-dependent in RflySim3D).
    """
    other = [0.0] * 16
    other[3], other[4] = camera.fx_px, camera.fy_px
    other[5], other[6] = float(sensor.data_width), float(sensor.data_height)
    other[7] = laser_range_m
    return m.GimbalStatus(
        seq_id=sensor.seq_id,
        type_id=sensor.type_id,
        target_copter=sensor.target_copter,
        target_mount_type=sensor.target_mount_type,
        data_width=sensor.data_width,
        data_height=sensor.data_height,
        data_check_freq=sensor.data_check_freq,
        send_protocol=sensor.send_protocol,
        camera_fov_deg=sensor.camera_fov_deg,
        sensor_pos_xyz_m=sensor.sensor_pos_xyz_m,
        eular_or_quat=0.0,
        sensor_ang_eular=sensorset.mount_rpy_deg(sensor),
        sensor_ang_quat=sensorset.mount_quaternion(sensor),
        other_params=tuple(other),
    )


def sensor_datagrams(
    sensor: VisionSensorConfig, payload: bytes, frame_id: int, sim_time_s: float
) -> list[bytes]:
    """A sensor frame as 32-byte-header fragments of ``SendProtocol[6]`` bytes (or 60000)."""
    return fragment_payload(
        payload,
        header_size=32,
        frame_id=frame_id % _I32,
        timestamp_s=sim_time_s,
        fragment_size=sensorset.fragment_size(sensor) or FRAGMENT_SIZE,
    )
