"""The stand-in's asyncio edge: paces a :class:`~gizmo_host.rigs.rflysim.core.StandIn` by a clock,
sends its datagrams and feeds it the requests that reach the vehicles' CopterSim control ports.

Time comes from a :class:`~gizmo_host.timing.Scheduler` (host monotonic nanoseconds and a sleep
that a request can cut short), so a test can drive the whole runner on a ``ManualScheduler``
without waiting. Sends go through :class:`rfly_link.io.clients.UdpSender`: a send the network
refuses is counted, never raised.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import NamedTuple

from gizmo_host.rigs.rflysim.core import Address, StandIn, StandInStats
from gizmo_host.rigs.rflysim.scenario import Truth
from gizmo_host.timing import LoopScheduler, Scheduler
from rfly_link.io.clients import SendStats, UdpSender

TruthSink = Callable[[Truth, int], None]  # (truth, host_ns)


class RunStats(NamedTuple):
    stand_in: StandInStats
    send: SendStats
    control_ports: dict[int, int]  # logical control port -> the port actually bound


class _Control(asyncio.DatagramProtocol):
    def __init__(self, on_datagram: Callable[[bytes, Address], None]) -> None:
        self.on_datagram = on_datagram

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self.on_datagram(data, (str(addr[0]), int(addr[1])))


class SimRunner:
    """Runs one stand-in: binds its control ports on ``bind_host`` and sends until stopped.

    ``control_ports`` maps a logical control port to the port to bind instead (0: any free
    one; the tests use it); ``on_truth`` receives each ground-truth record with its host time.
    """

    def __init__(
        self,
        stand_in: StandIn,
        *,
        bind_host: str = "127.0.0.1",
        scheduler: Scheduler | None = None,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        on_truth: TruthSink | None = None,
        control_ports: dict[int, int] | None = None,
    ) -> None:
        self.stand_in = stand_in
        self.bind_host = bind_host
        self.scheduler: Scheduler = scheduler or LoopScheduler()
        self.wall_ms = wall_ms
        self.on_truth = on_truth
        self._rebind = dict(control_ports or {})
        self._bound: dict[int, int] = {}
        self._sender: UdpSender | None = None
        self._send_stats = SendStats()
        self._start_ns = 0
        self._wake = asyncio.Event()
        self.started = asyncio.Event()  # set once the control ports are bound

    @property
    def start_ns(self) -> int:
        """Host time of scenario time 0 (valid once ``started`` is set): a host time ``h`` is
        scenario time ``(h - start_ns) / 1e9``, where the truth can be asked for."""
        return self._start_ns

    @property
    def stats(self) -> RunStats:
        send = self._sender.stats if self._sender is not None else self._send_stats
        return RunStats(self.stand_in.stats, send, dict(self._bound))

    async def run(self, duration_s: float | None = None) -> RunStats:
        """Send until ``duration_s`` seconds of scenario time have passed (``None``: until
        cancelled); the sockets are closed either way."""
        loop = asyncio.get_running_loop()
        transports: list[asyncio.DatagramTransport] = []
        self._sender = UdpSender()
        try:
            for logical in self.stand_in.control_ports():
                port = self._rebind.get(logical, logical)
                try:
                    transport, _ = await loop.create_datagram_endpoint(
                        self._protocol_factory(logical), local_addr=(self.bind_host, port)
                    )
                except OSError as exc:
                    raise OSError(
                        exc.errno,
                        f"cannot bind the CopterSim control port {self.bind_host}:{port}: "
                        f"{exc.strerror}",
                    ) from exc
                transports.append(transport)
                self._bound[logical] = transport.get_extra_info("sockname")[1]
            self._start_ns = self.scheduler.now_ns()
            self.started.set()
            await self._loop(None if duration_s is None else round(duration_s * 1e9))
        finally:
            for transport in transports:
                transport.close()
            self._send_stats = self._sender.stats
            self._sender.close()
            self._sender = None
        return self.stats

    def _protocol_factory(self, logical: int) -> Callable[[], _Control]:
        def handle(data: bytes, sender: Address) -> None:
            t_ns = self.scheduler.now_ns() - self._start_ns
            self.stand_in.receive(data, sender, logical, t_ns)
            self._wake.set()  # a new subscription may be due before the current sleep ends

        return lambda: _Control(handle)

    async def _loop(self, duration_ns: int | None) -> None:
        sender = self._sender
        assert sender is not None
        while True:
            t_ns = self.scheduler.now_ns() - self._start_ns
            self._wake.clear()
            output = self.stand_in.poll(t_ns, self.wall_ms())
            for datagram in output.datagrams:
                sender.send(datagram.data, datagram.address)
            if self.on_truth is not None:
                for truth in output.truths:
                    self.on_truth(truth, self._start_ns + t_ns)
            if duration_ns is not None and t_ns >= duration_ns:
                return
            due_ns = self.stand_in.next_due_ns()
            if duration_ns is not None:
                due_ns = min(due_ns, duration_ns)
            await self.scheduler.sleep_until_ns(self._start_ns + due_ns, self._wake)
