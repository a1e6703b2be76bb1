"""``gizmo-host demo``'s rig (and certify's): the RflySim stand-in, the emulated board and the
host on one loop, composed by the one :class:`~gizmo_host.rigs.rig.Rig`.

The same parts the separate commands run, wired on loopback in one process:

- the stand-in (``gizmo-host sim``): :class:`~gizmo_host.rigs.rflysim.core.StandIn` paced by
  :class:`~gizmo_host.rigs.rflysim.sim_runner.SimRunner`, sending the built-in Config.json's TypeID
  30 boxes and distance sensor, and answering the host's odometry request;
- the board (``gizmo-host emulate --rfly-config Config.json``): the boxes in, VISION_RESULT
  frames out on a pty behind ``WORKDIR/gizmo0``, with the fault timeline;
- the host (``gizmo-host run`` with ``[camera] rflysim_sensor = 1`` and ``[rflysim] config``):
  the same ``Host`` as ``run``, its world model fed by RflySim UDP.

Ports: every UDP port is one the kernel has just handed out (``free_ports``), written into
the rig's own Config.json and given to each part, so two demos (or a demo and the tests) run
side by side and nothing binds RflySim's fixed ports. The stand-in's streams that only go to
fixed ports (states, heartbeats, gimbal status, LiDAR) are off: the pose comes from odometry.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gizmo_core import ConfigError
from gizmo_host.app.host import Host, HostMessage
from gizmo_host.app.host_config import FoxgloveConfig, HostConfig, config_from_mapping
from gizmo_host.app.world_config import WorldSetup
from gizmo_host.bridge.rfly_sources import RflySimSetup, SensorRequester
from gizmo_host.bridge.world_service import WorldService
from gizmo_host.errors import ServiceFailed
from gizmo_host.rigs.board.compose import build_source
from gizmo_host.rigs.board.emulate_settings import EmulateSettings, load_settings
from gizmo_host.rigs.board.emulation import Cycle
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.demo.tally import GroundTruth, Tally
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.rigs.rflysim.core import Rates, StandIn
from gizmo_host.rigs.rflysim.scenario import Truth, build_scenario
from gizmo_host.rigs.rflysim.scene_camera import SceneCamera
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text, sensor_camera
from gizmo_host.rigs.rflysim.sim_runner import SimRunner
from gizmo_host.rigs.rig import Rig
from gizmo_host.stream.events import ReceivedResult
from gizmo_host.wire.results import DetectorId
from rfly_link import io as rio
from rfly_link import ports
from rfly_link.config_json import parse_config
from rfly_link.messages import TypeId

if TYPE_CHECKING:
    from gizmo_host.foxglove.server import FoxgloveServer

LOGGER = logging.getLogger("gizmo_host.rigs")
HOST = "127.0.0.1"
START_ATTEMPTS = 3  # a port taken between its pick and its bind is picked again, this often
EGO_ID = 1
CAMERA_SEQ_ID = 1  # the built-in Config.json's TypeID 30 boxes: 640x480, 90° HFOV, pitch -45°
ODOMETRY_HZ = 100
# The scenario's other vehicles (ego + 1: the ground target, ego + 2: a bystander copter) as
# the board reports them; anything else is not reported.
CLASSES = {EGO_ID + 1: DetectorId.PEDESTRIAN, EGO_ID + 2: DetectorId.CAT}
# Only the streams the demo uses; the others go to RflySim's fixed ports, where another
# program on this machine may listen. Truth at 1 Hz: only its first record is read (the start).
IMAGE_HZ = 10.0  # the synthetic camera image for the Foxglove view
IMAGE_SCALE = 2  # rendered at half the sensor's size (320x240)
RATES = Rates(state_hz=0, others_hz=0, heartbeat_hz=0, gimbal_hz=0, lidar_hz=10, truth_hz=1)


def config_json(sensor_ports: Mapping[int, int], host: str = HOST, ego_id: int = EGO_ID) -> str:
    """The stand-in's built-in Config.json with each SeqID in ``sensor_ports`` sent to that
    port (``SendProtocol[5]``) instead of ``9999 + SeqID``."""
    document = json.loads(builtin_config_text(host, ego_id))
    for sensor in document["VisionSensors"]:
        port = sensor_ports.get(sensor["SeqID"])
        if port is not None:
            sensor["SendProtocol"][5] = port
    return json.dumps(document, indent=2) + "\n"


@dataclass(frozen=True, slots=True)
class DemoSettings:
    scenario: str = "orbit"
    timeline: FaultTimeline = field(default_factory=FaultTimeline)
    foxglove: str | None = None  # HOST:PORT: serve the Foxglove view, with a camera image
    board_duration_s: float | None = None  # the board stops (cleanly) after this long
    on_cycle: Callable[[Cycle], None] | None = None  # every board cycle (certify's truth)
    select: str = "any"  # [verdict] select: the target the verdict is about


def host_config(
    link: str, config_path: str, stats_interval_s: float = 0, select: str = "any"
) -> HostConfig:
    """``gizmo-host run``'s settings for the demo (as a TOML file would give them)."""
    return config_from_mapping(
        {
            # The emulator writes a frame to the pty when its last byte would have arrived at
            # 115200 baud (PtyPort.writes_at_line_end): the default transport delay applies.
            "serial": {"path": link},
            "publish": {"stats_interval_s": stats_interval_s},
            "verdict": {"select": select},
            "camera": {"rflysim_sensor": CAMERA_SEQ_ID},
            "rflysim": {
                "copter_id": EGO_ID,
                "config": config_path,
                "request_odometry_hz": ODOMETRY_HZ,
            },
        }
    )


