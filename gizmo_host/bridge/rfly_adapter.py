"""rfly_link's messages for one vehicle as :mod:`fusion` inputs.

Pure, like :mod:`gizmo_host.bridge.world_adapters`. As :mod:`fusion.inputs` describes:

- CopterSim state (168 B or 112 B) or odometry (88 B) -> ``PoseSample``, its simulation time
  mapped to the host clock by one ``SimClockEstimator`` per stream. Only the configured pose
  source becomes poses (two streams with their own epochs would fight over one history):
  odometry when it is requested, otherwise the state. The source's angular rate, and every IMU
  reply, become ``ImuSample``;
- distance sensor (TypeID 5) frames -> ``LaserRange`` with the Config.json mount, timed by
  the frame's RflySim3D simulation time (its own estimator per sensor);
- the gimbal status (port 20006) -> ``GimbalSample`` and ``GimbalLaserRange``, at its
  arrival time (the status carries none).

Two rules keep a stream honest (docs/world-safety.md):

- **one sender per stream**: the first sender (address and port) of each of this vehicle's
  streams is kept while it is heard; another sender meanwhile is a conflict. Its messages are
  dropped, a pose stream's conflict becomes a ``SourceConflict`` (the world HOLDs
  ``pose_conflict``) and a sensor's readings are all dropped until the conflict has been
  quiet for a second (:mod:`gizmo_host.bridge.senders`). After that long without its sender a
  stream may change sender (a restarted CopterSim sends from a new port);
- **only locked clocks time a reading**: a distance or LiDAR frame (or an IMU reply) is used
  only while its stream's sim clock is LOCKED; an outlier stamp is dropped on every stream.
  Poses carry their clock status to the world, which HOLDs on it.

What cannot be used is counted by cause in ``counts``, never raised.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from typing import Any, Final

import numpy as np

from fusion import (
    GimbalLaserRange,
    GimbalSample,
    ImuSample,
    Input,
    InvalidInput,
    LaserRange,
    LidarPoints,
    PointFrame,
    PoseSample,
    SensorMount,
    SimClockEstimator,
    SourceConflict,
)
from fusion.geometry import quat_to_matrix
from fusion.inputs import MAX_POSITION_M
from gizmo_core.clock import ClockStatus
from gizmo_host.bridge.rfly_mounts import (
    attitude,
    distance_range_m,
    finite,
    quat,
    sensor_mount,
    sensor_rpy_deg,
    vec3,
)
from gizmo_host.bridge.senders import Sender, SenderLatch
from rfly_link import messages as m
from rfly_link.config_json import VisionSensorConfig
from rfly_link.sensors import PointCloud

# A LiDAR scan is searched once per target and frame: larger clouds are thinned evenly (and
# counted) so one placement stays in the per-input budget (10^6 points cost ~190 ms here).
MAX_LIDAR_POINTS: Final = 20_000

_LIDAR_FRAMES: Final = {
    int(m.TypeId.LIDAR_BODY): PointFrame.BODY_FRD,
    int(m.TypeId.LIDAR_WORLD): PointFrame.WORLD_NED,
}
_UNUSABLE: Final = {
    ClockStatus.CONVERGING: "clock_locking",
    ClockStatus.RESYNC: "clock_locking",
    ClockStatus.JUMPED: "clock_jumped",
    ClockStatus.OUTLIER: "clock_outliers",
}


class RflyPoseStream(Enum):
    """Which CopterSim stream gives the vehicle's pose."""

    STATE = "state"  # 30100 + 2N - 1: SOut2Simulator (168 B) or the 112 B state
    ODOMETRY = "odometry"  # 31000 + N - 1: replies to the odometry request (88 B)
    NONE = "none"  # the pose comes from another source ([world] pose_source = "mavlink")


