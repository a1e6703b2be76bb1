"""Exception tree for the Gizmo UART protocol.

::

    GizmoError
     +-- FrameError            the peer sent bytes that are not a valid VISION_RESULT v1 frame
     |    +-- FrameLengthError      a whole-frame decode got the wrong number of bytes
     |    |    +-- TruncatedFrame   ... fewer than 35
     |    +-- BadSync               bytes 0..1 are not A5 47
     |    +-- UnsupportedVersion    byte 2 is not 1
     |    +-- UnknownMessageType    byte 3 is not 0x60
     |    +-- BadPayloadLength      bytes 7..8 are not 24
     |    +-- CrcMismatch           the CRC over bytes 2..32 differs from bytes 33..34
     +-- EncodeError (also ValueError)  a local value cannot be put on the wire
     +-- HexError (also ValueError)     hex text given to the decode tool is not whole bytes
     +-- IllegalTransition (also RuntimeError)  a bug: the link fed its state machine a wrong input
     +-- CaptureError (also ValueError)  an MCAP capture is truncated, damaged or not ours
     +-- CaptureWriteError (also OSError)  a capture cannot be written (disk full, I/O error)

``FrameError`` is remote: a stream parser counts it and resynchronises. ``EncodeError`` is local:
the caller built an impossible value. A setting (file or flag) that is unknown, mistyped or out
of range is the operator's: the one ``gizmo_core.ConfigError``, one line naming the key, and
exit status 2.
"""

from __future__ import annotations


class GizmoError(Exception):
    """Base of every error raised by gizmo_host."""


class FrameError(GizmoError, ValueError):
    """A frame from the board is not valid VISION_RESULT v1; the message names what is wrong."""


class FrameLengthError(FrameError):
    def __init__(self, length: int, expected: int) -> None:
        super().__init__(f"frame length: expected {expected} bytes, got {length}")
        self.length = length
        self.expected = expected


class TruncatedFrame(FrameLengthError):
    pass


class BadSync(FrameError):
    def __init__(self, received: bytes) -> None:
        super().__init__(f"sync: expected a5 47, got {received.hex(' ')}")
        self.received = received


class UnsupportedVersion(FrameError):
    def __init__(self, version: int) -> None:
        super().__init__(f"version: expected 1, got {version}")
        self.version = version


class UnknownMessageType(FrameError):
    def __init__(self, msg_type: int) -> None:
        super().__init__(f"msg_type: expected 0x60, got 0x{msg_type:02x}")
        self.msg_type = msg_type


class BadPayloadLength(FrameError):
    def __init__(self, payload_len: int) -> None:
        super().__init__(f"payload_len: expected 24, got {payload_len}")
        self.payload_len = payload_len


class CrcMismatch(FrameError):
    def __init__(self, expected: int, received: int) -> None:
        super().__init__(
            f"crc: expected 0x{expected:04x} (computed over bytes 2..32), received 0x{received:04x}"
        )
        self.expected = expected
        self.received = received


class EncodeError(GizmoError, ValueError):
    """A VisionResult field is out of its wire range; the message names the field and range."""


class HexError(GizmoError, ValueError):
    """The text is not a whole number of hex bytes."""


class IllegalTransition(GizmoError, RuntimeError):
    """A bug in the link: an input its state table does not allow in the current state."""

    def __init__(self, state: str, link_input: str) -> None:
        super().__init__(f"link state {state}: no transition for {link_input}")


class CaptureError(GizmoError, ValueError):
    """An MCAP capture cannot be read as one: the message names the file, the byte offset
    and the record or field at fault."""


class CaptureWriteError(GizmoError, OSError):
    """Writing a capture failed (a full disk, an I/O error); the message names the file."""


class ServiceFailed(GizmoError, RuntimeError):
    """The service's own work failed (a task died, a timer raised, a sink cannot be served):
    the command exits non-zero so that systemd restarts it."""
