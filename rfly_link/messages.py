"""Typed, immutable values for every fixed-size RflySim structure.

Each class is generated from one :class:`rfly_link.wire.Layout`: the decorator
:func:`wire_message` turns the layout's fields into dataclass fields (with zero defaults and the
canonical checksum), so encoder, decoder, ``to_dict`` and docs all derive from the one table.
Classes only add named helpers. ``decode`` checks the exact length and the checksum marker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any, ClassVar, TypeVar

from rfly_link import wire
from rfly_link.errors import UnknownChecksum, WrongLength

T = TypeVar("T", bound="WireMessage")


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, bytes):
        return value.split(b"\0", 1)[0].decode("utf-8", "replace")
    return value


class WireMessage:
    """Behaviour shared by every generated message class (see :func:`wire_message`)."""

    __slots__ = ()
    LAYOUT: ClassVar[wire.Layout]
    CHECKSUMS: ClassVar[tuple[int, ...]]

    def __post_init__(self) -> None:
        for f in self.LAYOUT.fields:
            value = getattr(self, f.name)
            if f.is_array:
                if not isinstance(value, tuple):
                    value = tuple(value)
                    object.__setattr__(self, f.name, value)
                if len(value) != f.count:
                    raise ValueError(
                        f"{type(self).__name__}.{f.name}: expected {f.count} values, "
                        f"got {len(value)}"
                    )
            elif f.code == "s":
                if isinstance(value, str):
                    value = value.encode("utf-8")
                    object.__setattr__(self, f.name, value)
                if len(value) > f.count:
                    raise ValueError(
                        f"{type(self).__name__}.{f.name}: at most {f.count} bytes, got {len(value)}"
                    )
        checksum = getattr(self, "checksum", None)
        if self.CHECKSUMS and checksum not in self.CHECKSUMS:
            raise ValueError(
                f"{type(self).__name__}.checksum: expected one of {self.CHECKSUMS}, got {checksum}"
            )

    @classmethod
    def decode(cls: type[T], data: bytes | bytearray | memoryview) -> T:
        """Decode exactly ``LAYOUT.size`` bytes; raise a :class:`DecodeError` subclass otherwise."""
        layout = cls.LAYOUT
        if len(data) != layout.size:
            raise WrongLength(f"{cls.__name__}: expected {layout.size} bytes, got {len(data)}")
        values = layout.unpack(data)
        if cls.CHECKSUMS and values[0] not in cls.CHECKSUMS:
            raise UnknownChecksum(
                f"{cls.__name__}.checksum: expected one of {cls.CHECKSUMS}, got {values[0]}"
            )
        return cls(*values)

    def encode(self) -> bytes:
        return self.LAYOUT.pack([getattr(self, name) for name in self.LAYOUT.names])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: class name, every wire field, then any derived values."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for name in self.LAYOUT.names:
            out[name] = _plain(getattr(self, name))
        out.update(self._derived())
        return out

    def _derived(self) -> dict[str, Any]:
        return {}


def wire_message(layout: wire.Layout, *checksums: int) -> Callable[[type[Any]], type[WireMessage]]:
    """Class decorator: fields, defaults and codec from ``layout``; first checksum is default."""

    def wrap(cls: type[Any]) -> type[WireMessage]:
        annotations: dict[str, Any] = {}
        for f in layout.fields:
            if f.is_array:
                annotations[f.name] = tuple
            elif f.code == "s":
                annotations[f.name] = bytes
            else:
                annotations[f.name] = float if f.code in "fd" else int
            default = checksums[0] if f.name == "checksum" and checksums else f.default()
            setattr(cls, f.name, default)
        cls.__annotations__ = annotations
        cls.LAYOUT = layout
        cls.CHECKSUMS = tuple(checksums)
        return dataclass(frozen=True, slots=True)(cls)

    return wrap


# --- Sensor payloads with a fixed size -------------------------------------------------------


@wire_message(wire.DISTANCE_SENSOR)
class DistanceSensor(WireMessage):
    """TypeID 5 laser range finder (56 B)."""


@wire_message(wire.OPTICAL_FLOW)
class OpticalFlow(WireMessage):
    """TypeID 10 optical flow (34 B, packed; flow_x/flow_y raw int16)."""


@wire_message(wire.BOX_TARGET)
class BoxTarget(WireMessage):
    """One TypeID 30 detection box (image coordinates as sent)."""


@wire_message(wire.RADAR_TARGET)
class RadarTarget(WireMessage):
    """One TypeID 31 target position relative to the sensor."""


# --- CopterSim --------------------------------------------------------------------------------


class CopterSimSensor(IntEnum):
    IMU = 0
    ODOMETRY = 1


@wire_message(wire.SENSOR_REQ_COPTERSIM, 12345)
class SensorReqCopterSim(WireMessage):
    """Ask CopterSim to stream IMU or odometry replies to ``ip:port`` at ``update_freq_hz``."""

    @classmethod
    def build(
        cls, sensor: CopterSimSensor, rate_hz: int, reply_ip: str, reply_port: int
    ) -> SensorReqCopterSim:
        if not 1 <= rate_hz <= 1000:
            raise ValueError(f"update_freq_hz: expected 1..1000, got {rate_hz}")
        ip = tuple(int(part) for part in reply_ip.split("."))
        if len(ip) != 4:
            raise ValueError(f"ip: expected a dotted IPv4 address, got {reply_ip!r}")
        return cls(12345, int(sensor), rate_hz, reply_port, ip, (0.0,) * 6)

    @property
    def reply_ip(self) -> str:
        return ".".join(str(b) for b in self.ip)


@wire_message(wire.IMU_REPLY, 1234567898)
class ImuReply(WireMessage):
    """Raw CopterSim IMU sample, body FRD (VSP 3.2)."""


class OdomFlags(IntFlag):
    POSITION_VALID = 1 << 0
    ATTITUDE_VALID = 1 << 1
    VELOCITY_VALID = 1 << 2
    ANGULAR_VELOCITY_VALID = 1 << 3
    DISCONTINUITY = 1 << 5


class OdomFrameType(IntEnum):
    NED_FRD = 1


@wire_message(wire.ODOM_REPLY, 1234567888)
class OdomReply(WireMessage):
    """CopterSim odometry: world NED, body FRD when ``frame_type == 1`` (VSP 3.3)."""

    @property
    def flag_set(self) -> OdomFlags:
        return OdomFlags(self.flags & sum(OdomFlags))

    @property
    def discontinuity(self) -> bool:
        return bool(self.flags & OdomFlags.DISCONTINUITY)

    @property
    def pose_valid(self) -> bool:
        need = OdomFlags.POSITION_VALID | OdomFlags.ATTITUDE_VALID
        return self.flags & need == need

    def _derived(self) -> dict[str, Any]:
        return {
            "flag_names": [f.name for f in OdomFlags if self.flags & f],
            "frame": "NED/FRD" if self.frame_type == OdomFrameType.NED_FRD else "unknown",
        }


@wire_message(wire.SOUT2SIMULATOR, 123456789)
class SOut2Simulator(WireMessage):
    """CopterSim vehicle state (168 B) received on ``30100 + 2N - 1``."""


@wire_message(wire.SOUT2SIMULATOR, 123456789)
class UE4PosFull(WireMessage):
    """``sendUE4PosFull``: the SOut2Simulator layout sent to RflySim3D on ``20010 + window``."""


@wire_message(wire.SOUT2SIMULATOR_SIMPLE_TIME, 1234567891)
class SOut2SimulatorSimpleTime(WireMessage):
    """CopterSim's 112 B state (GPS as scaled ints) on ``30100 + 2N - 1``."""

    @property
    def position_gps(self) -> tuple[float, float, float]:
        """(lat deg, lon deg, alt m) from the wire's 1e7 / 1e7 / 1e3 integers."""
        lat, lon, alt = self.position_gps_int
        return lat / 1e7, lon / 1e7, alt / 1e3


