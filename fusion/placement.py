"""Placing one vision measurement: pose at capture, camera attitude, ray, range.

The ray goes from the board's box units to a pixel, to camera axes, to body FRD (by the mount,
or by the gimbal's angles at the capture time), to world NED by the vehicle's attitude at the
capture time. The pose comes from the history: interpolated inside it; past its newest pose
only once the measurement has waited, then only within ``max_extrapolation_ms`` and only with
a velocity and rate the poses vouch for (``PoseHistory.extrapolate``): else ``pose_stale``.
"""

from __future__ import annotations

import math
from typing import Final

from gizmo_core import HoldReason

from .camera import CameraModel
from .config import WorldConfig
from .geometry import Quat, Vec3, azimuth_elevation_deg, cross, quat_multiply, quat_rotate
from .gimbal import GimbalTrack
from .inputs import ImuSample, VisionObservation
from .ranging import Ranger, RangeSource
from .targets import Geometry, Placement, RayFrame, cut_off, image_edges
from .timeline import PoseAt, PoseHistory, PoseMotion, Where

_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__
# The classes it builds each frame, as finals: compiled, a final is a C static, where a
# module-level name is a dictionary lookup at each use.
_PLACEMENT: Final = Placement
_RAY_FRAME: Final = RayFrame
_GEOMETRY: Final = Geometry
_INSIDE: Final = Where.INSIDE  # a module constant: an enum member's lookup costs 60 ns a time
_GROUND_PLANE: Final = RangeSource.GROUND_PLANE
_AT_ORIGIN: Final[Vec3] = (0.0, 0.0, 0.0)


