"""pymavlink's MAVLink 2 codec (the common dialect) behind a small, counting interface.

pymavlink is imported only in this package (an import contract says so). Two ways in:

- ``decode(data)``, for a byte stream (TCP, a serial port): pymavlink's parser in robust
  mode, which resynchronises after garbage;
- ``decode_datagram(data)``, for one UDP datagram: a datagram holds whole frames, so it is
  framed here by the headers' lengths, each frame decoded alone, and whatever does not frame
  (junk, a frame cut short) dropped and counted. Nothing is carried from one datagram to the
  next, so no sender can corrupt another's stream, and junk costs a header look, not a
  byte-by-byte resync.

Garbage, a bad CRC and messages of no known id come back as counted drops, never as
exceptions into the caller's loop. With a :class:`~gizmo_host.mavlink.signing.Signer`, every
frame sent is signed and every frame received must be (refusals counted by the signer).
Messages are pymavlink objects (``Any``: pymavlink ships no type information); the session
reads their fields by name.
"""

from __future__ import annotations

from typing import Any

from pymavlink.dialects.v20 import common as mavlink

from .signing import IFLAG_SIGNED, SIGNATURE_BLOCK, Signer

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
_V1, _V2 = mavlink.PROTOCOL_MARKER_V1, mavlink.PROTOCOL_MARKER_V2


class Codec:
    """Bytes to messages and messages to bytes, as system ``system_id``/``component_id``."""

    def __init__(self, system_id: int, component_id: int, *, signer: Signer | None = None) -> None:
        if not 1 <= system_id <= 255 or not 0 <= component_id <= 255:
            raise ValueError(
                f"mavlink ids: expected system 1..255 and component 0..255, got "
                f"{system_id!r}/{component_id!r}"
            )
        self.signer = signer
        self._rx = self._parser()  # never given the key: signatures are the signer's to check
        self._tx = self._parser()
        self._tx.srcSystem = system_id
        self._tx.srcComponent = component_id
        if signer is not None:
            self._tx.signing.secret_key = signer.key
            self._tx.signing.link_id = signer.link_id
            self._tx.signing.sign_outgoing = True
        self.decoded = self.bad_data = self.unknown = self.errors = self.encoded = 0
        self.junk = 0  # datagram bytes that frame no message

    @staticmethod
    def _parser() -> Any:
        mav = mavlink.MAVLink(None)
        mav.robust_parsing = True
        return mav

    @property
    def mav(self) -> Any:
        """The pymavlink object whose ``*_encode`` methods build messages."""
        return self._tx

    def decode(self, data: bytes, now_ns: int | None = None) -> list[Any]:
        """The valid messages in stream bytes ``data`` read at ``now_ns`` (the parser keeps a
        partial frame for the next call); the rest is counted (``bad_data``, ``unknown``)."""
        mav = self._rx
        try:
            found = mav.parse_buffer(data) or []
        except Exception:  # pymavlink raises several types on hostile input: never ours to die of
            self.errors += 1
            self._rx = self._parser()
            return []
        if mav.buf_len() > _MAX_BUFFER:
            self.errors += 1
            self._rx = self._parser()
        return self._keep(found, now_ns)

    def decode_datagram(self, data: bytes, now_ns: int | None = None) -> list[Any]:
        """The valid messages in one datagram, each frame decoded alone (module docstring)."""
        found = []
        mav, at, end = self._rx, 0, len(data)
        while at < end:
            size = _frame_size(data, at)
            if size is None or at + size > end:
                self.junk += end - at
                break
            try:
                found.append(mav.decode(bytearray(data[at : at + size])))
            except Exception:  # a bad CRC or payload: pymavlink's MAVError and others
                self.bad_data += 1
            at += size
        return self._keep(found, now_ns)

    def _keep(self, found: list[Any], now_ns: int | None) -> list[Any]:
        good = []
        signer = self.signer
        for msg in found:
            if isinstance(msg, mavlink.MAVLink_bad_data):
                self.bad_data += 1
            elif isinstance(msg, mavlink.MAVLink_unknown):
                self.unknown += 1
            elif signer is None or signer.check(msg.get_msgbuf(), now_ns) is None:
                good.append(msg)
        self.decoded += len(good)
        return good

    def encode(self, msg: Any) -> bytes:
        """``msg`` packed with our ids and the next sequence number."""
        mav = self._tx
        if self.signer is not None:
            mav.signing.timestamp = self.signer.next_timestamp()
        data: bytes = bytes(msg.pack(mav))
        mav.seq = (mav.seq + 1) % 256
        self.encoded += 1
        return data

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decoded": self.decoded,
            "encoded": self.encoded,
            "bad_data": self.bad_data,
            "unknown": self.unknown,
            "junk_bytes": self.junk,
            "parser_errors": self.errors,
        }
        if self.signer is not None:
            out["signing"] = dict(self.signer.counts)
        return out


def _frame_size(data: bytes, at: int) -> int | None:
    """The length of the frame starting at ``data[at]`` by its header; ``None`` if no frame
    starts there (MAVLink 2: 10 header bytes, the payload, 2 CRC bytes and the 13-byte
    signature when flagged; MAVLink 1: 6, the payload and 2)."""
    magic = data[at]
    if magic == _V2 and at + 3 <= len(data):
        flags = data[at + 2]
        if flags & ~IFLAG_SIGNED:
            return None  # an incompatibility flag we do not know: not a frame we can read
        return 12 + data[at + 1] + (SIGNATURE_BLOCK if flags else 0)
    if magic == _V1 and at + 2 <= len(data):
        return 8 + data[at + 1]
    return None


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