@wire_message(wire.SOUT2SIMULATOR_SIMPLE_TIME, 1234567891)
class UE4PosNew(WireMessage):
    """``sendUE4PosNew``: the 112 B vehicle update sent to RflySim3D on ``20010 + window``."""


class SilCmd(IntFlag):
    """``in_ints[0]`` command bits (RflySimCP in the public SDK's DllSimCtrlAPI)."""

    ENABLE = 1
    SIL = 1 << 1
    ARMED = 1 << 2
    TAKEOFF = 1 << 8
    POSITION = 1 << 9
    LAND = 1 << 10
    RETURN = 1 << 11
    HORIZONTAL = 1 << 14
    OFFBOARD_POS = 1 << 16
    OFFBOARD_ATT = 1 << 17


SIL_CMD_BASE = SilCmd.ENABLE | SilCmd.SIL


class SilOffboard(IntFlag):
    """``in_ints[1]`` offboard bits: which ``in_floats`` are valid and in which frame."""

    HAS_POS = 1
    HAS_VEL = 1 << 1
    HAS_ACC = 1 << 2
    HAS_YAW = 1 << 3
    HAS_YAW_RATE = 1 << 4
    HAS_ATT = 1 << 8
    HAS_ROLL_RATE = 1 << 9
    HAS_PITCH_RATE = 1 << 10
    HAS_THRUST = 1 << 11
    FRD = 1 << 12
    LOCAL = 1 << 13
    HAS_FULL = 1 << 15
    NED = 1 << 16
    GLOBAL = 1 << 17


