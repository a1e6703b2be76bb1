"""``Host``: the one composition of the live host, whatever command runs it.

It owns the serial service (``GizmoService``), the world service when ``[camera]`` is set,
the outputs (``[publish]``), the ``stats`` line and the start/wait/stop lifecycle::

    async with Host.serving(config) as host:
        await host.wait(stop)

What differs between the commands is two parts and the outputs, each chosen once, by name:

- the *link driver*: :class:`SerialLink` reads the board's port (``run``, ``record`` with its
  tap on the bytes, the rigs); :class:`ReplayedLink` is fed a capture by the caller through
  ``service.link.replay_*`` (``replay --offline``), with no port and no autopilot;
- the *world feed*: :class:`Receivers` (the world ``config`` describes, on RflySim receivers
  of its own), :class:`Tap` (that world fed recorded or tapped datagrams through
  ``datagram``), :class:`GivenWorld` (a world service the caller built: a rig's, replay's on
  its own clock) or ``None`` (no world model);
- *outputs*: ``[publish]``'s line outputs, the ``version`` line and their counters (``run``),
  or none (the others plug in what they need).

:meth:`serving`, :meth:`recording`, :meth:`replaying` and :meth:`in_rig` name the four
compositions. Then, in one place each: a *sink* gets every message the host publishes
(results, link events, verdicts, world snapshots and ``stats`` dicts): ``add_sink`` (the
recorder's MCAP channels, the demo's tally, a replay's output); line outputs (stdout, Unix
socket, UDP, Foxglove, Zenoh) are ``add_output``, fed JSON lines by the host's
``JsonLinesPublisher``. The autopilot over MAVLink (``[mavlink]``:
:class:`~gizmo_host.app.mavlink.MavlinkLink`) is built when its url is set and the link is a
serial one.

Timers go through the injected ``Scheduler``, so offline replay runs this same code on a
manual clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fusion import WorldSnapshot
from gizmo_core import MissingExtra
from gizmo_host.app.host_config import HostConfig
from gizmo_host.app.outputs import Output, outputs_for
from gizmo_host.app.world_build import DatagramRouter, apply_events, build_world, world_stats
from gizmo_host.app.world_config import pose_source
from gizmo_host.bridge.world_service import WorldService
from gizmo_host.deploy.diagnostics import explain_open_error
from gizmo_host.errors import ServiceFailed
from gizmo_host.jsonl import encode_line
from gizmo_host.live.event_loop import first_done
from gizmo_host.live.link import BytesCallback
from gizmo_host.live.serial_port import OpenFunction
from gizmo_host.live.service import GizmoService
from gizmo_host.publish.lines import JsonLinesPublisher, Message, with_types
from gizmo_host.stream.events import LinkEvent, ReceivedResult, version_message
from gizmo_host.stream.store import LinkVerdict
from gizmo_host.timing import LoopScheduler, Scheduler, Timer

if TYPE_CHECKING:
    from gizmo_host.app.mavlink import MavlinkLink

LOGGER = logging.getLogger(__name__)
HostMessage = ReceivedResult | LinkEvent | LinkVerdict | WorldSnapshot | dict[str, Any]
Sink = Callable[[HostMessage], None]


# -- the parts -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SerialLink:
    """The board's serial port, read live. ``on_bytes``: every chunk as read (the recorder's
    tap); ``open_connection``: how the port is opened (the default: serialx)."""

    on_bytes: BytesCallback | None = None
    open_connection: OpenFunction | None = None


@dataclass(frozen=True, slots=True)
class ReplayedLink:
    """A capture's bytes and port events, fed by the caller through the service's link
    (``replay_*``): no port is opened, no autopilot linked."""


LinkDriver = SerialLink | ReplayedLink


@dataclass(frozen=True, slots=True)
class Receivers:
    """The world model ``config`` describes, hearing RflySim on receivers of its own and
    asking CopterSim for the replies ``[rflysim]`` names."""


@dataclass(frozen=True, slots=True)
class Tap:
    """The world model ``config`` describes, fed datagrams through :meth:`Host.datagram`
    (tapped or recorded). ``requests``: still ask CopterSim for the replies (not in a replay:
    the capture holds them)."""

    requests: bool = True


@dataclass(frozen=True, slots=True)
class GivenWorld:
    """A world service the caller built, and the router that feeds it through
    :meth:`Host.datagram` (None: it hears RflySim itself, or nothing)."""

    world: WorldService
    router: DatagramRouter | None = None


WorldFeed = Receivers | Tap | GivenWorld | None


class Host:
    """The serial service, the world model, the sinks and the stats, started and stopped
    together: ``link`` and ``world`` are the parts (see the module's docstring); ``outputs``:
    serve ``[publish]``'s outputs, publish the ``version`` line and report them in ``stats``."""

    def __init__(
        self,
        config: HostConfig,
        *,
        link: LinkDriver,
        world: WorldFeed,
        outputs: bool,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.config = config
        self.scheduler = scheduler or LoopScheduler()
        serial = link if isinstance(link, SerialLink) else SerialLink()
        self.service = GizmoService(
            config.link(),
            config.pipeline(),
            scheduler=self.scheduler,
            explain_open_error=explain_open_error,
            on_bytes=serial.on_bytes,
            open_connection=serial.open_connection,
        )
        self._run_link = isinstance(link, SerialLink)
        self._extra_stats: list[Callable[[], dict[str, Any]]] = []
        self.world, self.router = _world_for(config, self.scheduler, world)
        self.mavlink = _mavlink_for(config, self) if self._run_link else None
        self.publisher = JsonLinesPublisher(self.scheduler.now_ns)
        self._sinks: list[Sink] = []
        self._outputs: list[Output] = []
        self._line_outputs = False  # an output takes JSON lines: the publisher encodes them
        self._connected = False  # the listeners are connected at start
        self._report_outputs = outputs
        if outputs:
            for output in outputs_for(config.publish, encode_line(self.version)):
                self.add_output(output)
            if config.zenoh.enabled:
                self._add_zenoh()
        self._stats_ns = round(config.publish.stats_interval_s * 1e9)
        self._stats_timer: Timer | None = None
        self._started: list[Output] = []
        self.service.watch(config.selector)

    # -- the compositions ------------------------------------------------------------------

    @classmethod
    def serving(
        cls,
        config: HostConfig,
        *,
        scheduler: Scheduler | None = None,
        open_connection: OpenFunction | None = None,
    ) -> Host:
        """``gizmo-host run``: the serial port, the world on its own RflySim receivers, the
        autopilot when ``[mavlink]`` names one, and ``[publish]``'s outputs."""
        link = SerialLink(open_connection=open_connection)
        return cls(config, link=link, world=Receivers(), outputs=True, scheduler=scheduler)

    @classmethod
    def recording(cls, config: HostConfig, on_bytes: BytesCallback) -> Host:
        """``gizmo-host record``: the serial port with every chunk to ``on_bytes``, the world
        fed the datagrams the recorder taps (``datagram``); no outputs of its own."""
        return cls(config, link=SerialLink(on_bytes=on_bytes), world=Tap(), outputs=False)

    @classmethod
    def replaying(
        cls,
        config: HostConfig,
        scheduler: Scheduler,
        world: WorldService | None = None,
        router: DatagramRouter | None = None,
    ) -> Host:
        """``replay --offline``: the caller feeds the link a capture on ``scheduler`` (a manual
        clock), and ``world`` (built on its own clock) through ``router``; no outputs."""
        feed = None if world is None else GivenWorld(world, router)
        return cls(config, link=ReplayedLink(), world=feed, outputs=False, scheduler=scheduler)

    @classmethod
    def in_rig(cls, config: HostConfig, world: WorldService | None = None) -> Host:
        """The host as a rig runs it: the serial port (the emulated board's pty), ``world``
        (a rig's own receivers) or the one ``config`` describes; no outputs of its own."""
        feed: WorldFeed = Receivers() if world is None else GivenWorld(world)
        return cls(config, link=SerialLink(), world=feed, outputs=False)

    def _connect(self) -> None:
        """At start: the service's messages to the sinks and the outputs' publisher, then to
        the world; the world's snapshots to the same. Each is a listener of its own, so the
        per-read path of ``run`` is the publisher's call and nothing more (a batch listener:
        one write per output for everything a read produced)."""
        if self._connected:
            return
        self._connected = True
        listeners: list[Callable[[Message], None]] = [*self._sinks]
        for sink in self._sinks:
            self.service.add_listener(sink)
        if self._line_outputs:
            listeners.append(self.publisher)
            self.service.add_batch_listener(self.publisher.publish_batch)
        if self.world is not None:  # after the sinks: they see a message before the world
            self.service.add_listener(self.world.on_gizmo)
            for listener in listeners:
                self.world.add_listener(listener)

    # -- plugging in -----------------------------------------------------------------------

    def add_sink(self, sink: Sink) -> None:
        """``sink`` gets every message the host publishes, in order; it must not block.
        Sinks and outputs are added before ``start``."""
        self._check_not_started()
        self._sinks.append(sink)

    def add_output(self, output: Output) -> None:
        """A JSON Lines output, started and closed with the host. One whose ``takes_lines`` is
        False (a viewer that takes the messages themselves through ``add_sink``) is started,
        closed and reported alike but gets no lines: none is encoded for it."""
        self._check_not_started()
        self._outputs.append(output)
        if getattr(output, "takes_lines", True):
            self._line_outputs = True
            self.publisher.add_sink(output)

    def _add_zenoh(self) -> None:
        """``[zenoh]``'s output (the zenoh extra), and its sink for ROS 2's messages."""
        try:
            from gizmo_host.zenoh.sink import ZenohOutput  # noqa: PLC0415 - optional extra

            output = ZenohOutput(self.config.zenoh)
        except ImportError as exc:
            extra = "ros2" if "rosbags" in str(exc) else "zenoh"
            raise MissingExtra(extra, "zenoh.enabled", "zenoh.enabled") from None
        self.add_output(output)
        if output.wants_snapshots:
            self.add_sink(output.on_message)

    def _check_not_started(self) -> None:
        if self._connected:
            raise RuntimeError("Host: sinks and outputs are added before start")

    def add_stats(self, counters: Callable[[], dict[str, Any]]) -> None:
        """Add ``counters()``'s keys to every ``stats`` line (a source's or a sink's)."""
        self._extra_stats.append(counters)

    def datagram(self, port: int, sender: tuple[str, int], data: bytes, rx_ns: int) -> None:
        """A datagram to ``port`` (tapped or replayed) into the world, as its receiver would
        pass it; a bug on one datagram is counted, never raised."""
        if self.router is None or self.world is None:
            return
        try:
            apply_events(self.world, self.router.feed(port, sender, data, rx_ns))
        except Exception:
            self.world.input_failed("world input on port %d", port)

    # -- lifecycle -------------------------------------------------------------------------

    @functools.cached_property
    def version(self) -> dict[str, Any]:
        """The ``version`` line: worked out when first asked for, since the package's metadata
        costs a replay, which never prints it, about 14 ms of its start-up."""
        from gizmo_host import __version__  # noqa: PLC0415

        version = version_message(__version__, self.config.link().path)
        return version if self.world is None else with_types(version, "world")

    async def __aenter__(self) -> Host:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the outputs, the world (before the link: it hears the link's first events)
        and the link; a port or path that cannot be used is a ``ServiceFailed``."""
        self._connect()
        try:
            for output in self._outputs:
                await output.start()
                self._started.append(output)
            if self._report_outputs:
                self.publisher.publish(self.version)
            if self.world is not None:
                try:
                    await self.world.start()
                except OSError as exc:  # a port taken by another program, an address not ours
                    raise ServiceFailed(f"rflysim: cannot listen: {exc.strerror or exc}") from None
            self.service.start(run_link=self._run_link)
            if self.mavlink is not None:
                self.mavlink.start()
        except BaseException:
            await self.stop()
            raise
        self._arm_stats(self.scheduler.now_ns())

    async def wait(self, stop: asyncio.Event) -> None:
        """Return once ``stop`` is set; a ``ServiceFailed`` once a service's own work fails."""
        waits: list[asyncio.Task[Any]] = [asyncio.create_task(stop.wait(), name="host stop")]
        waits.append(asyncio.create_task(self.service.wait_failed(), name="host failure"))
        if self.world is not None:
            waits.append(asyncio.create_task(self.world.wait_failed(), name="world failure"))
        for task in await first_done(waits):
            if task is not waits[0]:
                raise ServiceFailed(f"service failed: {task.result()!r}")

    async def stop(self) -> None:
        """Stop the link (its DOWN is still published), the world, then the outputs."""
        if self._stats_timer is not None:
            self._stats_timer.cancel()
            self._stats_timer = None
        await self.service.stop()
        if self.mavlink is not None:
            await self.mavlink.stop()
        if self.world is not None:
            await self.world.stop()
        started, self._started = self._started, []
        for output in started:
            with contextlib.suppress(OSError):
                await output.close()

    # -- publishing ------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The ``stats`` message: the service's counters, the outputs', the world's."""
        message = self.service.stats(self.scheduler.now_ns())
        if self._report_outputs:
            publish: dict[str, Any] = {}
            for output in self._outputs:
                publish[output.name] = output.stats()
            message["publish"] = publish
        if self.world is not None:
            message["world"] = world_stats(self.world, self.router)
        for counters in self._extra_stats:
            message.update(counters())
        return message

    def publish(self, message: dict[str, Any]) -> None:
        """``message`` (a ``stats`` line, or a composition's own) to every sink and output."""
        for sink in self._sinks:
            sink(message)
        if self._line_outputs:
            self.publisher.publish(message)

    def _arm_stats(self, now_ns: int) -> None:
        if self._stats_ns > 0:
            due = now_ns + self._stats_ns
            self._stats_timer = self.scheduler.call_at_ns(due, lambda: self._on_stats(due))

    def _on_stats(self, due_ns: int) -> None:
        self._arm_stats(due_ns)
        self.publish(self.stats())


def _world_for(
    config: HostConfig, scheduler: Scheduler, feed: WorldFeed
) -> tuple[WorldService | None, DatagramRouter | None]:
    """The world service ``feed`` asks for (``config``'s: none without ``[camera]``) and the
    router that feeds it datagrams."""
    if feed is None:
        return None, None
    if isinstance(feed, GivenWorld):
        return feed.world, feed.router
    setup = config.world_setup()
    if setup is None:
        return None, None
    if isinstance(feed, Tap):
        return build_world(setup, scheduler, receivers=False, requests=feed.requests)
    return build_world(setup, scheduler, receivers=True)


def _mavlink_for(config: HostConfig, host: Host) -> MavlinkLink | None:
    """The autopilot link ``[mavlink]`` describes (none without a url), plugged into ``host``:
    its poses into the world when the world takes its pose from it, its counters in ``stats``."""
    if not config.mavlink.on:
        return None
    from gizmo_host.app.mavlink import MavlinkLink  # noqa: PLC0415 (the extra, when used)

    chosen = pose_source(
        config.world.get("pose_source"),
        config.rflysim.copter_id is not None,
        config.mavlink.gives_pose,
    )
    link = MavlinkLink(
        config.mavlink,
        host.scheduler,
        host.publish,
        world=host.world,
        pose_to_world=chosen == "mavlink",
    )
    host.add_stats(link.stats)
    return link