class Placer:
    """The placement state: pose history, gimbal angles, IMU rate and range readings."""

    def __init__(self, camera: CameraModel, config: WorldConfig, *, rates: bool = False) -> None:
        """``rates``: also note how fast the camera moved and turned at each capture (the
        tracker's noise model needs them; the per-frame path does not)."""
        self.camera = camera
        self.edges = image_edges(camera.config.width_px, camera.config.height_px)
        self._rates = rates
        self.history = PoseHistory(
            max_samples=config.pose_history,
            max_gap_ms=config.max_pose_gap_ms,
            bounds=config.jump_bounds(),
            min_span_ms=max(config.max_extrapolation_ms, 1.0),
        )
        self.gimbal = GimbalTrack(
            max_age_ms=config.gimbal_max_age_ms,
            max_rate_deg_s=config.gimbal_max_rate_deg_s,
            fx_px=camera.fx_px,
        )
        self.ranger = Ranger(config)
        self.imu: ImuSample | None = None
        self.extrapolated = 0
        self.rejected_extrapolation = 0
        self._max_extrapolation_ns = round(config.max_extrapolation_ms * 1e6)
        self._imu_max_age_ns = round(config.imu_max_age_ms * 1e6)
        self._on_gimbal = camera.config.on_gimbal
        self._mount_q = camera.mount_quaternion_wxyz
        self._mount_position = camera.config.mount_position_frd_m
        # (+0.0, +0.0, +0.0) exactly: the mount's offset in NED is that whatever the attitude
        self._at_origin = all(
            math.copysign(1.0, v) == 1.0 and v == 0.0 for v in self._mount_position
        )
        # The last placement, for the next measurement of the same image: a board sends one
        # image's result in frame after frame when its line is faster than its camera. Its
        # key holds what a placement depends on: the measurement, and how often each part of
        # the state (poses, gimbal, ranges, IMU) changed.
        self._imu_changes = 0
        self._last: tuple[tuple[object, ...], Geometry | None, HoldReason | None, int] | None = None
        # The last box's bearing and angular size in camera axes, by the box and the focal
        # lengths: a repeated image has the same box at each new capture time.
        # And its cone (``CameraModel.box_cone_rad``), for the ranges.
        self._box: (
            tuple[tuple[object, ...], Vec3, tuple[float, float], tuple[float, float]] | None
        ) = None
        # A ground-plane fix of a box that may stand on the ground (``standing_height``)
        self._standing = config.ground_plane and not config.flat_targets
        self._ground_z = config.ground_z_ned_m
        self._max_height = config.target_max_height_m
        self._corners: tuple[tuple[object, ...], tuple[Vec3, ...]] | None = None

    def add_imu(self, imu: ImuSample) -> None:
        if self.imu is None or imu.host_ns >= self.imu.host_ns:
            self._imu_changes += 1
            self.imu = imu

    def place(
        self,
        obs: VisionObservation,
        arrival: int,
        waited: bool,
        required: bool,
        empty: HoldReason | None = None,
    ) -> Placement | None:
        """Place a positive measurement; ``None`` when it must wait for its pose, or for the
        gimbal's status after its capture (``GimbalTrack.must_wait``).

        ``waited``: its wait for a newer pose (or status) is over. ``required``: a pose source
        exists, so a missing pose is a HOLD reason; without one the measurement is placed in
        camera axes only. ``empty``: why there is no pose at all, when it is not ``no_pose`` (poses
        heard while their clock locks).
        """
        last = self._last
        if (  # the key below, compared field by field: no tuple built for a repeat
            last is not None
            and (key := last[0])[0] == obs.host_capture_ns
            and key[1] == obs.center_x
            and key[2] == obs.center_y
            and key[3] == obs.width
            and key[4] == obs.height
            and key[5] == waited
            and key[6] == required
            and key[7] is empty
            and key[8] == self.history.changes
            and key[9] == self.gimbal.changes
            and key[10] == self.ranger.changes
            and key[11] == self._imu_changes
        ):
            _, geometry, reason, counted = last  # the same image, the same state: as before
            if counted:
                if counted > 0:
                    self.extrapolated += 1
                else:
                    self.rejected_extrapolation += 1
            return _new_tuple(_PLACEMENT, (obs, arrival, geometry, reason))
        extrapolated, rejected = self.extrapolated, self.rejected_extrapolation
        placement = self._place(obs, arrival, waited=waited, required=required, empty=empty)
        if placement is not None:
            counted = (self.extrapolated - extrapolated) - (self.rejected_extrapolation - rejected)
            key = (
                obs.host_capture_ns, obs.center_x, obs.center_y, obs.width, obs.height, waited,
                required, empty, self.history.changes, self.gimbal.changes, self.ranger.changes,
                self._imu_changes,
            )  # fmt: skip
            self._last = (key, placement.geometry, placement.pose_reason, counted)
        return placement

    def _place(
        self,
        obs: VisionObservation,
        arrival: int,
        *,
        waited: bool,
        required: bool,
        empty: HoldReason | None,
    ) -> Placement | None:
        if not required:
            # Placed without a pose: if a pose source appears later, this one must not proceed.
            geometry, _ = self.geometry(obs, None)
            return Placement(obs, arrival, geometry, HoldReason.NO_POSE)
        t = obs.host_capture_ns
        if self._on_gimbal and not waited and self.gimbal.must_wait(t):
            return None  # past the newest gimbal status: the next one will bracket it
        history = self.history
        where, pose = history.locate(t)  # interpolated when INSIDE
        reason: HoldReason | None = None
        imu_rate: Vec3 | None = None
        if where is _INSIDE:  # most: between two poses
            pass
        elif where is Where.NEWER:
            if not waited:
                return None
            newest = history.newest
            assert newest is not None
            if t - newest.host_ns <= self._max_extrapolation_ns:
                imu_rate = self._imu_rate(newest.host_ns)
                pose = history.extrapolate(t, imu_rate)
            if pose is None:  # too far past the newest pose, or no velocity to carry it
                reason = HoldReason.POSE_STALE
                self.rejected_extrapolation += 1
            else:
                self.extrapolated += 1
        elif where is Where.EMPTY:
            reason = empty or HoldReason.NO_POSE
        else:
            reason = HoldReason.POSE_GAP
        motion = history.motion(t, imu_rate) if pose is not None and self._rates else None
        geometry, camera_reason = self.geometry(obs, pose, motion)
        return _new_tuple(_PLACEMENT, (obs, arrival, geometry, reason or camera_reason))

    def geometry(
        self, obs: VisionObservation, pose: PoseAt | None, motion: PoseMotion | None = None
    ) -> tuple[Geometry, HoldReason | None]:
        """The measurement's geometry, and why the camera's attitude is unknown if it is.
        ``motion``: the pose's rates at the capture, for the noise model."""
        camera = self.camera
        t = obs.host_capture_ns
        camera_q: Quat = self._mount_q
        fx = fy = None
        if self._on_gimbal:
            attitude = self.gimbal.at(t)
            if attitude is None:
                bearing = camera.bearing_camera(obs.center_x, obs.center_y)
                size = camera.angular_size_deg(obs.width, obs.height)
                reason = HoldReason.POSE_GAP if len(self.gimbal) else HoldReason.NO_POSE
                return Geometry(bearing, size, None, None, None, None, None, None), reason
            camera_q, fx, fy = attitude
        box = (obs.center_x, obs.center_y, obs.width, obs.height, fx, fy)
        kept = self._box
        if kept is not None and kept[0] == box:
            bearing, size, cone = kept[1], kept[2], kept[3]
        else:
            bearing = camera.bearing_camera(obs.center_x, obs.center_y, fx, fy)
            size = camera.angular_size_deg(obs.width, obs.height, fx, fy)
            cone = camera.box_cone_rad(obs.center_x, obs.center_y, obs.width, obs.height, fx, fy)
            self._box = (box, bearing, size, cone)
        if pose is None:
            return Geometry(bearing, size, None, None, None, None, None, None), None
        q = pose.quaternion_wxyz
        camera_ned = quat_multiply(q, camera_q)
        ray = quat_rotate(camera_ned, bearing)
        # A camera at the body's origin: any finite q turns (+0.0, +0.0, +0.0) into itself
        offset = _AT_ORIGIN if self._at_origin else quat_rotate(q, self._mount_position)
        p = pose.position_ned_m
        origin = (p[0] + offset[0], p[1] + offset[1], p[2] + offset[2])
        azimuth, elevation = azimuth_elevation_deg(ray)
        if cut_off(obs, self.edges):  # its centre is not the target's: nothing to place
            return Geometry(bearing, size, ray, azimuth, elevation, None, None, None), None
        fix = self.ranger.fix(
            t,
            origin,
            ray,
            cone,
            self._pose_for_range,
            self._camera_for_range,
            self._mount_position,
        )
        if fix is None:
            return Geometry(bearing, size, ray, azimuth, elevation, None, None, None), None
        r = fix.range_m
        if r is None:  # the sensors and the ground plane disagree: the line says so
            return Geometry(bearing, size, ray, azimuth, elevation, None, None, fix.source), None
        extent_sigma: float | None = None
        if fix.source is _GROUND_PLANE and self._standing:
            # The box's centre lies between the plane (a flat target) and the height a target
            # standing on the ground gives it: placed halfway, that half as its σ.
            extent_sigma = 0.5 * self.standing_height(box, camera_ned, origin, ray)
            r *= 1.0 - extent_sigma / (self._ground_z - origin[2])
        position = (origin[0] + ray[0] * r, origin[1] + ray[1] * r, origin[2] + ray[2] * r)
        velocity = rate = None
        if motion is not None:  # the camera's velocity: the body's plus ω × its lever arm
            rate, velocity = motion.angular_rate_ned_rad_s, motion.velocity_ned_m_s
            if offset is not _AT_ORIGIN and offset != _AT_ORIGIN:
                lever = cross(rate, offset)
                v = velocity
                velocity = (v[0] + lever[0], v[1] + lever[1], v[2] + lever[2])
        # Built without the NamedTuples' Python-level __new__: once per capture time.
        focal = (fx or camera.fx_px, fy or camera.fy_px)
        moved, gain = fix.moved_sigma_m, fix.noise_gain
        frame = _new_tuple(
            _RAY_FRAME, (origin, camera_ned, *focal, velocity, rate, extent_sigma, moved, gain)
        )
        geometry = _new_tuple(
            _GEOMETRY, (bearing, size, ray, azimuth, elevation, position, r, fix.source, frame)
        )
        return geometry, None

    def standing_height(
        self,
        box: tuple[float, float, float, float, float | None, float | None],
        camera_ned: Quat,
        origin_ned: Vec3,
        ray_ned: Vec3,
    ) -> float:
        """How high above the ground plane the centre's ray passes over the nearest ground
        the box covers, ahead along the centre's bearing (the corners' rays meet the plane
        there; a wide box's bottom corners lie far to the sides, not farther ahead: rt49), at
        most ``target_max_height_m``: the height of the box's centre for a target standing
        upright there. Where the ray meets the plane is where it is for a flat one (rt46: a
        person 16 m away seen from 2 m up, placed by the plane 11.6 m behind). A box over the
        ground below the camera, or a ray straight down: the target may stand right below, as
        high as the camera (rt49: a person below a drone 20 m up, 0.85 m off at σ 6 mm).

        ``box``: the board's centre and size and the focal lengths; the ray points down."""
        kept = self._corners
        if kept is not None and kept[0] == box:
            corners = kept[1]
        else:
            cx, cy, width, height, fx, fy = box
            bearing = self.camera.bearing_camera
            w, h = width / 2, height / 2
            corners = (
                bearing(cx - w, cy - h, fx, fy),
                bearing(cx + w, cy - h, fx, fy),
                bearing(cx - w, cy + h, fx, fy),
                bearing(cx + w, cy + h, fx, fy),
            )
            self._corners = (box, corners)
        depth = self._ground_z - origin_ned[2]
        if depth <= 0.0:
            return 0.0
        highest = min(depth, self._max_height)
        across = math.hypot(ray_ned[0], ray_ned[1])
        if across <= 0.0:
            return highest
        north, east = ray_ned[0] / across, ray_ned[1] / across
        centre_ahead = across / ray_ned[2]  # metres ahead per metre down
        nearest = centre_ahead
        for corner in corners:
            c = quat_rotate(camera_ned, corner)
            if c[2] > 0.0:  # meets the ground (a corner above the horizon does not)
                nearest = min(nearest, (c[0] * north + c[1] * east) / c[2])
        if nearest <= 0.0:
            return highest  # the box reaches the ground below the camera, or behind it
        return min(depth * (1.0 - nearest / centre_ahead), self._max_height)

    def _imu_rate(self, near_ns: int) -> Vec3 | None:
        imu = self.imu
        if imu is None or abs(imu.host_ns - near_ns) > self._imu_max_age_ns:
            return None
        return imu.angular_rate_frd_rad_s

    def _pose_for_range(self, t_ns: int) -> PoseAt | None:
        """A range reading's pose: interpolated, or a short extrapolation (no waiting)."""
        history = self.history
        where, pose = history.locate(t_ns)
        if where is Where.INSIDE:
            return pose
        newest = history.newest
        if (
            where is Where.NEWER
            and newest is not None
            and t_ns - newest.host_ns <= self._max_extrapolation_ns
        ):
            return history.extrapolate(t_ns, self._imu_rate(newest.host_ns))
        return None

    def _camera_for_range(self, t_ns: int) -> Quat | None:
        if not self._on_gimbal:
            return self._mount_q
        attitude = self.gimbal.at(t_ns)
        return None if attitude is None else attitude.quaternion_wxyz
