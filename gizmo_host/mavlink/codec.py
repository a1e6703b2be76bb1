"""pymavlink's MAVLink 2 codec (the common dialect) behind a small, counting interface.

pymavlink is imported only in this package (an import contract says so). Its parser runs in
robust mode: garbage bytes, a bad CRC and messages of no known id come back as counted
drops, never as exceptions into the caller's loop. Messages are pymavlink objects (``Any``:
pymavlink ships no type information); the session reads their fields by name.
"""

from __future__ import annotations

from typing import Any

from pymavlink.dialects.v20 import common as mavlink

MSG_HEARTBEAT = mavlink.MAVLINK_MSG_ID_HEARTBEAT
MSG_TIMESYNC = mavlink.MAVLINK_MSG_ID_TIMESYNC
MSG_COMMAND_LONG = mavlink.MAVLINK_MSG_ID_COMMAND_LONG
MSG_COMMAND_ACK = mavlink.MAVLINK_MSG_ID_COMMAND_ACK
MSG_ATTITUDE_QUATERNION = mavlink.MAVLINK_MSG_ID_ATTITUDE_QUATERNION
MSG_LOCAL_POSITION_NED = mavlink.MAVLINK_MSG_ID_LOCAL_POSITION_NED
MSG_ODOMETRY = mavlink.MAVLINK_MSG_ID_ODOMETRY
MSG_LANDING_TARGET = mavlink.MAVLINK_MSG_ID_LANDING_TARGET
CMD_SET_MESSAGE_INTERVAL = mavlink.MAV_CMD_SET_MESSAGE_INTERVAL
FRAME_LOCAL_NED = mavlink.MAV_FRAME_LOCAL_NED  # 1
FRAME_BODY_FRD = mavlink.MAV_FRAME_BODY_FRD  # 12
AUTOPILOT_INVALID = mavlink.MAV_AUTOPILOT_INVALID
TYPE_ONBOARD_CONTROLLER = mavlink.MAV_TYPE_ONBOARD_CONTROLLER
COMP_ONBOARD_COMPUTER = mavlink.MAV_COMP_ID_ONBOARD_COMPUTER
# An autopilot's own heartbeat (the stand-in's, gizmo_host.rigs.autopilot)
AUTOPILOT_PX4 = mavlink.MAV_AUTOPILOT_PX4
TYPE_QUADROTOR = mavlink.MAV_TYPE_QUADROTOR
STATE_ACTIVE = mavlink.MAV_STATE_ACTIVE
_MAX_BUFFER = 1 << 16  # bytes a parser may hold; a stream of nothing but garbage is dropped


class Codec:
    """Bytes to messages and messages to bytes, as system ``system_id``/``component_id``."""

    def __init__(self, system_id: int, component_id: int) -> None:
        if not 1 <= system_id <= 255 or not 0 <= component_id <= 255:
            raise ValueError(
                f"mavlink ids: expected system 1..255 and component 0..255, got "
                f"{system_id!r}/{component_id!r}"
            )
        self._mav = self._parser()
        self._mav.srcSystem = system_id
        self._mav.srcComponent = component_id
        self.decoded = self.bad_data = self.unknown = self.errors = self.encoded = 0

    @staticmethod
    def _parser() -> Any:
        mav = mavlink.MAVLink(None)
        mav.robust_parsing = True
        return mav

    @property
    def mav(self) -> Any:
        """The pymavlink object whose ``*_encode`` methods build messages."""
        return self._mav

    def decode(self, data: bytes) -> list[Any]:
        """The valid messages in ``data``; the rest is counted (``bad_data``, ``unknown``)."""
        mav = self._mav
        try:
            found = mav.parse_buffer(data) or []
        except Exception:  # pymavlink raises several types on hostile input: never ours to die of
            self.errors += 1
            self._reset()
            return []
        good = []
        for msg in found:
            if isinstance(msg, mavlink.MAVLink_bad_data):
                self.bad_data += 1
            elif isinstance(msg, mavlink.MAVLink_unknown):
                self.unknown += 1
            else:
                good.append(msg)
        self.decoded += len(good)
        if mav.buf_len() > _MAX_BUFFER:
            self.errors += 1
            self._reset()
        return good

    def _reset(self) -> None:
        fresh = self._parser()
        fresh.srcSystem, fresh.srcComponent = self._mav.srcSystem, self._mav.srcComponent
        fresh.seq = self._mav.seq
        self._mav = fresh

    def encode(self, msg: Any) -> bytes:
        """``msg`` packed with our ids and the next sequence number."""
        mav = self._mav
        data: bytes = bytes(msg.pack(mav))
        mav.seq = (mav.seq + 1) % 256
        self.encoded += 1
        return data

    def stats(self) -> dict[str, int]:
        return {
            "decoded": self.decoded,
            "encoded": self.encoded,
            "bad_data": self.bad_data,
            "unknown": self.unknown,
            "parser_errors": self.errors,
        }


def heartbeat(codec: Codec, mav_type: int, autopilot: int) -> bytes:
    return codec.encode(
        codec.mav.heartbeat_encode(mav_type, autopilot, 0, 0, mavlink.MAV_STATE_ACTIVE)
    )


def timesync(codec: Codec, tc1_ns: int, ts1_ns: int) -> bytes:
    return codec.encode(codec.mav.timesync_encode(tc1_ns, ts1_ns))


def set_message_interval(
    codec: Codec, target_system: int, target_component: int, message_id: int, rate_hz: float
) -> bytes:
    interval_us = -1.0 if rate_hz <= 0 else 1e6 / rate_hz
    msg = codec.mav.command_long_encode(
        target_system, target_component, CMD_SET_MESSAGE_INTERVAL, 0,
        float(message_id), interval_us, 0.0, 0.0, 0.0, 0.0, 0.0,
    )  # fmt: skip
    return codec.encode(msg)


def message_name(message_id: int) -> str:
    """A message id's name as pymavlink's ``get_type()`` gives it (``str(id)`` if unknown)."""
    cls = mavlink.mavlink_map.get(message_id)
    return str(message_id) if cls is None else str(cls.msgname)
