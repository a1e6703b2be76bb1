"""gizmo_host: the Gizmo camera board's VISION_RESULT v1 UART protocol, host side.

Layers, each importing only those below it (checked by import-linter):

- ``wire``: the frame codec, interpretation, the stream parser and the batch decoder; no
  clocks, no I/O;
- ``stream``: the pure per-frame pipeline (sequence tracker, device clock, result store,
  verdicts), which takes host times as arguments;
- ``live``: asyncio at the edges (serial link, service, timers, publishing); ``emulator``: the
  board without the board; ``deploy``: install, udev, systemd, diagnostics;
- ``app``: the settings table, ``HostConfig`` and the ``Host`` every command builds;
- ``cli``: the ``gizmo-host`` subcommands (arguments in, the app, an exit status out).
"""

from typing import TYPE_CHECKING

from gizmo_host.errors import EncodeError, FrameError, GizmoError
from gizmo_host.wire.parser import StreamParser
from gizmo_host.wire.protocol import VisionResult, crc16
from gizmo_host.wire.results import ResultType, interpret

if TYPE_CHECKING:  # what the lazy names below resolve to, for a user's type checker
    from gizmo_host.bridge.world_service import WorldService
    from gizmo_host.live.service import GizmoService
    from gizmo_host.stream.events import LinkEvent, ReceivedResult
    from gizmo_host.stream.store import LinkVerdict
    from gizmo_host.wire.batch import FRAME_DTYPE, decode_capture

    __version__: str


# The live link pulls in asyncio and serialx, and the batch decoder numpy; each is imported on
# first use, so that the codec and the decode tool stay quick to start (and a command can
# choose numpy's BLAS threads before numpy loads: gizmo_host.cli.main). The version is read
# from the installed package's metadata (pyproject.toml's, the one source of truth), also on
# first use.
def __getattr__(name: str) -> object:
    if name == "__version__":
        return _version()
    if name in ("FRAME_DTYPE", "decode_capture"):
        from gizmo_host.wire import batch  # noqa: PLC0415

        return getattr(batch, name)
    if name == "GizmoService":
        from gizmo_host.live.service import GizmoService  # noqa: PLC0415

        return GizmoService
    if name in ("LinkEvent", "ReceivedResult"):
        from gizmo_host.stream import events  # noqa: PLC0415

        return getattr(events, name)
    if name == "LinkVerdict":
        from gizmo_host.stream.store import LinkVerdict  # noqa: PLC0415

        return LinkVerdict
    if name == "WorldService":
        from gizmo_host.bridge.world_service import WorldService  # noqa: PLC0415

        return WorldService
    raise AttributeError(f"module 'gizmo_host' has no attribute {name!r}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("gizmo-host")
    except PackageNotFoundError:  # a source tree on sys.path that pip never installed
        return "0+unknown"


# What a user needs: the codec, the live service and the world, and the messages they hand out
# (the verdict's vocabulary, Decision, HoldReason, Selector and LinkState, is gizmo_core's). The
# rest (each frame error, the parser's stats, the serial link itself) is in its own module:
# gizmo_host.errors, gizmo_host.wire, gizmo_host.live.
__all__ = [
    "FRAME_DTYPE",
    "EncodeError",
    "FrameError",
    "GizmoError",
    "GizmoService",
    "LinkEvent",
    "LinkVerdict",
    "ReceivedResult",
    "ResultType",
    "StreamParser",
    "VisionResult",
    "WorldService",
    "__version__",
    "crc16",
    "decode_capture",
    "interpret",
]
