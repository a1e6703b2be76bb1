"""gizmo_host: the Gizmo camera board's VISION_RESULT v1 UART protocol, host side.

Layers, each importing only those below it (checked by import-linter):

- ``wire``: the frame codec, interpretation, the stream parser and the batch decoder; no
  clocks, no I/O;
- ``stream``: the pure per-frame pipeline (sequence tracker, device clock, result store,
  verdicts), which takes host times as arguments;
- ``live``: asyncio at the edges (serial link, service, timers, publishing); ``emulator``: the
  board without the board; ``deploy``: install, udev, systemd, diagnostics;
- ``cli``: the ``gizmo-host`` subcommands and their settings.
"""

from gizmo_host.errors import (
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
from gizmo_host.wire.batch import FRAME_DTYPE, decode_capture
from gizmo_host.wire.parser import ParserStats, StreamParser
from gizmo_host.wire.protocol import FRAME_LEN, ResultFlags, VisionResult, crc16
from gizmo_host.wire.results import ResultType, interpret

__version__ = "0.1.0"

# The live link pulls in asyncio and serialx; it is imported on first use so that the codec
# and the decode tool stay quick to start.
_LIVE_LINK = {
    "GizmoService": "live.service",
    "SerialLink": "live.link",
    "Decision": "stream.store",
    "HoldReason": "stream.store",
    "TargetSelector": "stream.store",
    "Verdict": "stream.store",
    "LinkEvent": "stream.events",
    "LinkState": "stream.events",
    "ReceivedResult": "stream.events",
    "WorldService": "live.world",
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
    "WorldService",
    "__version__",
    "crc16",
    "decode_capture",
    "interpret",
]
