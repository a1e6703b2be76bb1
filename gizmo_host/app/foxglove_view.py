"""The Foxglove view in the app layer: the ``--foxglove [HOST:PORT]`` flag, and the server, a
capture's channels or an MCAP file plugged into a ``Host`` (``gizmo_host.foxglove`` does the
work; it is imported only when asked for, as the ``foxglove`` extra)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gizmo_core import ConfigError, MissingExtra
from gizmo_host.app.host_config import FoxgloveConfig, HostConfig, parse_host_port
from gizmo_host.app.world_config import WorldSetup
from rfly_link.config_json import VisionSensorConfig, load_config
from rfly_link.sensors.images import IMAGE_TYPES

if TYPE_CHECKING:
    from gizmo_host.app.host import Host
    from gizmo_host.foxglove.scene import CameraMount
    from gizmo_host.foxglove.server import FoxgloveServer


class _FoxgloveFlag(argparse.Action):
    """``--foxglove`` turns ``[foxglove] enabled`` on; ``--foxglove HOST:PORT`` also sets
    ``listen`` (the settings table's dests, read by ``config_from_args``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        namespace.foxglove__enabled = True
        if isinstance(values, str):
            namespace.foxglove__listen = values


def add_foxglove_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--foxglove",
        nargs="?",
        action=_FoxgloveFlag,
        metavar="HOST:PORT",
        help="serve the live Foxglove view ([foxglove] listen, default 127.0.0.1:8765; "
        "port 0: any free port)",
    )


def check_listen(text: str) -> tuple[str, int]:
    """``--foxglove``'s value: a ``ConfigError`` naming the flag when it is not HOST:PORT."""
    try:
        return parse_host_port(text, allow_any_port=True)
    except ValueError as exc:
        raise ConfigError(f"--foxglove: {exc}", "foxglove.listen") from None


def camera_mount(setup: WorldSetup | None) -> CameraMount | None:
    """The camera's mount and image size from the world's ``[camera]``, None without one."""
    if setup is None:
        return None
    from gizmo_host.foxglove.scene import CameraMount  # noqa: PLC0415 - the foxglove extra

    camera = setup.camera
    return CameraMount(
        camera.mount_rpy_deg, camera.mount_position_frd_m, camera.width_px, camera.height_px
    )


def foxglove_server(
    config: FoxgloveConfig,
    mount: CameraMount | None,
    clock: Callable[[], int],
) -> FoxgloveServer:
    """The server ``[foxglove]`` describes (not started), drawing the camera at ``mount``; a
    ``ConfigError`` without the extra."""
    try:
        from gizmo_host.foxglove.render import FoxgloveRenderer  # noqa: PLC0415
        from gizmo_host.foxglove.server import FoxgloveServer  # noqa: PLC0415
    except ImportError:
        raise MissingExtra("foxglove", "--foxglove", "foxglove.enabled") from None
    host, port = check_listen(config.listen)
    return FoxgloveServer(
        host,
        port,
        lambda emitter: FoxgloveRenderer(emitter, mount, clock),
        client_backlog=config.client_backlog,
    )


def attach_foxglove(host: Host, config: HostConfig) -> FoxgloveServer | None:
    """With ``[foxglove] enabled``: the server as one of ``host``'s outputs and sinks."""
    if not config.foxglove.enabled:
        return None
    setup = config.world_setup()
    server = foxglove_server(config.foxglove, camera_mount(setup), host.scheduler.now_ns)
    host.add_output(server)
    host.add_sink(server.sink)
    watch_world(host, server.renderer)
    sensor = image_sensor(config, setup)
    if sensor is not None and setup is not None and setup.rflysim is not None:
        from gizmo_host.foxglove import topics  # noqa: PLC0415 - the extra, imported above
        from gizmo_host.foxglove.rfly_images import RflyImages  # noqa: PLC0415

        wants = server.emitter.wants
        images = RflyImages(
            sensor,
            setup.rflysim.bind,
            setup.rflysim.allowed_senders,
            server.renderer.image,
            lambda: wants(topics.IMAGE) or wants(topics.ANNOTATIONS),
        )
        server.add_source(images)
    return server


def image_sensor(config: HostConfig, setup: WorldSetup | None) -> VisionSensorConfig | None:
    """The Config.json image sensor the view shows: ``[camera] rflysim_sensor`` when it is
    one, else the vehicle's first (by SeqID) sent over UDP; None without one."""
    if setup is None or setup.rflysim is None or config.rflysim.config is None:
        return None
    try:
        loaded = load_config(config.rflysim.config)
    except (OSError, ValueError) as exc:  # read and checked by world_setup() a moment ago
        raise ConfigError(f"rflysim.config: {exc}", "rflysim.config") from None
    copter = setup.rflysim.copter_id
    images = sorted(
        (
            s
            for s in loaded.sensors
            if s.type_id in IMAGE_TYPES and s.target_copter == copter and s.mode != 0
        ),
        key=lambda s: s.seq_id,
    )
    chosen = setup.camera.rflysim_sensor
    return next((s for s in images if s.seq_id == chosen), images[0] if images else None)


def capture_view(sink: Any, setup: WorldSetup | None, clock: Callable[[], int]) -> Any:
    """A ``FoxgloveRenderer`` writing the Foxglove topics into a capture (``sink``: its
    ``BackgroundWriter``), its static transforms written; None without the extra."""
    try:
        from gizmo_host.foxglove.capture import CaptureEmitter  # noqa: PLC0415
        from gizmo_host.foxglove.render import FoxgloveRenderer  # noqa: PLC0415
    except ImportError:
        return None
    renderer = FoxgloveRenderer(CaptureEmitter(sink), camera_mount(setup), clock)
    renderer.static(clock())
    return renderer


def watch_world(host: Host, renderer: Any) -> None:
    """``renderer`` hears the LiDAR points ``host``'s world model takes, if it has one."""
    if host.world is not None:
        host.world.add_input_listener(renderer.fusion_input)


def announce(server: FoxgloveServer, command: str) -> None:
    """Where the viewer connects (stderr: stdout carries only JSON)."""
    print(f"gizmo-host {command}: foxglove: serving {server.address}", file=sys.stderr, flush=True)
