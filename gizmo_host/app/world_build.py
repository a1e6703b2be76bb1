"""The world model as the host composes it: one ``build_world`` for every command, and the
``DatagramRouter`` that feeds it recorded (or tapped) datagrams without a socket.

``gizmo-host run`` and ``demo`` bind RflySim's receivers; ``record`` taps the same ports
itself (so that every datagram is recorded) and ``replay --offline`` reads them from the
capture: both feed the world through the router, which runs each receiver's own sans-I/O
pipeline and sender filter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gizmo_host.app.world_config import WorldSetup
from gizmo_host.bridge.rfly_sources import RflySimSetup, SensorRequester, rfly_receivers
from gizmo_host.bridge.world_service import WorldService
from gizmo_host.timing import Scheduler, WallClock, realtime_of
from rfly_link.io import Event, UdpReceiver


def build_world(
    setup: WorldSetup,
    scheduler: Scheduler | None = None,
    *,
    receivers: bool = True,
    requests: bool = True,
    wall_clock: WallClock = realtime_of,
) -> tuple[WorldService, DatagramRouter | None]:
    """The world service for resolved settings. With ``receivers`` it binds RflySim's ports
    itself (``run``); without, it has none and the router feeds it (``record``, replay).
    ``requests``: ask CopterSim for the replies ``[rflysim]`` names (never in a replay);
    ``wall_clock``: each snapshot's ``wall_ns`` (a replay's from its capture)."""
    model = setup.model()
    rflysim = setup.rflysim
    if rflysim is None:
        return WorldService(model, scheduler=scheduler, wall_clock=wall_clock), None
    asks = requests and bool(rflysim.request_odometry_hz or rflysim.request_imu_hz)
    requester = SensorRequester(rflysim) if asks else None
    world = WorldService(
        model,
        scheduler=scheduler,
        rfly=rflysim.adapter(),
        receivers=rfly_receivers(rflysim) if receivers else (),
        requester=requester,
        wall_clock=wall_clock,
    )
    return world, None if receivers else DatagramRouter(rflysim)


class DatagramRouter:
    """The ports ``gizmo-host run`` hears for ``setup``, each through its receiver's pipeline.

    The receivers are built (never started: no socket) only for their ports, names, sender
    filters and pipelines. Datagrams to other ports are counted in ``other_ports``.
    """

    def __init__(self, setup: RflySimSetup) -> None:
        self._receivers: dict[int, UdpReceiver] = {r.port: r for r in rfly_receivers(setup)}
        self._datagrams = dict.fromkeys(self._receivers, 0)
        self._not_allowed = dict.fromkeys(self._receivers, 0)
        self.other_ports = 0

    @property
    def ports(self) -> list[int]:
        return sorted(self._receivers)

    def feed(self, port: int, sender: tuple[str, int], data: bytes, rx_ns: int) -> list[Event]:
        """The events one datagram gives (fragments may give none until a frame completes)."""
        receiver = self._receivers.get(port)
        if receiver is None:
            self.other_ports += 1
            return []
        self._datagrams[port] += 1
        allowed = receiver.allowed_senders
        if allowed is not None and sender[0] not in allowed:
            self._not_allowed[port] += 1
            return []
        return receiver.pipeline.process(memoryview(data), sender, rx_ns)

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per receiver, as the live world's ``stats`` reports them: datagrams and drops."""
        out = {}
        for port, receiver in sorted(self._receivers.items()):
            drops = receiver.pipeline.drop_counts()
            if self._not_allowed[port]:
                drops["sender_not_allowed"] = self._not_allowed[port]
            out[receiver.name] = {"datagrams": self._datagrams[port], "drops": drops}
        return out


def apply_events(world: WorldService, events: Iterable[Event]) -> None:
    """Feed rfly_link events to ``world`` as its receivers' consumers do."""
    for event in events:
        world.on_rfly(event)


def world_stats(world: WorldService, router: DatagramRouter | None) -> dict[str, Any]:
    """``world.stats()`` with the router's per-port counts as its receivers'."""
    stats = world.stats()
    if router is not None and "rflysim" in stats:
        stats["rflysim"]["receivers"] = router.stats()
        stats["rflysim"]["other_ports"] = router.other_ports
    return stats
