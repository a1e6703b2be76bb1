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

# The live link pulls in asyncio and serialx; it is imported on first use so that the codec
# and the decode tool stay quick to start.
_LIVE_LINK = {
    "GizmoService": "service",
    "SerialLink": "link",
    "Decision": "store",
    "HoldReason": "store",
    "TargetSelector": "store",
    "Verdict": "store",
    "LinkEvent": "events",
    "LinkState": "events",
    "ReceivedResult": "events",
}


def __getattr__(name: str) -> object:
    module = _LIVE_LINK.get(name)
    if module is None:
        raise AttributeError(f"module 'gizmo_host' has no attribute {name!r}")
    from importlib import import_module  # noqa: PLC0415

    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "FRAME_DTYPE",
    "FRAME_LEN",
    "BadPayloadLength",
    "BadSync",
    "CrcMismatch",
    "Decision",
    "EncodeError",
    "FrameError",
    "FrameLengthError",
    "GizmoError",
    "GizmoService",
    "HoldReason",
    "LinkEvent",
    "LinkState",
    "ParserStats",
    "ReceivedResult",
    "ResultFlags",
    "ResultType",
    "SerialLink",
    "StreamParser",
    "TargetSelector",
    "TruncatedFrame",
    "UnknownMessageType",
    "UnsupportedVersion",
    "Verdict",
    "VisionResult",
    "__version__",
    "crc16",
    "decode_capture",
    "interpret",
]