class RflyAdapter:
    """rfly_link messages for one vehicle as fusion inputs, one sim clock per stream."""

    def __init__(
        self,
        copter_id: int,
        *,
        pose_source: RflyPoseStream = RflyPoseStream.STATE,
        gimbal_seq_id: int | None = None,
        estimator: Callable[[], SimClockEstimator] = SimClockEstimator,
    ) -> None:
        """``gimbal_seq_id``: accept only this gimbal's status (None: any of this vehicle's)."""
        self.copter_id = copter_id
        self.pose_source = pose_source
        self._gimbal_seq_id = gimbal_seq_id
        self._new_estimator = estimator
        self._clocks: dict[str, SimClockEstimator] = {}
        self._latch = SenderLatch()
        self._mounts: dict[int, SensorMount] = {}
        self.last_odometry_rx_ns: int | None = None  # any odometry reply: it is streaming
        self.last_imu_rx_ns: int | None = None
        self.counts: dict[str, int] = dict.fromkeys(
            (
                "poses",
                "imu",
                "laser",
                "lidar",
                "lidar_thinned",
                "lidar_points_invalid",
                "gimbal",
                "not_pose_source",
                "other_copter",
                "other_gimbal",
                "sender_conflict",
                "sender_rebound",
                "clock_locking",
                "clock_jumped",
                "clock_outliers",
                "dropped_invalid",
                "ignored",
            ),
            0,
        )
        self._sender: Sender | None = None  # the message being adapted's
        self._handlers: dict[type, Callable[[Any, int, float | None, Any], list[Input]]] = {
            m.SOut2Simulator: self._state,
            m.SOut2SimulatorSimpleTime: self._state,
            m.OdomReply: self._odometry,
            m.ImuReply: self._imu,
            m.DistanceSensor: self._distance,
            m.GimbalStatus: self._gimbal,
            PointCloud: self._lidar,
        }

    def clock_stats(self) -> dict[str, dict[str, Any]]:
        """Each stream's sim clock mapping: epoch, jumps, resets, samples, offset."""
        return {name: clock.stats()._asdict() for name, clock in self._clocks.items()}

    def message(
        self,
        value: object,
        rx_ns: int,
        *,
        frame_time_s: float | None = None,
        sensor: VisionSensorConfig | None = None,
        sender: Sender | None = None,
    ) -> list[Input]:
        """The inputs one received message gives (often none); never raises on its content.

        ``frame_time_s`` and ``sensor``: a vision-sensor frame's simulation time and
        Config.json entry (``rfly_link.io.Event.frame`` and ``.sensor``); ``sender``: its
        source address (``Event.sender``; ``None`` skips the one-sender rule).
        """
        handler = self._handlers.get(type(value))
        if handler is None:
            self.counts["ignored"] += 1  # e.g. the GPS origin or a crash report
            return []
        self._sender = sender
        try:
            return handler(value, rx_ns, frame_time_s, sensor)
        except InvalidInput:
            self.counts["dropped_invalid"] += 1
            return []

    def _clock(self, stream: str) -> SimClockEstimator:
        clock = self._clocks.get(stream)
        if clock is None:  # a fixed set of streams: state, odometry, imu, one per sensor
            clock = self._clocks[stream] = self._new_estimator()
        return clock

    def _time(
        self, stream: str, sim_time_s: float, rx_ns: int, *, discontinuity: bool = False
    ) -> tuple[int, int, ClockStatus] | None:
        if not math.isfinite(sim_time_s) or abs(sim_time_s) > 1e9:
            return None
        sample = self._clock(stream).observe(
            round(sim_time_s * 1e9), rx_ns, discontinuity=discontinuity
        )
        return sample.host_ns, sample.epoch, sample.status

    def _locked_time(self, stream: str, sim_time_s: float, rx_ns: int) -> tuple[int, int] | None:
        """A sensor reading's host time and clock epoch, only from a LOCKED clock (the rest
        counted by cause); None also for a time that is not a number."""
        timed = self._time(stream, sim_time_s, rx_ns)
        if timed is None:
            self.counts["dropped_invalid"] += 1
            return None
        host_ns, epoch, status = timed
        if status is not ClockStatus.LOCKED:
            self.counts[_UNUSABLE[status]] += 1
            return None
        return host_ns, epoch

    def _pose_gate(self, stream: RflyPoseStream, copter_id: int, rx_ns: int) -> list[Input] | None:
        """None when a message of ``stream`` may become a pose; else what it gives instead:
        nothing (another vehicle's, or not the configured pose source; counted) or a
        conflict (a second sender)."""
        if copter_id != self.copter_id:
            self.counts["other_copter"] += 1
            return []
        if self.pose_source is not stream:
            self.counts["not_pose_source"] += 1
            return []
        return self._pose_conflict(stream.value, rx_ns)

    def _outlier(self, status: ClockStatus) -> bool:
        if status is ClockStatus.OUTLIER:
            self.counts["clock_outliers"] += 1
            return True
        return False

    def _pose_conflict(self, stream: str, rx_ns: int) -> list[Input] | None:
        """A pose stream's second sender becomes a ``SourceConflict`` (the world holds); its
        kept sender's poses still flow. A new sender after a silence (a restarted CopterSim,
        or a spoofer speaking first meanwhile) is one too while it settles, its poses dropped
        (counted ``sender_rebound``): the old sender, back meanwhile, makes a lasting
        conflict."""
        latch = self._latch
        detail = latch.refuse(stream, self._sender, rx_ns)
        counter = "sender_conflict"
        if detail is None:
            detail = latch.settling(stream, rx_ns)
            if detail is None:
                return None
            counter = "sender_rebound"
        self.counts[counter] += 1
        return [SourceConflict(rx_ns, "pose", detail)]

    def _admits(self, stream: str, rx_ns: int) -> bool:
        """A sensor stream in conflict feeds nothing at all (counted)."""
        if self._latch.admits(stream, self._sender, rx_ns):
            return True
        self.counts["sender_conflict"] += 1
        return False

    def _state(
        self,
        value: m.SOut2Simulator | m.SOut2SimulatorSimpleTime,
        rx_ns: int,
        _frame_time_s: float | None,
        _sensor: object,
    ) -> list[Input]:
        refused = self._pose_gate(RflyPoseStream.STATE, value.copter_id, rx_ns)
        if refused is not None:
            return refused
        quaternion = value.quaternion_wxyz if isinstance(value, m.SOut2Simulator) else None
        turned = attitude(quaternion, value.euler_rad)
        timed = None if turned is None else self._time("state", value.runned_time_s, rx_ns)
        if turned is None or timed is None:
            self.counts["dropped_invalid"] += 1
            return []
        host_ns, epoch, status = timed
        if self._outlier(status):
            return []
        velocity = value.velocity_ned_m_s
        pose = PoseSample(
            host_ns,
            round(value.runned_time_s * 1e9),
            epoch,
            vec3(value.position_ned_m),
            turned,
            vec3(velocity) if finite(velocity) else None,
            value.copter_id,
            status,
        )
        self.counts["poses"] += 1
        out: list[Input] = [pose]
        rate = value.angular_rate_frd_rad_s if isinstance(value, m.SOut2Simulator) else None
        if rate is not None and status is ClockStatus.LOCKED and finite(rate):
            out.append(ImuSample(host_ns, vec3(rate)))
            self.counts["imu"] += 1
        return out

    def _odometry(
        self, value: m.OdomReply, rx_ns: int, _frame_time_s: float | None, _sensor: object
    ) -> list[Input]:
        if value.copter_id == self.copter_id:
            self.last_odometry_rx_ns = rx_ns  # it is streaming, whatever gives the pose
        refused = self._pose_gate(RflyPoseStream.ODOMETRY, value.copter_id, rx_ns)
        if refused is not None:
            return refused
        if value.frame_type != m.OdomFrameType.NED_FRD or not value.pose_valid:
            self.counts["dropped_invalid"] += 1
            return []
        timed = self._time(
            "odometry", value.simulation_time_s, rx_ns, discontinuity=value.discontinuity
        )
        if timed is None:
            self.counts["dropped_invalid"] += 1
            return []
        host_ns, epoch, status = timed
        if self._outlier(status):
            return []
        flags = value.flags
        velocity = value.velocity_ned_m_s
        has_velocity = bool(flags & m.OdomFlags.VELOCITY_VALID) and finite(velocity)
        pose = PoseSample(
            host_ns,
            round(value.simulation_time_s * 1e9),
            epoch,
            vec3(value.position_ned_m),
            quat(value.quaternion_wxyz),
            vec3(velocity) if has_velocity else None,
            value.copter_id,
            status,
        )
        self.counts["poses"] += 1
        out: list[Input] = [pose]
        rate = value.angular_velocity_frd_rad_s
        usable = status is ClockStatus.LOCKED
        if usable and flags & m.OdomFlags.ANGULAR_VELOCITY_VALID and finite(rate):
            out.append(ImuSample(host_ns, vec3(rate)))
            self.counts["imu"] += 1
        return out

    def _imu(
        self, value: m.ImuReply, rx_ns: int, _frame_time_s: float | None, _sensor: object
    ) -> list[Input]:
        self.last_imu_rx_ns = rx_ns
        if not self._admits("imu", rx_ns):
            return []
        timed = self._locked_time("imu", value.simulation_time_s, rx_ns)
        if timed is None:
            return []
        sample = ImuSample(timed[0], vec3(value.angular_rate_frd_rad_s))
        self.counts["imu"] += 1
        return [sample]

    def _distance(
        self,
        value: m.DistanceSensor,
        rx_ns: int,
        frame_time_s: float | None,
        sensor: VisionSensorConfig | None,
    ) -> list[Input]:
        if sensor is None:
            self.counts["ignored"] += 1  # no Config.json entry: no mount
            return []
        if value.copter_id != self.copter_id:
            self.counts["other_copter"] += 1
            return []
        # A reading is placed at its frame's simulation time; one that cannot be timed (no
        # frame, a time that is not a number, a clock not locked) is not a reading of now:
        # dropped, not stamped at its arrival.
        stream = f"sensor{sensor.seq_id}"
        if not self._admits(stream, rx_ns):
            return []
        distance = value.distance_m
        if frame_time_s is None or distance > distance_range_m(sensor):  # beyond it: junk
            self.counts["dropped_invalid"] += 1
            return []
        timed = self._locked_time(stream, frame_time_s, rx_ns)
        if timed is None:
            return []
        mount = self._mounts.get(sensor.seq_id)
        if mount is None:
            mount = self._mounts[sensor.seq_id] = sensor_mount(sensor)
        self.counts["laser"] += 1
        # No return (0, negative or not a number) is a reading of "nothing in range".
        hit = math.isfinite(distance) and distance > 0
        return [LaserRange(timed[0], distance if hit else None, mount, sensor.seq_id, timed[1])]

    def _lidar(
        self,
        value: PointCloud,
        rx_ns: int,
        frame_time_s: float | None,
        sensor: VisionSensorConfig | None,
    ) -> list[Input]:
        """TypeID 20 points (sensor axes, from the sensor) become body FRD through the mount;
        TypeID 21 points are world NED already. Timed by the frame, like a distance reading."""
        if sensor is None or value.type_id not in _LIDAR_FRAMES:
            self.counts["ignored"] += 1
            return []
        copter = value.copter_id if value.copter_id is not None else sensor.target_copter
        if copter != self.copter_id:
            self.counts["other_copter"] += 1
            return []
        stream = f"sensor{sensor.seq_id}"
        if not self._admits(stream, rx_ns):
            return []
        if frame_time_s is None:
            self.counts["dropped_invalid"] += 1
            return []
        timed = self._locked_time(stream, frame_time_s, rx_ns)
        if timed is None:
            return []
        points = np.asarray(value.xyz_m, dtype=np.float64)
        # A point that is not a number is no return: dropped and counted before the thinning,
        # which would otherwise keep them in place of real ones (red team rt34).
        finite = np.isfinite(points).all(axis=1)
        invalid = points.shape[0] - int(np.count_nonzero(finite))
        if invalid:
            points = points[finite]
            self.counts["lidar_points_invalid"] += invalid
        if points.shape[0] > MAX_LIDAR_POINTS:
            step = -(-points.shape[0] // MAX_LIDAR_POINTS)  # ceil: at most the cap
            points = points[::step]
            self.counts["lidar_thinned"] += 1
        frame = _LIDAR_FRAMES[value.type_id]
        mount = self._mounts.get(sensor.seq_id)
        if mount is None:
            mount = self._mounts[sensor.seq_id] = sensor_mount(sensor)
        if frame is PointFrame.BODY_FRD:
            rotation = np.asarray(quat_to_matrix(mount.quaternion_wxyz), dtype=np.float64)
            points = points @ rotation.T + np.asarray(mount.position_frd_m, dtype=np.float64)
        # The sensor's range (its Config.json otherParams[0], checked when it was read) bounds
        # how far a return may be from the sensor: the ranging refuses a farther point.
        scan = LidarPoints(timed[0], points, frame, sensor.other_params[0], mount.position_frd_m)
        self.counts["lidar"] += 1  # a scan refused above is ``dropped_invalid`` alone
        return [scan]

    def _gimbal(
        self, value: m.GimbalStatus, rx_ns: int, _frame_time_s: float | None, _sensor: object
    ) -> list[Input]:
        if self._gimbal_seq_id is not None and value.seq_id != self._gimbal_seq_id:
            self.counts["other_gimbal"] += 1
            return []
        if value.target_copter != self.copter_id:
            self.counts["other_copter"] += 1
            return []
        if not self._admits("gimbal", rx_ns):
            return []
        rpy = sensor_rpy_deg(value.eular_or_quat, value.sensor_ang_eular, value.sensor_ang_quat)
        # fx/fy sit in version-dependent otherParams slots: used only when they look like
        # focal lengths (finite, positive), else the configured intrinsics apply.
        fx, fy = value.fx_px, value.fy_px
        focal = math.isfinite(fx) and math.isfinite(fy) and fx > 0 and fy > 0
        laser = value.laser_range_m
        if laser > MAX_POSITION_M:  # no laser's: counted, and the attitude still serves
            self.counts["dropped_invalid"] += 1
        self.counts["gimbal"] += 1
        hit = math.isfinite(laser) and 0 < laser <= MAX_POSITION_M
        # The laser's range first: a capture waiting for this status is placed as its attitude
        # arrives, and then has this reading after it as well as the one before (a target
        # moving along its ray is ranged between the two).
        return [
            GimbalLaserRange(rx_ns, laser if hit else None),
            GimbalSample(rx_ns, rpy, fx if focal else None, fy if focal else None),
        ]