def emulator_settings(boxes_port: int, width_px: int, height_px: int) -> EmulateSettings:
    """``gizmo-host emulate --boxes PORT --image-size WxH --class 2=PEDESTRIAN --class 3=CAT``
    with every target in each cycle and no other vehicle reported."""
    classes = {str(copter): cls.name for copter, cls in CLASSES.items()}
    boxes = {"port": boxes_port, "width_px": width_px, "height_px": height_px}
    emulate = {"boxes": boxes, "classes": classes, "default_class": False, "per_cycle": "all"}
    return load_settings(None, {"emulate": emulate})


class DemoRig:
    """Builds every part on a :class:`Rig` (nothing bound until :meth:`start`)."""

    def __init__(self, settings: DemoSettings, workdir: Path) -> None:
        self.settings = settings
        self.rig = Rig(workdir)
        self.link = self.rig.link
        boxes, distance, lidar, gimbal, replies, control = free_ports(6)
        self.config_path = workdir / "Config.json"
        # Every sensor of the built-in Config.json on a port of the rig's own (the host binds
        # the ranging ones: distance 2, LiDAR 3).
        text = config_json({CAMERA_SEQ_ID: boxes, 2: distance, 3: lidar, 4: gimbal})
        self.config_path.write_text(text, encoding="utf-8")
        loaded = parse_config(text, source=str(self.config_path))
        camera_sensor = next(s for s in loaded.sensors if s.seq_id == CAMERA_SEQ_ID)
        assert camera_sensor.type_id == TypeId.BOX_TARGETS

        # The host, as `gizmo-host run` composes it; its RflySim receivers on the rig's ports.
        # the Foxglove view shows the counters: a stats message a second
        stats_s = 0 if settings.foxglove is None else 1.0
        config = host_config(self.link, str(self.config_path), stats_s, settings.select)
        setup = config.world_setup()
        if setup is None or setup.rflysim is None:  # pragma: no cover - host_config sets both
            raise ConfigError("the demo's host configuration has no world model")
        self.world = WorldService(
            setup.model(),
            rfly=setup.rflysim.adapter(),
            receivers=_receivers(setup.rflysim, replies),
            requester=SensorRequester(setup.rflysim, reply_port=replies, control_port=control),
        )
        self.host = self.rig.add_host(Host.in_rig(config, self.world))
        self.service = self.host.service
        self.host.add_sink(self._on_gizmo)
        self.foxglove = None if settings.foxglove is None else self._foxglove(settings, setup)

        # The board: the stand-in's boxes in, frames out on the pty.
        emulate = emulator_settings(boxes, camera_sensor.data_width, camera_sensor.data_height)
        self.timeline = settings.timeline
        self.board = self.rig.add_board(
            emulate,
            settings.timeline,
            build_source(emulate),
            duration_s=settings.board_duration_s,
            on_cycle=settings.on_cycle,
        )

        # The stand-in: its odometry control port is the one the host's requests go to.
        scenario = build_scenario(settings.scenario, ego_id=EGO_ID)
        self.stand_in = StandIn(scenario, host=HOST, config=loaded, rates=RATES)
        control_ports = dict.fromkeys(self.stand_in.control_ports(), 0)
        control_ports[ports.coptersim_control_port(EGO_ID)] = control
        self.sim = self.rig.add_stand_in(
            SimRunner(
                self.stand_in, bind_host=HOST, on_truth=self._on_truth, control_ports=control_ports
            )
        )

        self.scenario = scenario
        self.scene_camera = SceneCamera(sensor_camera(camera_sensor), IMAGE_SCALE)
        vehicle_by_class = {int(cls): copter for copter, cls in CLASSES.items()}
        self.truth = GroundTruth(scenario, sensor_camera(camera_sensor), vehicle_by_class)
        self.tally = Tally(self.truth)
        self.world.add_listener(self.tally)
        self.first_frame_ns: int | None = None
        if self.foxglove is not None:
            server = self.foxglove
            self.rig.add_task("camera", lambda: self._camera(server))

    def _foxglove(self, settings: DemoSettings, setup: WorldSetup) -> FoxgloveServer:
        from gizmo_host.app.foxglove_view import (  # noqa: PLC0415 - the extra
            camera_mount,
            foxglove_server,
            watch_world,
        )

        assert settings.foxglove is not None
        config = FoxgloveConfig(enabled=True, listen=settings.foxglove)
        server = foxglove_server(config, camera_mount(setup), self.host.scheduler.now_ns)
        self.host.add_output(server)
        self.host.add_sink(server.sink)
        watch_world(self.host, server.renderer)
        return server

    async def _camera(self, server: FoxgloveServer) -> None:
        """The stand-in's camera image at ``IMAGE_HZ``, rendered while a viewer wants it."""
        from gizmo_host.foxglove import topics  # noqa: PLC0415 - the extra

        scheduler, period_ns = self.host.scheduler, round(1e9 / IMAGE_HZ)
        wants = server.emitter.wants
        due_ns = scheduler.now_ns()
        while True:
            due_ns += period_ns
            await scheduler.sleep_until_ns(due_ns)
            if not self.sim.started.is_set() or not (
                wants(topics.IMAGE) or wants(topics.ANNOTATIONS)
            ):
                continue
            t_ns = scheduler.now_ns()
            truth = self.scenario.truth((t_ns - self.sim.start_ns) / 1e9)
            pixels = self.scene_camera.render(truth.ego.state, self.scenario.placed(truth))
            server.renderer.image(t_ns, pixels)

    # -- events --------------------------------------------------------------------------------

    def _on_gizmo(self, message: HostMessage) -> None:
        if self.first_frame_ns is None and isinstance(message, ReceivedResult):
            self.first_frame_ns = time.monotonic_ns()

    def _on_truth(self, truth: Truth, host_ns: int) -> None:
        if self.truth.start_ns is None:
            self.truth.start_ns = host_ns - round(truth.t_s * 1e9)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind and start every part, the stand-in first so that the host's first odometry
        request finds it; an ``OSError`` names the port that could not be bound."""
        await self.rig.start()

    async def wait(self, stop: asyncio.Event) -> None:
        """Return once ``stop`` is set, or the board has run its ``board_duration_s``; raise
        :class:`RigFailed` when a part fails first."""
        await self.rig.wait(stop)

    async def stop(self) -> None:
        """Stop everything (safe to call twice)."""
        await self.rig.stop()

    # -- counters ------------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Every part's counters: the host's ``stats`` and the world's, the board's, the
        stand-in's."""
        sim = self.sim.stats
        return {
            "host": self.service.stats(),
            "world": self.world.stats(),
            "board": self.board.stats(),
            "stand_in": {**sim.stand_in._asdict(), "send_failed": sim.send.failed},
        }


