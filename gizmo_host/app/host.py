"""``Host``: the one composition of the live host, whatever command runs it.

It owns the serial service (``GizmoService``), the world service when ``[camera]`` is set,
the outputs (``[publish]``), the ``stats`` line and the start/wait/stop lifecycle::

    async with Host(config) as host:
        await host.wait(stop)

``run``, ``record``, ``demo`` and ``replay --offline`` all build it; what differs is only
what they plug in, in one place each:

- a *sink* gets every message the host publishes (results, link events, verdicts, world
  snapshots and ``stats`` dicts): ``add_sink`` (the recorder's MCAP channels, the demo's
  tally, a replay's output); line outputs (stdout, Unix socket, UDP, and MAVLink, Foxglove,
  Zenoh to come) are ``add_output``, fed JSON lines by the host's ``JsonLinesPublisher``;
- a *source* feeds the world model: RflySim's receivers (``run``), or recorded or tapped
  datagrams through the ``DatagramRouter`` (``datagram``), and the autopilot over MAVLink
  (``[mavlink]``: :class:`~gizmo_host.app.mavlink.MavlinkLink`, built here when its url is
  set, unless the caller feeds the link itself: an offline replay has no autopilot).

Timers go through the injected ``Scheduler``, so offline replay runs this same code on a
manual clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fusion import WorldSnapshot
from gizmo_host import __version__
from gizmo_host.app.config import HostConfig
from gizmo_host.app.outputs import Output, outputs_for
from gizmo_host.app.world import DatagramRouter, apply_events, build_world, world_stats
from gizmo_host.app.world_config import pose_source
from gizmo_host.bridge.world import WorldService
from gizmo_host.deploy.diagnostics import explain_open_error
from gizmo_host.errors import ConfigError, ServiceFailed
from gizmo_host.live.event_loop import first_done
from gizmo_host.live.link import BytesCallback, OpenFunction
from gizmo_host.live.service import GizmoService
from gizmo_host.publish.lines import JsonLinesPublisher, Message, encode_line, with_types
from gizmo_host.stream.events import LinkEvent, ReceivedResult, version_message
from gizmo_host.stream.store import LinkVerdict
from gizmo_host.timing import LoopScheduler, Scheduler, Timer

if TYPE_CHECKING:
    from gizmo_host.app.mavlink import MavlinkLink

LOGGER = logging.getLogger(__name__)
HostMessage = ReceivedResult | LinkEvent | LinkVerdict | WorldSnapshot | dict[str, Any]
Sink = Callable[[HostMessage], None]
BUILD: Any = object()  # ``world=BUILD``: the world service ``config`` describes, if any


class Host:
    """The serial service, the world model, the sinks and the stats, started and stopped
    together. ``world``: ``BUILD`` (from ``config``, with RflySim's receivers unless
    ``tapped``), a ready ``WorldService``, or None for none."""

    def __init__(
        self,
        config: HostConfig,
        *,
        scheduler: Scheduler | None = None,
        world: WorldService | None = BUILD,
        router: DatagramRouter | None = None,
        tapped: bool = False,
        requests: bool = True,
        outputs: bool = True,
        on_bytes: BytesCallback | None = None,
        open_connection: OpenFunction | None = None,
        run_link: bool = True,
    ) -> None:
        """``tapped``: RflySim's datagrams come through ``datagram`` (recorded or replayed),
        not receivers of the world's own; ``requests``: ask CopterSim for the replies
        ``[rflysim]`` names (not in an offline replay); ``outputs``: serve ``[publish]``'s
        outputs, publish the ``version`` line and report them in the stats line; ``router``:
        what feeds a ready ``world`` through ``datagram``; ``run_link=False``: the caller
        feeds the link (offline replay, through ``service.link.replay_*``)."""
        self.config = config
        self.scheduler = scheduler or LoopScheduler()
        self.service = GizmoService(
            config.link(),
            config.pipeline(),
            scheduler=self.scheduler,
            explain_open_error=explain_open_error,
            on_bytes=on_bytes,
            open_connection=open_connection,
        )
        self.router = router
        self._run_link = run_link
        self._extra_stats: list[Callable[[], dict[str, Any]]] = []
        if world is BUILD:
            world, self.router = _world_for(config, self.scheduler, tapped, requests)
        self.world: WorldService | None = world
        self.mavlink = _mavlink_for(config, self) if run_link else None
        self.publisher = JsonLinesPublisher(self.scheduler.now_ns)
        self._sinks: list[Sink] = []
        self._outputs: list[Output] = []
        self._line_outputs = False  # an output takes JSON lines: the publisher encodes them
        self._connected = False  # the listeners are connected at start
        self._report_outputs = outputs
        self.version = version_message(__version__, config.link().path)
        if self.world is not None:
            self.version = with_types(self.version, "world")
        if outputs:
            for output in outputs_for(config.publish, encode_line(self.version)):
                self.add_output(output)
            if config.zenoh.enabled:
                self._add_zenoh()
        self._stats_ns = round(config.publish.stats_interval_s * 1e9)
        self._stats_timer: Timer | None = None
        self._started: list[Output] = []
        self.service.watch(config.selector)

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
            raise ConfigError(
                f"zenoh.enabled: the zenoh extra is not installed ({exc}); "
                "pip install 'gizmo-host[zenoh]' (and [ros2] for zenoh.ros2)",
                "zenoh.enabled",
            ) from None
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
    config: HostConfig, scheduler: Scheduler, tapped: bool, requests: bool
) -> tuple[WorldService | None, DatagramRouter | None]:
    """The world service ``config`` describes (none without ``[camera]``) and its router."""
    setup = config.world_setup()
    if setup is None:
        return None, None
    return build_world(setup, scheduler, receivers=not tapped, requests=requests)


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
