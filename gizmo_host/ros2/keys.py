"""Where ROS 2 finds a message on Zenoh, and rmw_zenoh's attachment (pinned to Jazzy).

- ``bridge`` (zenoh-bridge-ros2dds): the key is the topic without its leading ``/``; the
  payload the CDR bytes (with their 4-byte encapsulation header).
- ``rmw_zenoh`` (Jazzy; ros2/rmw_zenoh ``liveliness_utils.cpp``, ``TopicInfo``): the key is
  ``<domain>/<topic without slashes>/<pkg>::msg::dds_::<Type>_/RIHS01_<hash>``; the payload the
  same CDR bytes; and every sample needs an attachment, else the subscriber drops it.

The attachment (ros2/rmw_zenoh ``attachment_helpers.cpp``, ``AttachmentData::
serialize_to_zbytes``, from the Jazzy release on) is three values in the zenoh-ext
serialization format: the sequence number (int64, little-endian), the source timestamp (int64,
ns on the wall clock) and the publisher's 16-byte gid as a ``std::array<uint8_t, 16>``, which
zenoh-cpp writes as a sequence: a LEB128 length (``0x10``) then the 16 bytes. 33 bytes in all.
Earlier rmw_zenoh releases (before zenoh 1.0) used a key/value attachment; other distros may
change it again, so ``ATTACHMENT_FORMAT`` names the one written here.
"""

from __future__ import annotations

import hashlib
import struct

STYLES = ("bridge", "rmw_zenoh")
ATTACHMENT_FORMAT = "rmw_zenoh Jazzy: int64 seq, int64 source_timestamp_ns, seq<u8>[16] gid"
GID_BYTES = 16
_ATTACHMENT = struct.Struct("<qqB16s")  # 33 bytes
ATTACHMENT_BYTES = _ATTACHMENT.size


def topic(vehicle: str, name: str) -> str:
    """``/gizmo/<vehicle>/<name>``."""
    return f"/gizmo/{vehicle}/{name}"


def dds_type(type_name: str) -> str:
    """``vision_msgs/msg/Detection3DArray`` -> ``vision_msgs::msg::dds_::Detection3DArray_``."""
    package, kind, name = type_name.split("/")
    return f"{package}::{kind}::dds_::{name}_"


def key_expr(style: str, topic_name: str, type_name: str, type_hash: str, domain: int) -> str:
    """The key a ``style`` subscriber of ``topic_name`` listens on."""
    stripped = topic_name.strip("/")
    if style == "bridge":
        return stripped
    if style == "rmw_zenoh":
        return f"{domain}/{stripped}/{dds_type(type_name)}/{type_hash}"
    raise ValueError(f"style: expected one of {', '.join(STYLES)}, got {style!r}")


def attachment(sequence_number: int, source_timestamp_ns: int, gid: bytes) -> bytes:
    """rmw_zenoh's (Jazzy) attachment for one sample."""
    if len(gid) != GID_BYTES:
        raise ValueError(f"gid: expected {GID_BYTES} bytes, got {len(gid)}")
    return _ATTACHMENT.pack(sequence_number, source_timestamp_ns, GID_BYTES, gid)


def parse_attachment(data: bytes) -> tuple[int, int, bytes]:
    """``(sequence_number, source_timestamp_ns, gid)`` of an attachment; ValueError if it is
    not Jazzy's 33 bytes."""
    if len(data) != ATTACHMENT_BYTES or data[16] != GID_BYTES:
        raise ValueError(f"attachment: expected {ATTACHMENT_FORMAT} ({ATTACHMENT_BYTES} bytes)")
    sequence_number, timestamp_ns, _, gid = _ATTACHMENT.unpack(data)
    return sequence_number, timestamp_ns, gid


def publisher_gid(session_id: str, key: str) -> bytes:
    """A stable 16-byte gid for one publisher of one session (rmw_zenoh hashes its entity's
    identity likewise; a subscriber only needs it unique)."""
    return hashlib.blake2b(f"{session_id}/{key}".encode(), digest_size=GID_BYTES).digest()
