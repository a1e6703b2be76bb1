"""How far along its ray a target is: a position exists only when a range does.

Sources, in order of preference (``range_source``):

- ``laser``: the distance sensor (TypeID 5), when the target's ray at the measured distance
  lies within the beam's half-angle of the sensor's axis, and the whole beam within the
  target's box;
- ``gimbal_laser``: the gimbal status laser range, along the gimbal camera's optical axis,
  with the same beam test;
- ``lidar``: the median distance of the points within a small cone around the ray, never
  wider than the target's box, of those within the sensor's range of it (no return comes from
  farther);
- ``ground_plane``: where the ray meets ``z = ground_z_ned_m``, for rays pointing down only.

A beam wider than the target's box (its smaller half-size seen from the camera) may return
from whatever lies beside or behind the target: such a range is not the target's (red team
rt45: a 1° beam passing 0.6° above a 0.6 m object 52 m away hit the ground behind it, and every
PROCEED was 5 m off at a claimed σ of 0.05 m), and is counted (``beam_wider``). The box is
measured by the rays to its edges (off the optical axis it is narrower than its pixels on it).
Nor is a range at which the box would be smaller than ``range_min_target_m`` (``too_near``): a
return from the airframe, a window or dust (rt45: 2 m for a target 100 m away placed it 98 m
off). With the ground plane on, a range nearer than the plane by more than a target stands is
a conflict (``Ranger.fix``): no range at all.

A laser reading is used only when it is the nearest before or after the capture and within
``range_max_age_ms`` of it (for LiDAR, the latest scan within ``lidar_max_age_ms``), and it is
placed with the vehicle's pose at its own time: a laser that hit a still target 20 ms earlier
still marks the same world point. Between a reading before the capture and one after it, the
range is taken in proportion to the time, so a target moving along its ray is ranged where it
was. A range is never carried forward from an older measurement; each measurement gets its
own or none.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Reversible
from enum import Enum
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from .config import WorldConfig
from .geometry import Quat, Vec3, angle_between_rad, quat_multiply, quat_rotate
from .inputs import GimbalLaserRange, LaserRange, LidarPoints, PointFrame
from .timeline import PoseAt

_X_AXIS: Final[Vec3] = (1.0, 0.0, 0.0)
_MIN_DOWN: Final = 1e-6  # a ray's NED z component must exceed this to meet the ground ahead


class RangeSource(Enum):
    LASER = "laser"
    GIMBAL_LASER = "gimbal_laser"
    LIDAR = "lidar"
    GROUND_PLANE = "ground_plane"
    # A sensor's range and the ground plane disagree (``Ranger.fix``): no range, no position;
    # the line says so
    CONFLICT = "conflict"


class RangeFix(NamedTuple):
    range_m: float | None  # from the camera along the target's ray; None: CONFLICT
    source: RangeSource
    # A sensor's reading that ranges the capture alone, with none on its other side to take
    # the range between: how far (σ) the target may have moved along its ray in between
    moved_sigma_m: float = 0.0
    # The sensor's own σ times this: a range carried on from two readings has their noise
    # amplified (``_at_capture``)
    noise_gain: float = 1.0


# A sensor's range may exceed the ground plane's along the same ray by this share plus this
# much: the plane is a model of the ground (a valley or a slope lies below it; the sensor is
# right there), and the pose and the beam are not exact
_BELOW_GROUND = (0.5, 5.0)
# Near a target the ground may rise this far above the plane, and the pose's height be off
# by as much: a sensor's range nearer than the plane by a target's height and this conflicts.
_NEAR_GROUND_M: Final = 1.0
_CONFLICT_FIX: Final = RangeFix(None, RangeSource.CONFLICT, 0.0, 1.0)
# A target's speed along its ray, at most: two readings whose ranges differ by more in their
# time apart are not both its own, and are not blended. A lone reading's age times half of it
# is its range's σ for the target's motion (``RangeFix.moved_sigma_m``).
_MAX_RANGE_RATE_M_S: Final = 30.0
_MOVED_RATE_M_S: Final = 0.5 * _MAX_RANGE_RATE_M_S
# A third reading this close to the line through the nearest two confirms their trend: 2.5
# times a second difference's noise (0.12 m at a σ of 0.05 m), or 15 m/s² over 100 ms
# between readings (0.15 m); an off reading of more breaks it (``_at_capture``)
_TREND_TOLERANCE_M: Final = 0.3
# A LiDAR point within its sensor's range, measured: int16 coordinates are quantised to
# range / 32767 on each axis (a norm up to sqrt(3) steps over), float32 ones to 6e-8.
_RANGE_QUANTUM: Final = 1.0 + 1e-4
_GROUND_PLANE: Final = RangeSource.GROUND_PLANE  # a module constant: an enum lookup costs 60 ns
_new_tuple: Final = tuple.__new__  # builds a NamedTuple without its Python-level __new__

PoseLookup = Callable[[int], PoseAt | None]
CameraLookup = Callable[[int], Quat | None]  # camera attitude in body FRD at a time


def ground_plane_range(
    origin_ned: Vec3, ray_ned: Vec3, ground_z_ned_m: float, max_range_m: float
) -> float | None:
    """Distance along a unit ray from ``origin`` to the plane ``z = ground_z``, or ``None``
    when the ray does not point down, the origin is not above the plane, or it is too far."""
    down = ray_ned[2]
    depth = ground_z_ned_m - origin_ned[2]
    if down <= _MIN_DOWN or depth <= 0.0:
        return None
    distance = depth / down
    return distance if distance <= max_range_m else None


def beam_range(
    origin_ned: Vec3,
    ray_ned: Vec3,
    beam_origin_ned: Vec3,
    beam_direction_ned: Vec3,
    distance_m: float,
    half_angle_rad: float,
) -> float | None:
    """Range along the target's ray when the laser's return can be the target, else ``None``.

    The candidate is the point of the ray at ``distance_m`` from the laser (exact for any
    offset between laser and camera); it is accepted when it lies within the beam's
    half-angle of the laser's axis. Comparing with the laser's hit point instead would accept
    ground returns near a target, off by the beam's footprint on slanted ground.
    """
    o = (
        origin_ned[0] - beam_origin_ned[0],
        origin_ned[1] - beam_origin_ned[1],
        origin_ned[2] - beam_origin_ned[2],
    )
    b = o[0] * ray_ned[0] + o[1] * ray_ned[1] + o[2] * ray_ned[2]
    disc = b * b - (o[0] * o[0] + o[1] * o[1] + o[2] * o[2]) + distance_m * distance_m
    if disc < 0.0:
        return None
    r = -b + math.sqrt(disc)
    if r <= 0.0:
        return None
    candidate = (o[0] + ray_ned[0] * r, o[1] + ray_ned[1] * r, o[2] + ray_ned[2] * r)
    if angle_between_rad(beam_direction_ned, candidate) > half_angle_rad:
        return None
    return r


def cone_median_range(
    origin: Vec3,
    ray: Vec3,
    points_m: npt.NDArray[np.float64],
    half_angle_rad: float,
    min_points: int,
) -> float | None:
    """Median distance of the points within ``half_angle_rad`` of a unit ray (same frame),
    or ``None`` when fewer than ``min_points`` fall in the cone."""
    d = points_m - np.asarray(origin)
    along = d @ np.asarray(ray)
    dist2 = np.einsum("ij,ij->i", d, d)
    cos2 = math.cos(half_angle_rad) ** 2
    inside = (along > 0.0) & (along * along >= cos2 * dist2)
    if int(np.count_nonzero(inside)) < min_points:
        return None
    return float(np.median(np.sqrt(dist2[inside])))


class Ranger:
    """Recent range readings, bounded, and the range of one target's ray."""

    def __init__(self, config: WorldConfig, *, max_readings: int = 32) -> None:
        self._config = config
        self._max_age_ns = round(config.range_max_age_ms * 1e6)
        self._lidar_max_age_ns = round(config.lidar_max_age_ms * 1e6)
        self._laser_half = math.radians(config.laser_beam_half_angle_deg)
        self._gimbal_half = math.radians(config.gimbal_laser_beam_half_angle_deg)
        self._cone_half = math.radians(config.lidar_cone_half_angle_deg)
        self._max_readings = max_readings
        # Each sensor's own readings, oldest first: a fast one (an altimeter at 1 kHz, or
        # eight obstacle sensors at 50 Hz) in a shared bound pushed a slow forward laser's
        # out, and a drone ahead lost its range for as long as it read (red team rt57)
        self._lasers: dict[int, deque[LaserRange]] = {}
        self._laser_epochs: dict[int, int] = {}  # sensor -> its clock epoch
        # Statuses may come at up to 1 kHz: 32 of them were 32 ms, less than a board's
        # latency (rt57), so a capture found no reading of its time
        self._gimbal_lasers: deque[GimbalLaserRange] = deque(maxlen=8 * max_readings)
        self._lidar: LidarPoints | None = None
        # ``_lidar``'s points within the sensor's range of it, and where the sensor was then
        # (in the points' frame): a world-frame scan's sensor is placed by the vehicle's pose
        # at the scan's time, looked up at each use, as a new pose epoch may move it.
        self._lidar_in_range: tuple[Vec3, npt.NDArray[np.float64]] | None = None
        self._lidar_unplaced: LidarPoints | None = None  # the last scan counted unplaced
        self.changes = 0  # readings added: a placement's cache key
        self.below_ground = 0  # sensor ranges refused: beyond the ground plane
        self.beam_wider = 0  # laser ranges not tried: the beam is wider than the target's box
        self.too_near = 0  # sensor ranges refused: the box would be smaller than the minimum
        self.conflicts = 0  # sensor ranges much nearer than the ground plane: no range at all
        self.lidar_beyond_range = 0  # LiDAR points refused: farther than the sensor's range
        self.lidar_unplaced = 0  # scans found with no pose at their time (once a scan)

    @property
    def lasers(self) -> tuple[LaserRange, ...]:
        """The distance readings held, every sensor's, oldest first."""
        return tuple(sorted((r for own in self._lasers.values() for r in own), key=_host_ns))

    def add(self, reading: LaserRange | GimbalLaserRange | LidarPoints) -> None:
        self.changes += 1
        if isinstance(reading, LaserRange):
            sensor, epoch = reading.sensor_id, reading.epoch
            if self._laser_epochs.setdefault(sensor, epoch) != epoch:
                # A new clock epoch of this sensor: its older readings were timed by a
                # mapping it no longer trusts.
                self._lasers.pop(sensor, None)
                self._laser_epochs[sensor] = epoch
            if reading.distance_m is not None:
                own = self._lasers.get(sensor)
                if own is None:
                    own = self._lasers[sensor] = deque(maxlen=self._max_readings)
                own.append(reading)
        elif isinstance(reading, GimbalLaserRange):
            if reading.distance_m is not None:
                self._gimbal_lasers.append(reading)
        elif self._lidar is None or reading.host_ns >= self._lidar.host_ns:
            self._lidar, self._lidar_in_range = reading, None

    def fix(
        self,
        capture_ns: int,
        origin_ned: Vec3,
        ray_ned: Vec3,
        box_cone_rad: tuple[float, float],
        pose_at: PoseLookup,
        camera_at: CameraLookup,
        camera_position_frd_m: Vec3,
    ) -> RangeFix | None:
        """The best range for a ray from the camera at ``capture_ns``, or ``None``.

        ``box_cone_rad``: the box seen from the camera (``CameraModel.box_cone_rad``): the
        half-angle of the cone within it, and its widest angle. A laser counts only when its
        whole beam lies within the cone, LiDAR points only within it; a range at which the box
        is narrower than ``range_min_target_m`` is not the target's.

        With the ground plane on, a sensor's range nearer than where the ray meets the plane by
        more than a target stands (``target_max_height_m``, and ``_NEAR_GROUND_M`` of ground,
        along the ray) is a conflict: a target on the ground cannot be there, and one that far
        above it cannot be on the plane. Neither voice is believed: ``RangeSource.CONFLICT``
        with no range (counted ``conflicts``; red team rt46: dust or a branch 1.5-8 m out, on a
        car 45 m away, placed it 37-43 m off at σ 0.01 m).

        With the ground plane on, a sensor's range beyond where the ray meets it (by more than
        ``_BELOW_GROUND``) cannot be the target's: the beam would have met the ground first.
        It is refused and counted (``below_ground``; red team rt18: a gimbal laser range of
        2999 m placed every PROCEED 2979 m under the ground)."""
        c = self._config
        box_half_rad = box_cone_rad[0]
        floor = nearest = None  # where the ray meets the ground plane; the nearest range then
        if c.ground_plane and (self._lasers or self._gimbal_lasers or self._lidar is not None):
            floor = ground_plane_range(origin_ned, ray_ned, c.ground_z_ned_m, math.inf)
            if floor is not None:
                nearest = floor - (c.target_max_height_m + _NEAR_GROUND_M) / ray_ned[2]
        found: float | None = None
        moved, gain = 0.0, 1.0  # the range's σ for the target's motion; its noise's gain
        source = _GROUND_PLANE
        if self._lasers:
            allowed = min(self._laser_half, box_half_rad - self._laser_half)
            if allowed < 0.0:
                self.beam_wider += 1
            else:
                ranged = self._laser(capture_ns, origin_ned, ray_ned, pose_at, allowed)
                source = RangeSource.LASER
                if ranged is not None:
                    found = self._plausible(ranged[0], floor, box_half_rad)
                    moved, gain = ranged[1], ranged[2]
        if found is None and self._gimbal_lasers:
            allowed = min(self._gimbal_half, box_half_rad - self._gimbal_half)
            if allowed < 0.0:
                self.beam_wider += 1
            else:
                ranged = self._gimbal_laser(
                    capture_ns, origin_ned, ray_ned, pose_at, camera_at, camera_position_frd_m,
                    allowed,
                )  # fmt: skip
                source = RangeSource.GIMBAL_LASER
                if ranged is not None:
                    found = self._plausible(ranged[0], floor, box_half_rad)
                    moved, gain = ranged[1], ranged[2]
        if found is None and self._lidar is not None:
            cone = min(self._cone_half, box_half_rad)
            found = self._lidar_range(capture_ns, origin_ned, ray_ned, pose_at, cone)
            source = RangeSource.LIDAR
            found = self._plausible(found, floor, box_half_rad)
            moved, gain = 0.0, 1.0
        if found is not None:
            if nearest is not None and found < nearest:
                self.conflicts += 1
                return _CONFLICT_FIX
            return RangeFix(found, source, moved, gain)
        if c.ground_plane:  # most placements (every one without a ranging sensor)
            ground = ground_plane_range(origin_ned, ray_ned, c.ground_z_ned_m, c.max_ground_range_m)
            if ground is not None:
                return _new_tuple(RangeFix, (ground, _GROUND_PLANE, 0.0, 1.0))
        return None

    def _plausible(
        self, range_m: float | None, floor_m: float | None, box_half_rad: float
    ) -> float | None:
        """``range_m`` when a sensor's range can be the target's: the box at least
        ``range_min_target_m`` across there, and not beyond the ground plane (counted)."""
        if range_m is None:
            return None
        if 2.0 * range_m * math.tan(box_half_rad) < self._config.range_min_target_m:
            self.too_near += 1
            return None
        return range_m if self._above_ground(range_m, floor_m) else None

    def _above_ground(self, range_m: float, floor_m: float | None) -> bool:
        """Whether a sensor's range along a ray that meets the ground plane at ``floor_m``
        (``None``: it does not, or the plane is off) can be a target's; counts one that
        cannot."""
        share, margin_m = _BELOW_GROUND
        if floor_m is None or range_m <= floor_m * (1.0 + share) + margin_m:
            return True
        self.below_ground += 1
        return False

    def _nearest(
        self, readings: Reversible[LaserRange | GimbalLaserRange], t_ns: int
    ) -> list[LaserRange | GimbalLaserRange]:
        """The readings nearest ``t_ns``, nearest first, the nearest within the age bound (a
        target's own time is there; each candidate costs a pose lookup): with readings on
        both sides, the nearest on each; else up to three on the one side, for the range's
        trend (``_at_capture``). Those for the trend may lie farther: the other side's nearest
        within twice the bound (a status lost on that side leaves its neighbour), the third
        on one side within three times (at 10 Hz, 200-300 ms before)."""
        reach = 3 * self._max_age_ns
        before: list[LaserRange | GimbalLaserRange] = []
        after: list[LaserRange | GimbalLaserRange] = []
        for r in reversed(readings):  # arrival order, close to time order
            apart = r.host_ns - t_ns
            if apart > 0:
                if apart <= reach:
                    after.append(r)
            elif -apart <= reach:
                before.append(r)
            elif len(before) >= 3:
                break
        before = _one_a_time(sorted(before, key=_newest_first))
        after = _one_a_time(sorted(after, key=_host_ns))
        if before and after:
            near = [before[0], after[0]]
            if after[0].host_ns - t_ns < t_ns - before[0].host_ns:
                near.reverse()
            if abs(near[1].host_ns - t_ns) > 2 * self._max_age_ns:
                near.pop()
            else:  # a third, to check the two on: the next before, or else the next after
                near += (before[1:] or after[1:])[:1]
        else:
            near = (before or after)[:3]
        if not near or abs(near[0].host_ns - t_ns) > self._max_age_ns:
            return []
        return near

    def _laser(
        self, capture_ns: int, origin: Vec3, ray: Vec3, pose_at: PoseLookup, allowed_rad: float
    ) -> tuple[float, float, float] | None:
        """The range from the readings whose returns lie within ``allowed_rad`` of their beam's
        axis (the beam's half-angle, less what the box leaves), sensor by sensor: the one
        whose reading is nearest the capture in time first. Each sensor's own readings before
        and after the capture: another sensor's (an altimeter's, faster) must not take their
        places (red team rt48: a forward laser never ranged a drone ahead while a downward one
        read at 50 Hz)."""
        tried: list[tuple[int, tuple[float, float, float]]] = []  # (time from the capture, range)
        for own in self._lasers.values():
            found: list[tuple[int, float]] = []
            for reading in self._nearest(own, capture_ns):
                assert isinstance(reading, LaserRange) and reading.distance_m is not None
                pose = pose_at(reading.host_ns)
                if pose is None:
                    continue
                q = pose.quaternion_wxyz
                mount = reading.mount
                beam_origin = _offset(pose.position_ned_m, quat_rotate(q, mount.position_frd_m))
                direction = quat_rotate(quat_multiply(q, mount.quaternion_wxyz), _X_AXIS)
                distance = reading.distance_m
                r = beam_range(origin, ray, beam_origin, direction, distance, allowed_rad)
                if r is not None:
                    found.append((reading.host_ns, r))
            ranged = _at_capture(found, capture_ns, self._max_age_ns)
            if ranged is not None:
                tried.append((min(abs(t - capture_ns) for t, _ in found), ranged))
        return min(tried)[1] if tried else None

    def _gimbal_laser(
        self,
        capture_ns: int,
        origin: Vec3,
        ray: Vec3,
        pose_at: PoseLookup,
        camera_at: CameraLookup,
        camera_position_frd_m: Vec3,
        allowed_rad: float,
    ) -> tuple[float, float, float] | None:
        found: list[tuple[int, float]] = []
        for reading in self._nearest(self._gimbal_lasers, capture_ns):
            assert reading.distance_m is not None
            pose = pose_at(reading.host_ns)
            camera = camera_at(reading.host_ns)
            if pose is None or camera is None:
                continue
            q = pose.quaternion_wxyz
            beam_origin = _offset(pose.position_ned_m, quat_rotate(q, camera_position_frd_m))
            direction = quat_rotate(quat_multiply(q, camera), _X_AXIS)
            r = beam_range(origin, ray, beam_origin, direction, reading.distance_m, allowed_rad)
            if r is not None:
                found.append((reading.host_ns, r))
        return _at_capture(found, capture_ns, self._max_age_ns)

    def _lidar_range(
        self, capture_ns: int, origin: Vec3, ray: Vec3, pose_at: PoseLookup, cone_rad: float
    ) -> float | None:
        scan = self._lidar
        if scan is None or abs(scan.host_ns - capture_ns) > self._lidar_max_age_ns:
            return None
        pose = pose_at(scan.host_ns)
        if pose is None:  # the sensor cannot be placed: unused until a pose there is known
            if self._lidar_unplaced is not scan:
                self._lidar_unplaced = scan
                self.lidar_unplaced += 1
            return None
        if scan.frame is PointFrame.BODY_FRD:
            q = pose.quaternion_wxyz
            inverse = (q[0], -q[1], -q[2], -q[3])
            p = pose.position_ned_m
            origin = quat_rotate(inverse, (origin[0] - p[0], origin[1] - p[1], origin[2] - p[2]))
            ray = quat_rotate(inverse, ray)
            sensor_at = scan.sensor_position_frd_m  # at its mount, in body FRD
        else:
            mount = quat_rotate(pose.quaternion_wxyz, scan.sensor_position_frd_m)
            sensor_at = _offset(pose.position_ned_m, mount)
        points = self._within_range(scan, sensor_at)
        return cone_median_range(origin, ray, points, cone_rad, self._config.lidar_min_points)

    def _within_range(self, scan: LidarPoints, sensor_at: Vec3) -> npt.NDArray[np.float64]:
        """``scan``'s points no farther from the sensor (at ``sensor_at``, in the points'
        frame) than its range; the others are counted. Kept for the scan's next
        use from the same place (red team rt35: a filter kept across a new pose epoch let a
        return 90 m from a 60 m sensor range). No return comes from beyond a sensor's range:
        red team rt34 placed LiDAR points 300 m to 5,000 km along a target's ray, with a 60 m
        sensor, and the targets PROCEEDed there."""
        held = self._lidar_in_range
        if held is not None and held[0] == sensor_at:
            return held[1]
        points = scan.points_m
        offsets = points - np.asarray(sensor_at)
        limit = scan.max_range_m * _RANGE_QUANTUM
        inside = np.einsum("ij,ij->i", offsets, offsets) <= limit * limit
        beyond = points.shape[0] - int(np.count_nonzero(inside))
        if beyond:
            self.lidar_beyond_range += beyond
            points = points[inside]
        self._lidar_in_range = (sensor_at, points)
        return points


