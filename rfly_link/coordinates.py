"""Coordinate frames: RflySim's NED/FRD to and from the ROS conventions NWU/FLU and ENU/FLU.

Internally everything stays NED (world) and FRD (body), as RflySim and PX4 send it
(docs/protocol-decisions.md, frames). Quaternions are (w, x, y, z) and give the body attitude: they
rotate a body vector into the world frame. FRD->FLU and NED->NWU are both a 180° rotation about x,
``(x, -y, -z)``; the same holds for accelerations and angular rates (the SDK's IMU acceleration
mapping ``[-a0, a1, -a2]`` is a defect we do not copy). ENU from NED is ``(y, x, -z)``.

:class:`LocalOdometry` keeps a local origin per vehicle that starts at the first valid sample
and restarts, in a new epoch, after the discontinuity flag (bit 5).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt

from hil_geometry.rotations import Quat
from hil_geometry.rotations import quat_conjugate as _conjugate
from hil_geometry.rotations import quat_multiply as _multiply
from hil_geometry.rotations import quat_normalize as _normalize
from hil_geometry.rotations import quat_to_matrix as _to_matrix
from rfly_link.errors import UnsupportedFrame
from rfly_link.messages import ImuReply, OdomFlags, OdomFrameType, OdomReply

Vector = npt.NDArray[np.float64]  # float64 vectors, quaternions and matrices
ArrayLike = Sequence[float] | Vector

_FLIP_YZ = np.array([1.0, -1.0, -1.0])
_FLIP_QUAT_YZ = np.array([1.0, 1.0, -1.0, -1.0])
_HALF_SQRT2 = math.sqrt(0.5)
# 180° about the axis (1, 1, 0)/sqrt(2): maps NED axes onto ENU axes.
_Q_ENU_NED = np.array([0.0, _HALF_SQRT2, _HALF_SQRT2, 0.0])
_Q_FRD_FLU = np.array([0.0, 1.0, 0.0, 0.0])  # 180° about x


class WorldFrame(Enum):
    NED = "NED"
    NWU = "NWU"
    ENU = "ENU"


def _vec(v: ArrayLike) -> Vector:
    return np.asarray(v, dtype=np.float64)


def ned_to_nwu(v: ArrayLike) -> Vector:
    """World vectors (positions, velocities, accelerations) NED -> NWU; also NWU -> NED."""
    flipped: Vector = _vec(v) * _FLIP_YZ
    return flipped


def frd_to_flu(v: ArrayLike) -> Vector:
    """Body vectors (angular rates, specific force) FRD -> FLU; also FLU -> FRD."""
    flipped: Vector = _vec(v) * _FLIP_YZ
    return flipped


flu_to_frd = frd_to_flu


def ned_to_enu(v: ArrayLike) -> Vector:
    """World vectors NED -> ENU (x_east = y_ned, y_north = x_ned, z_up = -z_ned); involution."""
    a = _vec(v)
    return np.stack([a[..., 1], a[..., 0], -a[..., 2]], axis=-1)


enu_to_ned = ned_to_enu


def nwu_to_enu(v: ArrayLike) -> Vector:
    a = _vec(v)
    return np.stack([-a[..., 1], a[..., 0], a[..., 2]], axis=-1)


def enu_to_nwu(v: ArrayLike) -> Vector:
    a = _vec(v)
    return np.stack([a[..., 1], -a[..., 0], a[..., 2]], axis=-1)


def _quat(q: ArrayLike) -> Quat:
    w, x, y, z = (float(c) for c in _vec(q))
    return (w, x, y, z)


def quat_multiply(a: ArrayLike, b: ArrayLike) -> Vector:
    """Hamilton product of (w, x, y, z) quaternions (``hil_geometry.rotations``, as an array)."""
    return np.array(_multiply(_quat(a), _quat(b)))


def quat_conjugate(q: ArrayLike) -> Vector:
    return np.array(_conjugate(_quat(q)))


def quat_to_matrix(q: ArrayLike) -> Vector:
    """Rotation matrix of a (w, x, y, z) quaternion, normalised first (body -> world)."""
    return np.array(_to_matrix(_normalize(_quat(q))))


def quat_ned_frd_to_nwu_flu(q: ArrayLike) -> Vector:
    """Attitude of FRD in NED -> attitude of FLU in NWU: ``(w, x, -y, -z)``; an involution."""
    flipped: Vector = _vec(q) * _FLIP_QUAT_YZ
    return flipped


def _canonical(q: Vector) -> Vector:
    """q and -q are the same rotation; return the one with w >= 0."""
    return -q if q[0] < 0 else q


def quat_ned_frd_to_enu_flu(q: ArrayLike) -> Vector:
    """Attitude of FRD in NED -> attitude of FLU in ENU (``q_enu_ned * q * q_frd_flu``)."""
    return _canonical(quat_multiply(quat_multiply(_Q_ENU_NED, q), _Q_FRD_FLU))


def quat_enu_flu_to_ned_frd(q: ArrayLike) -> Vector:
    inner = quat_multiply(quat_conjugate(_Q_ENU_NED), q)
    return _canonical(quat_multiply(inner, quat_conjugate(_Q_FRD_FLU)))


def world_vector(v: ArrayLike, to: WorldFrame) -> Vector:
    """A NED world vector expressed in ``to``."""
    if to is WorldFrame.NED:
        return _vec(v).copy()
    return ned_to_nwu(v) if to is WorldFrame.NWU else ned_to_enu(v)


def world_attitude(q_ned_frd: ArrayLike, to: WorldFrame) -> Vector:
    """An FRD-in-NED attitude expressed as FLU-in-``to`` (FRD-in-NED when ``to`` is NED)."""
    if to is WorldFrame.NED:
        return _vec(q_ned_frd).copy()
    if to is WorldFrame.NWU:
        return quat_ned_frd_to_nwu_flu(q_ned_frd)
    return quat_ned_frd_to_enu_flu(q_ned_frd)


@dataclass(frozen=True, slots=True, eq=False)
class Odometry:
    """Odometry in a named convention: ``frame`` is e.g. ``"NWU/FLU"`` or ``"ENU/FLU"``.

    A field whose validity bit is clear in the reply's flags (VSP 3.3: bit 0 position, 1
    attitude, 2 linear velocity, 3 angular velocity) is ``None``, never a stale or zero value.
    """

    copter_id: int
    frame: str
    simulation_time_s: float
    position_m: Vector | None
    quaternion_wxyz: Vector | None
    linear_velocity_m_s: Vector | None  # world frame
    angular_velocity_rad_s: Vector | None  # body frame
    epoch: int | None = None

    def to_dict(self) -> dict[str, Any]:
        def listed(a: Vector | None) -> list[float] | None:
            return None if a is None else a.tolist()

        return {
            "type": "Odometry",
            "copter_id": self.copter_id,
            "frame": self.frame,
            "simulation_time_s": self.simulation_time_s,
            "position_m": listed(self.position_m),
            "quaternion_wxyz": listed(self.quaternion_wxyz),
            "linear_velocity_m_s": listed(self.linear_velocity_m_s),
            "angular_velocity_rad_s": listed(self.angular_velocity_rad_s),
            "epoch": self.epoch,
        }


def check_frame_type(odom: OdomReply) -> None:
    """Raise :class:`UnsupportedFrame` unless the reply is world NED / body FRD (VSP 3.3)."""
    if odom.frame_type != OdomFrameType.NED_FRD:
        raise UnsupportedFrame(
            f"OdomReply.frame_type: expected {int(OdomFrameType.NED_FRD)} (world NED, body FRD), "
            f"got {odom.frame_type}"
        )


_UNIT_TOLERANCE = 1e-3


def _is_unit(q: ArrayLike) -> bool:
    norm = float(np.linalg.norm(np.asarray(q, dtype=np.float64)))
    return math.isfinite(norm) and abs(norm - 1.0) <= _UNIT_TOLERANCE


def odometry_in(odom: OdomReply, to: WorldFrame) -> Odometry:
    """Convert a CopterSim odometry reply (NED/FRD) to ``to`` (NWU/FLU or ENU/FLU).

    Raises :class:`UnsupportedFrame` when ``frame_type`` is not 1 (NED/FRD): no other value is
    documented, and converting it as NED/FRD would silently give wrong axes.
    """
    check_frame_type(odom)
    flags = odom.flags
    body = "FRD" if to is WorldFrame.NED else "FLU"
    position = attitude = velocity = rates = None
    if flags & OdomFlags.POSITION_VALID:
        position = world_vector(odom.position_ned_m, to)
    if flags & OdomFlags.ATTITUDE_VALID and _is_unit(odom.quaternion_wxyz):
        # An all-zero quaternion is the simulator's "unset"; anything far from unit length
        # is not an attitude, whatever the flag says.
        attitude = world_attitude(odom.quaternion_wxyz, to)
    if flags & OdomFlags.VELOCITY_VALID:
        velocity = world_vector(odom.velocity_ned_m_s, to)
    if flags & OdomFlags.ANGULAR_VELOCITY_VALID:
        raw = _vec(odom.angular_velocity_frd_rad_s)
        rates = raw.copy() if body == "FRD" else frd_to_flu(raw)
    return Odometry(
        copter_id=odom.copter_id,
        frame=f"{to.value}/{body}",
        simulation_time_s=odom.simulation_time_s,
        position_m=position,
        quaternion_wxyz=attitude,
        linear_velocity_m_s=velocity,
        angular_velocity_rad_s=rates,
    )


def imu_flu(imu: ImuReply) -> tuple[Vector, Vector]:
    """(specific force m/s², angular rate rad/s) in body FLU, both as ``(x, -y, -z)``."""
    return frd_to_flu(imu.acceleration_frd_m_s2), frd_to_flu(imu.angular_rate_frd_rad_s)


class LocalOdometry:
    """Local odometry origins per vehicle, with discontinuity epochs (VSP 3.3; DEC frames).

    The first sample with valid position and attitude sets the origin (epoch 0). A sample with
    the discontinuity flag clears it and is not output; the next valid sample sets a new origin
    in the next epoch. Local positions are ``position - origin`` with the world axes kept.
    ``max_vehicles`` bounds the table against a peer inventing CopterIDs. A sample whose
    ``frame_type`` is not NED/FRD is dropped and counted in ``dropped_frame_type``; velocity and
    angular rate are ``None`` when their validity bits are clear.
    """

    def __init__(self, *, max_vehicles: int = 64) -> None:
        self.max_vehicles = max_vehicles
        self._origin: dict[int, Vector | None] = {}
        self._epoch: dict[int, int] = {}
        self.dropped_invalid = 0
        self.dropped_discontinuity = 0
        self.dropped_table_full = 0
        self.dropped_frame_type = 0

    def epoch(self, copter_id: int) -> int | None:
        return self._epoch.get(copter_id)

    def update(self, odom: OdomReply, to: WorldFrame = WorldFrame.NED) -> Odometry | None:
        """Return the sample in the local frame, or ``None`` when it cannot be placed."""
        cid = odom.copter_id
        if odom.frame_type != OdomFrameType.NED_FRD:  # counted, not raised: a stream consumer
            self.dropped_frame_type += 1
            return None
        if cid not in self._origin and len(self._origin) >= self.max_vehicles:
            self.dropped_table_full += 1
            return None
        if odom.discontinuity:
            self._origin[cid] = None
            self.dropped_discontinuity += 1
            return None
        if not odom.pose_valid:
            self.dropped_invalid += 1
            return None
        origin = self._origin.get(cid)
        if origin is None:
            origin = _vec(odom.position_ned_m)
            self._origin[cid] = origin
            self._epoch[cid] = self._epoch[cid] + 1 if cid in self._epoch else 0
        out = odometry_in(odom, to)
        local_ned = _vec(odom.position_ned_m) - origin
        return Odometry(
            out.copter_id,
            out.frame,
            out.simulation_time_s,
            world_vector(local_ned, to),
            out.quaternion_wxyz,
            out.linear_velocity_m_s,
            out.angular_velocity_rad_s,
            self._epoch[cid],
        )