# in_floats slots (RflySimCP.FPos, FVel, FAcc, FAtt, FAttRate, FThrust)
SIL_POS, SIL_VEL, SIL_ACC, SIL_ATT, SIL_ATT_RATE, SIL_THRUST = 0, 3, 6, 9, 12, 15


@wire_message(wire.SIL_INT_FLOAT, 1234567897)
class SILIntFloat(WireMessage):
    """Inputs to the CopterSim DLL model (120 B), sent to ``30100 + 2(N - 1)``.

    The flag meanings come from the public SDK (``RflySimCP``); the specs name only
    ``CmdArmed | CmdPosition`` and ``HasPos | HasYaw``.
    """

    @classmethod
    def _offboard(
        cls, copter_id: int, cmd: SilCmd, offboard: SilOffboard, slots: dict[int, float]
    ) -> SILIntFloat:
        ints = [0] * 8
        ints[0] = int(cmd)
        ints[1] = int(offboard)
        floats = [0.0] * 20
        for index, value in slots.items():
            floats[index] = float(value)
        return cls(1234567897, copter_id, tuple(ints), tuple(floats))

    @classmethod
    def position_ned(
        cls, copter_id: int, north_m: float, east_m: float, down_m: float, yaw_rad: float = 0.0
    ) -> SILIntFloat:
        """Armed position hold at a NED point with a yaw (``RflySimCP.getPosNED``)."""
        cmd = SIL_CMD_BASE | SilCmd.ARMED | SilCmd.POSITION
        slots = {SIL_POS: north_m, SIL_POS + 1: east_m, SIL_POS + 2: down_m, SIL_ATT + 2: yaw_rad}
        return cls._offboard(copter_id, cmd, SilOffboard.HAS_POS | SilOffboard.HAS_YAW, slots)

    @classmethod
    def velocity_ned(
        cls,
        copter_id: int,
        vn_m_s: float,
        ve_m_s: float,
        vd_m_s: float,
        yaw_rate_rad_s: float = 0.0,
    ) -> SILIntFloat:
        """Armed NED velocity with a yaw rate (``RflySimCP.getVelNED``)."""
        slots = {SIL_VEL: vn_m_s, SIL_VEL + 1: ve_m_s, SIL_VEL + 2: vd_m_s}
        slots[SIL_ATT_RATE + 2] = yaw_rate_rad_s
        flags = SilOffboard.HAS_VEL | SilOffboard.HAS_YAW_RATE
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, flags, slots)

    @classmethod
    def velocity_frd(
        cls,
        copter_id: int,
        vf_m_s: float,
        vr_m_s: float,
        vd_m_s: float,
        yaw_rate_rad_s: float = 0.0,
    ) -> SILIntFloat:
        """Armed body-FRD velocity with a yaw rate (``RflySimCP.getVelFRD``)."""
        slots = {SIL_VEL: vf_m_s, SIL_VEL + 1: vr_m_s, SIL_VEL + 2: vd_m_s}
        slots[SIL_ATT_RATE + 2] = yaw_rate_rad_s
        flags = SilOffboard.HAS_VEL | SilOffboard.HAS_YAW_RATE | SilOffboard.FRD
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, flags, slots)

    @classmethod
    def yaw(cls, copter_id: int, yaw_rad: float) -> SILIntFloat:
        """Armed yaw-only set point."""
        slots = {SIL_ATT + 2: yaw_rad}
        return cls._offboard(copter_id, SIL_CMD_BASE | SilCmd.ARMED, SilOffboard.HAS_YAW, slots)

    @property
    def command(self) -> SilCmd:
        return SilCmd(self.in_ints[0] & sum(SilCmd))

    @property
    def offboard(self) -> SilOffboard:
        return SilOffboard(self.in_ints[1] & sum(SilOffboard))

    def _derived(self) -> dict[str, Any]:
        return {
            "command_flags": [f.name for f in SilCmd if self.in_ints[0] & f],
            "offboard_flags": [f.name for f in SilOffboard if self.in_ints[1] & f],
        }


