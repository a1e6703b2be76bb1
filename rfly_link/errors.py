"""Exception tree and drop causes for rfly_link.

::

    RflyLinkError
    ├── DecodeError (also ValueError)      the peer sent something we reject; counted, never fatal
    │   ├── WrongLength                     no structure has this length, or not the one expected
    │   ├── UnknownChecksum                 the length is known but the marker is not
    │   ├── AmbiguousDatagram               several structures fit and no port tells them apart
    │   ├── WrongPort                       the structure fits but never travels on this port
    │   ├── InconsistentPayload             a count or size field disagrees with the length
    │   └── UnsupportedFrame                a frame_type we cannot interpret (odometry)

A Config.json that the SDK's loader would reject is the one ``gizmo_core.ConfigError``.

Every ``DecodeError`` carries a :class:`DropCause`, so receive loops count the cause instead of
dying: in the SDK one bad datagram ends its receive thread.
"""

from __future__ import annotations

from enum import Enum


class DropCause(str, Enum):
    """Why a datagram, fragment or frame was discarded (keys of the drop counters)."""

    SHORT = "short"
    WRONG_LENGTH = "wrong_length"
    UNKNOWN_CHECKSUM = "unknown_checksum"
    AMBIGUOUS = "ambiguous"
    WRONG_PORT = "wrong_port"
    INCONSISTENT = "inconsistent"
    ABSURD_SIZE = "absurd_size"
    BAD_SEQUENCE = "bad_sequence"
    DUPLICATE = "duplicate"
    LATE_FRAGMENT = "late_fragment"
    TIMEOUT = "timeout"
    OVERFLOW = "overflow"
    FRAME_TOO_LARGE = "frame_too_large"
    SENDER_NOT_ALLOWED = "sender_not_allowed"
    QUEUE_FULL = "queue_full"
    DECODE_FAILED = "decode_failed"
    UNSUPPORTED_FRAME = "unsupported_frame"
    SOCKET_ERROR = "socket_error"
    BYTES_IN_FLIGHT = "bytes_in_flight"


class RflyLinkError(Exception):
    """Base of every error raised by rfly_link."""


class DecodeError(RflyLinkError, ValueError):
    """Remote error: the bytes do not form a valid structure. ``cause`` says why."""

    cause: DropCause = DropCause.DECODE_FAILED

    def __init__(self, message: str, cause: DropCause | None = None) -> None:
        super().__init__(message)
        if cause is not None:
            self.cause = cause


class WrongLength(DecodeError):
    cause = DropCause.WRONG_LENGTH


class UnknownChecksum(DecodeError):
    cause = DropCause.UNKNOWN_CHECKSUM


class AmbiguousDatagram(DecodeError):
    """Several structures share this length and checksum; only the port tells them apart."""

    cause = DropCause.AMBIGUOUS

    def __init__(self, message: str, candidates: tuple[str, ...]) -> None:
        super().__init__(message)
        self.candidates = candidates


class WrongPort(DecodeError):
    """Length and checksum fit, but the port's role in RflySim's map excludes the structure."""

    cause = DropCause.WRONG_PORT


class InconsistentPayload(DecodeError):
    cause = DropCause.INCONSISTENT


class UnsupportedFrame(DecodeError):
    """A coordinate-frame code we do not know: converting it as NED/FRD would be wrong."""

    cause = DropCause.UNSUPPORTED_FRAME