def _at_capture(
    found: list[tuple[int, float]], t_ns: int, max_age_ns: int
) -> tuple[float, float, float] | None:
    """The range at the capture from the readings' ranges (nearest first, ``Ranger._nearest``),
    its σ for the target's motion (``RangeFix.moved_sigma_m``) and its noise's gain
    (``RangeFix.noise_gain``).

    Between one before it and one after it, in proportion to the time (a target moving along
    its ray moves its range between readings: rt47, 0.73 m off at 10 m/s with a 10 Hz laser,
    beyond the claimed σ), unless they differ more than a target moves
    (``_MAX_RANGE_RATE_M_S``: both are not the target's, and a blend of the two is neither).
    Readings on one side only (a body laser's next not in yet, a gimbal status lost) carry
    the trend of the nearest two on, no further than they lie apart, when a third lies on
    their line (``_TREND_TOLERANCE_M``): rt48, a car at 10 m/s with one gimbal status in ten
    lost, 10 PROCEEDs in 113 beyond 4σ by the nearest reading alone; rt50, one reading 2.5 m
    off before two lost statuses, carried on as a ramp, 4.25 m off at σ 0.1 m. Carried a
    share ``c`` of their span past the nearest, the range is ``r·(1 + c) - r1·c``: the
    readings' noise grows by √((1 + c)² + c²), the third element (rt52: 2.2 at c = 1, still
    claimed 1, Mahalanobis 5.6 on a still drone). Else the nearest alone, within
    ``max_age_ns``, its σ its age times the pace of the nearest two (a still target's is
    about none: rt52, 15 m/s left a stopped target to the filter's prediction), or 15 m/s
    without a second reading."""
    if not found:
        return None
    t, r = found[0]
    age_ns = abs(t - t_ns)
    if len(found) >= 2:
        t1, r1 = found[1]
        span = t - t1  # signed: the line through both, from the nearest
        if span != 0 and abs(r - r1) <= _MAX_RANGE_RATE_M_S * abs(span) / 1e9:
            slope = (r - r1) / span
            ranged = r + slope * (t_ns - t)
            on_line = False  # a third reading confirms the two: neither is off
            if len(found) == 3:
                t2, r2 = found[2]
                on_line = abs(r2 - (r + slope * (t2 - t))) <= _TREND_TOLERANCE_M
            # Unconfirmed, either may be off: the range's σ no less than they disagree, less a
            # second difference's allowance (rt53: a track's second reading 2.5 m off, its
            # σ 0.1 m, led the track 6 m off; one 1.5 m off blended in, 3 m)
            doubt = 0.0 if on_line else max(0.0, abs(r - r1) - _TREND_TOLERANCE_M)
            if (t - t_ns) * (t1 - t_ns) <= 0:  # one on each side
                return ranged, doubt, 1.0
            carried = age_ns / abs(span)
            if on_line and carried <= 1.0:
                # r·(1 + c) - r1·c: each reading's noise, weighed so (rt52: 2.2x at c = 1)
                return ranged, 0.0, math.hypot(1.0 + carried, carried)
            # alone, at the pair's own pace (a still target's is about none)
            moved = max(abs(slope) * age_ns, doubt)
            return (r, moved, 1.0) if age_ns <= max_age_ns else None
    if age_ns > max_age_ns:
        return None
    return r, _MOVED_RATE_M_S * age_ns / 1e9, 1.0  # no second reading: at 15 m/s


def _one_a_time(
    readings: list[LaserRange | GimbalLaserRange],
) -> list[LaserRange | GimbalLaserRange]:
    """``readings`` (sorted by time) without a second reading at the same time as the one
    before it: two at one time give no trend (rt52: a laser's times rounded to 40 ms)."""
    out = readings[:1]
    for reading in readings[1:]:
        if reading.host_ns != out[-1].host_ns:
            out.append(reading)
    return out


def _newest_first(reading: LaserRange | GimbalLaserRange) -> int:
    return -reading.host_ns


def _host_ns(reading: LaserRange | GimbalLaserRange) -> int:
    return reading.host_ns


def _offset(a: Vec3, b: Vec3) -> Vec3:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])