# --- Vision-sensor requests and the gimbal -----------------------------------------------------


@wire_message(wire.VISION_SENSOR_REQ, 12345)
class VisionSensorReq(WireMessage):
    """Sensor creation request, new 144 B layout, sent to ``20010 + window``."""


@wire_message(wire.VISION_SENSOR_REQ_LEGACY, 12345)
class VisionSensorReqLegacy(WireMessage):
    """Sensor creation request, legacy 92 B layout (files without ``EularOrQuat``)."""


class GimbalBit(IntFlag):
    """VisionSensorReqNew ``bitmask`` controls (VSP 4.2) and the ``other_params`` they use."""

    FOV = 1 << 1  # camera_fov_deg
    ATTITUDE = 1 << 2  # sensor_ang_eular / sensor_ang_quat
    QUATERNION_MODE = 1 << 3  # eular_or_quat, sensor_ang_quat
    FOCAL_LENGTH = 1 << 4  # other_params[0], mm
    RECENTER = 1 << 5  # other_params[1] > 0
    ANGULAR_RATE = 1 << 6  # other_params[2:4] pitch, yaw deg/s (DEC)
    OPTICAL_ZOOM = 1 << 7  # other_params[4]
    TRACK_TARGET = 1 << 8  # other_params[5]
    LASER_RANGE = 1 << 9  # other_params[6]
    IMAGE_SOURCE = 1 << 10  # other_params[7]: 0 RGB, 1 IR colour, 2 IR grey
    AI_SELECT = 1 << 11  # other_params[8:11]


class GimbalImageSource(IntEnum):
    RGB = 0
    INFRARED_COLOUR = 1
    INFRARED_GREY = 2


