"""gizmo_host: the Gizmo camera board's VISION_RESULT v1 UART protocol, host side.

The sans-I/O core (``protocol``, ``results``, ``parser``, ``batch``) turns bytes into typed
values with no clocks or sockets; the live link and its consumers are built on top of it.
"""

from .batch import FRAME_DTYPE, decode_capture
from .errors import (
    BadPayloadLength,
    BadSync,
    CrcMismatch,
    EncodeError,
    FrameError,
    FrameLengthError,
    GizmoError,
    TruncatedFrame,
    UnknownMessageType,
    UnsupportedVersion,
)
from .parser import ParserStats, StreamParser
from .protocol import FRAME_LEN, ResultFlags, VisionResult, crc16
from .results import ResultType, interpret

__version__ = "0.1.0"

__all__ = [
    "FRAME_DTYPE",
    "FRAME_LEN",
    "BadPayloadLength",
    "BadSync",
    "CrcMismatch",
    "EncodeError",
    "FrameError",
    "FrameLengthError",
    "GizmoError",
    "ParserStats",
    "ResultFlags",
    "ResultType",
    "StreamParser",
    "TruncatedFrame",
    "UnknownMessageType",
    "UnsupportedVersion",
    "VisionResult",
    "__version__",
    "crc16",
    "decode_capture",
    "interpret",
]