async def start_rig(build: Callable[[], DemoRig]) -> DemoRig:
    """A rig from ``build()``, started. Its ports are the kernel's picks, free when picked but
    released before they are bound: when another socket took one meanwhile (a parallel test,
    or any socket's automatic port), the rig is stopped and built again with new picks, up to
    :data:`START_ATTEMPTS` times. Any other failure to start is raised at once."""
    for attempt in range(1, START_ATTEMPTS + 1):
        rig = build()
        try:
            await rig.start()
        except (OSError, ServiceFailed) as exc:
            await rig.stop()
            if not _port_taken(exc) or attempt == START_ATTEMPTS:
                raise
            LOGGER.info("rig: a port was taken before it was bound (%s); picking again", exc)
            continue
        return rig
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _port_taken(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) is a bind to a port in use."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.EADDRINUSE:
            return True
        if "Address already in use" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _receivers(setup: RflySimSetup, reply_port: int) -> list[rio.UdpReceiver]:
    """``rfly_receivers(setup)`` without the state port (the pose comes from odometry) and
    with the replies on ``reply_port``."""
    common: dict[str, Any] = {"host": setup.bind, "allowed_senders": setup.allowed_senders}
    reply_logical = ports.coptersim_reply_port(setup.copter_id)
    receivers = [rio.message_receiver(reply_logical, "replies", port=reply_port, **common)]
    return receivers + rio.vision_sensor_receivers(setup.range_sensors, **common)