@wire_message(wire.VISION_SENSOR_REQ_NEW, 12345)
class VisionSensorReqNew(WireMessage):
    """Gimbal control request (148 B, checksum 12345), sent to ``20010 + window``.

    Build one with :meth:`for_sensor` then chain the ``with_*`` helpers; each sets its bit and
    the fields or ``other_params`` entries that bit selects.
    """

    @classmethod
    def for_sensor(cls, seq_id: int, *, type_id: int = 9, target_copter: int = 1) -> Any:
        return cls(seq_id=seq_id, type_id=type_id, target_copter=target_copter)

    def _with(self, bit: GimbalBit, params: dict[int, float] | None = None, **fields: Any) -> Any:
        other = list(self.other_params)
        for index, value in (params or {}).items():
            other[index] = float(value)
        values = {name: getattr(self, name) for name in self.LAYOUT.names}
        values.update(fields)
        values["bitmask"] = self.bitmask | int(bit)
        values["other_params"] = tuple(other)
        return type(self)(**values)

    def with_fov(self, fov_deg: float) -> Any:
        return self._with(GimbalBit.FOV, camera_fov_deg=fov_deg)

    def with_attitude_euler(self, roll: float, pitch: float, yaw: float) -> Any:
        return self._with(GimbalBit.ATTITUDE, sensor_ang_eular=(roll, pitch, yaw))

    def with_attitude_quaternion(self, w: float, x: float, y: float, z: float) -> Any:
        bits = GimbalBit.ATTITUDE | GimbalBit.QUATERNION_MODE
        return self._with(bits, eular_or_quat=1.0, sensor_ang_quat=(w, x, y, z))

    def with_focal_length(self, focal_mm: float) -> Any:
        return self._with(GimbalBit.FOCAL_LENGTH, {0: focal_mm})

    def with_recenter(self) -> Any:
        return self._with(GimbalBit.RECENTER, {1: 1.0})

    def with_angular_rate(self, pitch_deg_s: float, yaw_deg_s: float) -> Any:
        return self._with(GimbalBit.ANGULAR_RATE, {2: pitch_deg_s, 3: yaw_deg_s})

    def with_optical_zoom(self, zoom: float) -> Any:
        return self._with(GimbalBit.OPTICAL_ZOOM, {4: zoom})

    def with_track_target(self, copter_id: int) -> Any:
        return self._with(GimbalBit.TRACK_TARGET, {5: copter_id})

    def with_laser_range(self, on: bool) -> Any:
        return self._with(GimbalBit.LASER_RANGE, {6: 1.0 if on else 0.0})

    def with_image_source(self, source: GimbalImageSource) -> Any:
        return self._with(GimbalBit.IMAGE_SOURCE, {7: int(source)})

    def with_ai_select_all(self) -> Any:
        return self._with(GimbalBit.AI_SELECT, {8: 1.0})

    def with_ai_select_pixel(self, x_px: float, y_px: float) -> Any:
        return self._with(GimbalBit.AI_SELECT, {8: 2.0, 9: x_px, 10: y_px})

    def _derived(self) -> dict[str, Any]:
        return {"bits": [b.name for b in GimbalBit if self.bitmask & b]}


@wire_message(wire.VISION_SENSOR_REQ_NEW, 12346)
class GimbalStatus(WireMessage):
    """Gimbal status (148 B, checksum 12346) received on port 20006.

    ``other_params`` meanings depend on the RflySim3D version (DEC gimbal): the named
    accessors below follow the documented ones and are **version-dependent**.
    """

    @property
    def focal_length_mm(self) -> float:
        return self.other_params[0]

    @property
    def fx_px(self) -> float:
        return self.other_params[3]

    @property
    def fy_px(self) -> float:
        return self.other_params[4]

    @property
    def width_px(self) -> float:
        return self.other_params[5]

    @property
    def height_px(self) -> float:
        return self.other_params[6]

    @property
    def laser_range_m(self) -> float:
        return self.other_params[7]

    def _derived(self) -> dict[str, Any]:
        return {
            "version_dependent": {
                "fx_px": self.fx_px,
                "fy_px": self.fy_px,
                "width_px": self.width_px,
                "height_px": self.height_px,
                "laser_range_m": self.laser_range_m,
            }
        }


# --- RflySim3D receive side (port 20006) -------------------------------------------------------


@wire_message(wire.CRASH, 1234567890)
class CopterSimCrash(WireMessage):
    """Collision report from RflySim3D (12 B)."""


@wire_message(wire.REQ_VE_CRASH_DATA, 1234567897)
class ReqVeCrashData(WireMessage):
    """Per-vehicle crash/ray data (160 B)."""


@wire_message(wire.CAMERA_DATA_56, 1234567891)
class CameraData(WireMessage):
    """Camera pose report, 56 B (after a reqCam console request)."""


@wire_message(wire.CAMERA_DATA_72, 1234567891)
class CameraDataQuat(WireMessage):
    """Camera pose report with quaternion, 72 B."""


@wire_message(wire.COPT_REQ_DATA_64, 1234567891)
class CoptReqData(WireMessage):
    """Vehicle pose and bounding box, 64 B (after reqCopt)."""


@wire_message(wire.COPT_REQ_DATA_80, 1234567891)
class CoptReqDataQuat(WireMessage):
    """Vehicle pose, box and quaternion, 80 B."""


@wire_message(wire.OBJ_REQ_DATA_96, 1234567891)
class ObjReqData(WireMessage):
    """Scene object pose, box and name, 96 B (after reqObj)."""


