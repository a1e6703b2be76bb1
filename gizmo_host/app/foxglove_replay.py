"""A capture in Foxglove: through the offline replay, out to a new MCAP file or a live server.

Both recompute the Foxglove topics from the capture's inputs through ``OfflineReplay`` (the
live ``Host`` on a manual clock), so a capture recorded without the ``foxglove`` extra, or by
an older version, opens with the shipped layout too:

- ``replay FILE --offline --foxglove-out OUT.mcap``: as fast as the CPU allows, into a new
  MCAP file written by the SDK (the host's lines still go to stdout);
- ``replay FILE --foxglove [HOST:PORT]``: paced at the recorded times (``--speed``), served
  live.

Log times are the capture's (host ``time.monotonic_ns()`` when it was recorded).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

from gizmo_core import MissingExtra
from gizmo_host.app.capture_world import world_setup_from
from gizmo_host.app.foxglove_view import announce, camera_mount, foxglove_server, watch_world
from gizmo_host.app.host_config import FoxgloveConfig
from gizmo_host.app.offline_replay import OfflineReplay
from gizmo_host.errors import CaptureWriteError
from gizmo_host.timing import LoopScheduler, Pacer

if TYPE_CHECKING:
    from gizmo_host.capture.reader import CaptureMessage, CaptureReader
    from gizmo_host.foxglove.render import FoxgloveRenderer
    from gizmo_host.foxglove.server import FoxgloveServer


def _lines(
    replay: OfflineReplay, messages: Iterable[CaptureMessage]
) -> Iterator[tuple[int, bytes]]:
    """(capture time, host line) for every line the replay prints, then its last ``stats``."""
    for message in messages:
        for line in replay.feed(message):
            yield message[0], line
    for line in replay.finish():
        yield replay.scheduler.now_ns(), line


def _feed(renderer: FoxgloveRenderer, t_ns: int, line: bytes) -> None:
    """One host line: a world line at its own time, the others at the input's."""
    data = json.loads(line)
    message_type = data.get("type")
    log_ns = int(data["host_ns"]) if message_type == "world" else t_ns
    renderer.line(str(message_type), data, log_ns)


def _mount(reader: CaptureReader) -> Any:
    info = reader.info.world
    if info is None:
        return None
    return camera_mount(world_setup_from(info, f"{reader.path}: gizmo-host.world"))


def replay_to_mcap(reader: CaptureReader, out_path: str, lines_out: IO[bytes] | None) -> int:
    """The capture's Foxglove topics into ``out_path`` (the host's lines to ``lines_out``)."""
    try:
        from gizmo_host.foxglove.render import FoxgloveRenderer  # noqa: PLC0415
        from gizmo_host.foxglove.server import McapFile  # noqa: PLC0415
    except ImportError:
        raise MissingExtra("foxglove", "--foxglove-out") from None
    replay = OfflineReplay(reader.info, reader.path)
    try:
        writer = McapFile(out_path)
    except Exception as exc:  # the SDK raises its own error for a path it cannot create
        raise CaptureWriteError(f"{out_path}: cannot write: {exc}") from None
    renderer = FoxgloveRenderer(writer.emitter, _mount(reader), replay.scheduler.now_ns)
    watch_world(replay.host, renderer)
    first = True
    try:
        for t_ns, line in _lines(replay, reader.messages()):
            if first:
                renderer.static(t_ns)
                first = False
            _feed(renderer, t_ns, line)
            if lines_out is not None:
                lines_out.write(line)
    finally:
        writer.close()
    if lines_out is not None:
        lines_out.flush()
    return 0


async def serve_capture(
    reader: CaptureReader,
    listen: str,
    speed: float,
    on_serving: Callable[[FoxgloveServer], None] | None = None,
    linger_s: float = 0.0,
) -> int:
    """The capture's Foxglove topics served live at ``listen``, at the recorded pace, then
    for ``linger_s`` more; ``on_serving(server)`` once it listens (by default: its address on
    stderr)."""
    replay = OfflineReplay(reader.info, reader.path)
    config = FoxgloveConfig(enabled=True, listen=listen)
    server = foxglove_server(config, _mount(reader), replay.scheduler.now_ns)
    watch_world(replay.host, server.renderer)
    await server.start()
    if on_serving is None:
        announce(server, "replay")
    else:
        on_serving(server)
    wall = LoopScheduler()  # the server's own clock is the capture's (replay.scheduler)
    pacer = Pacer(wall, speed)
    first = True
    try:
        for t_ns, line in _lines(replay, reader.messages()):
            if first:
                server.renderer.static(t_ns)
                first = False
            await pacer.wait(t_ns)
            _feed(server.renderer, t_ns, line)
        await wall.sleep(linger_s)
    finally:
        await server.close()
    return 0