@wire_message(wire.OBJ_REQ_DATA_112, 1234567891)
class ObjReqDataQuat(WireMessage):
    """Scene object pose, box, quaternion and name, 112 B."""


# --- RflySim3D send side (port 20010 + window) -----------------------------------------------

UE4_NORMAL = 1234567890
UE4_FIT_GROUND = 1234567891


@wire_message(wire.UE4_POS_SIMPLE, UE4_NORMAL, UE4_FIT_GROUND)
class UE4PosSimple(WireMessage):
    """``sendUE4Pos`` (checksum 1234567890) and ``sendUE4Pos2Ground`` (1234567891)."""

    @property
    def fit_ground(self) -> bool:
        return self.checksum == UE4_FIT_GROUND


@wire_message(wire.UE4_POS_SCALE, UE4_NORMAL, UE4_FIT_GROUND)
class UE4PosScale(WireMessage):
    """``sendUE4PosScale`` / ``sendUE4PosScale2Ground``."""


@wire_message(wire.UE4_POS_SIMPLE_TIME, UE4_NORMAL)
class UE4PosSimpleTime(WireMessage):
    """``sendUE4PosSimple`` (88 B)."""


@wire_message(wire.MULTI_3D_DATA_100, UE4_NORMAL, UE4_FIT_GROUND)
class UE4PosScale100(WireMessage):
    """``sendUE4PosScale100``: 100 vehicles at once; copter_id 0 hides a slot."""


@wire_message(wire.MULTI_3D_DATA_20, UE4_NORMAL, UE4_FIT_GROUND)
class UE4PosScalePwm20(WireMessage):
    """``sendUE4PosScalePwm20``: 20 vehicles with 8 PWMs each."""


@wire_message(wire.COPTER_MSG, 1234567899)
class UE4LabelMsg(WireMessage):
    """``sendUE4LabelMsg``: text shown above a vehicle (UTF-8, at most 119 bytes + NUL)."""


@wire_message(wire.VEHICLE_ATTACH_25, 1234567892)
class UE4Attach(WireMessage):
    """``sendUE4Attatch``: attach up to 25 vehicles to others."""


@wire_message(wire.UE4_EXT_MSG, 1234567894)
class UE4ExtAct(WireMessage):
    """``sendUE4ExtAct``: 16 values for the vehicle's extended blueprint actions."""


@wire_message(wire.UE4_CMD_SHORT, UE4_NORMAL)
class UE4Command(WireMessage):
    """Console command, up to 51 bytes (``i52s``)."""


@wire_message(wire.UE4_CMD_LONG, UE4_NORMAL)
class UE4CommandLong(WireMessage):
    """Console command, up to 249 bytes (``i252s``)."""


@wire_message(wire.UE4_CMD_NET, 1234567897)
class UE4CommandNet(WireMessage):
    """LAN console command to 224.0.0.10:20009, up to 91 bytes (``i92s``)."""


def console_command(command: str) -> UE4Command | UE4CommandLong:
    """Pick the short or long console structure as the SDK does (51 / 249 byte limits)."""
    data = command.encode("utf-8")
    if len(data) <= 51:
        return UE4Command(UE4_NORMAL, data)
    if len(data) <= 249:
        return UE4CommandLong(UE4_NORMAL, data)
    raise ValueError(f"command: at most 249 UTF-8 bytes, got {len(data)}")


def lan_command(command: str) -> UE4CommandNet:
    data = command.encode("utf-8")
    if len(data) > 91:
        raise ValueError(f"command: at most 91 UTF-8 bytes, got {len(data)}")
    return UE4CommandNet(1234567897, data)


def label_message(
    copter_id: int,
    text: str,
    *,
    font_size: float = 30.0,
    rgb: tuple[int, int, int] = (255, 0, 0),
    disp_time_s: float = 0.0,
    disp_flag: int = -1,
) -> UE4LabelMsg:
    data = text.encode("utf-8")
    if len(data) > 119:
        raise ValueError(f"text: at most 119 UTF-8 bytes, got {len(data)}")
    return UE4LabelMsg(1234567899, copter_id, disp_flag, rgb, disp_time_s, font_size, data)
