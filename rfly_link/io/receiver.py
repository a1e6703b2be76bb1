"""asyncio UDP receivers for RflySim, with a fast reader thread at the edge.

Why a thread: stock asyncio ``DatagramProtocol`` reads every datagram into a fresh 256 KiB
buffer (19-45 µs each on the target machine); ``recvfrom_into`` a preallocated buffer costs
0.7-2.3 µs (docs/platform-notes.md). Each :class:`UdpReceiver` therefore owns one reader thread that
drains its socket with ``recvfrom_into``, runs the sans-I/O pipeline (allow-list, reassembly,
decode) on the buffer in place, and hands finished events to the event loop in batches through
a :class:`~rfly_link.io.handoff.Handoff`. Nothing a peer sends escapes as an exception: every
rejected datagram is a drop counted by cause, and the one queue between the thread and the
consumer is bounded (oldest dropped, counted as ``queue_full`` and reported on the log), even
when the event loop itself stalls.

For sensor streams the reassembler offers the expected fragment's place in the frame buffer, so
the kernel copies each fragment straight into place (``recvmsg_into`` with a scratch buffer for
anything unexpected), and frame buffers and float32 outputs are recycled once the consumer has
dropped them (:mod:`rfly_link.pool`): fresh 1.6-3.2 MB allocations halved the rate here.

Small message streams need no thread: with ``thread=False`` the event loop serves the socket
(``add_reader``) with the same preallocated buffer and pipeline, draining at most
``LOOP_DRAIN_MAX`` datagrams a wake-up so one flooded port cannot starve the loop. A host
listening to many ports (a vehicle's state, replies, distance sensors and gimbal) then costs
no thread per port; the threads stay for megabyte sensor frames.

The kernel receive buffer is asked for 8 MiB (a 1.6 MB LiDAR burst loses 61-97 % with the
208 KiB default); the size granted is reported, with the kernel's ``RcvbufErrors`` counter.
Linux reports twice the usable size, so the shortfall warning compares the usable half; as root
(CAP_NET_ADMIN) ``SO_RCVBUFFORCE`` lifts the ``net.core.rmem_max`` cap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Collection
from typing import NamedTuple

from rfly_link.backoff import Backoff
from rfly_link.errors import DropCause
from rfly_link.io.handoff import Handoff
from rfly_link.io.pipelines import (
    Event,
    InPlacePipeline,
    Pipeline,
)
from rfly_link.io.sockinfo import (
    SO_RCVBUFFORCE,
    is_loopback,
    is_wildcard,
    read_socket_drops,
    read_udp_rcvbuf_errors,
    serves_destination,
    usable_rcvbuf,
)

log = logging.getLogger(__name__)

DEFAULT_RCVBUF = 8 * 1024 * 1024
MAX_DATAGRAM = 65535
# A persistent socket error must not spin a core: back off, doubling, up to 0.1 s.
SOCKET_ERROR_BACKOFF = Backoff(0.001, 0.1)
# A consumer that falls behind is reported on the log at most this often.
DROP_REPORT_INTERVAL_NS = 5_000_000_000
# A loop-served receiver reads at most this many datagrams per wake-up, then yields.
LOOP_DRAIN_MAX = 64


class ReceiverStats(NamedTuple):
    datagrams: int
    bytes: int
    events: int
    drops: dict[str, int]
    rcvbuf_requested: int
    rcvbuf_granted: int
    socket_drops: int | None  # this socket's drops in /proc/net/udp
    kernel_rcvbuf_errors: int | None  # system-wide Udp RcvbufErrors in /proc/net/snmp


class UdpReceiver:
    """A bound UDP socket, its reader thread and a bounded queue of :class:`Event`.

    ``allowed_senders`` (IP strings) drops everything else, counted as ``sender_not_allowed``.
    Binding a non-loopback address without one logs a warning at :meth:`start`, since the
    simulator usually runs on another machine and the socket is then open to the network. With
    ``multicast_group`` the socket binds every address (a unicast-bound socket never sees
    multicast), so the warning applies whatever ``host`` is; the group is joined on
    ``multicast_interface`` (default: ``host`` when it names a non-loopback address, otherwise
    the kernel's choice by route, INADDR_ANY). Use ``"127.0.0.1"`` for loopback-only multicast.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        port: int,
        host: str = "127.0.0.1",
        allowed_senders: Collection[str] | None = None,
        rcvbuf_bytes: int = DEFAULT_RCVBUF,
        multicast_group: str | None = None,
        multicast_interface: str | None = None,
        queue_size: int = 256,
        batch_size: int = 64,
        clock: Callable[[], int] = time.monotonic_ns,
        name: str | None = None,
        thread: bool = True,
    ) -> None:
        """``thread``: a reader thread of its own (megabyte sensor frames), else the event
        loop serves the socket (small messages)."""
        if not 0 <= port <= 65535:  # bind() would raise OverflowError, not OSError
            raise ValueError(f"port: expected 0..65535, got {port}")
        self.pipeline = pipeline
        self.host = host
        self.port = port
        self.allowed_senders = frozenset(allowed_senders) if allowed_senders is not None else None
        self.rcvbuf_requested = rcvbuf_bytes
        self.multicast_group = multicast_group
        if multicast_interface is None:
            specific = not is_wildcard(host) and not is_loopback(host)
            multicast_interface = host if specific else "0.0.0.0"
        self.multicast_interface = multicast_interface
        self.batch_size = batch_size
        self.clock = clock
        self.name = name or f"rfly-udp-{port}"
        self.threaded = thread
        self._scratch = memoryview(bytearray(0 if thread else MAX_DATAGRAM))
        self._queue: Handoff[Event] = Handoff(queue_size)
        self._next_drop_report_ns = -(2**63)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stop_event = threading.Event()  # wakes a backing-off reader at close()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.rcvbuf_granted = 0
        self._datagrams = 0
        self._bytes = 0
        self._local_drops = dict.fromkeys(
            (DropCause.SENDER_NOT_ALLOWED, DropCause.DECODE_FAILED, DropCause.SOCKET_ERROR), 0
        )

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind, size the receive buffer and start the reader thread."""
        if self._sock is not None:
            raise RuntimeError(f"{self.name}: already started")
        self._loop = asyncio.get_running_loop()
        self._queue.attach(self._loop)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self._configure(sock)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._stopping = False
        self._stop_event.clear()
        self._warn_at_start()
        if not self.threaded:
            sock.setblocking(False)
            self._loop.add_reader(sock.fileno(), self._on_readable)
            return
        self._thread = threading.Thread(target=self._reader, name=self.name, daemon=True)
        self._thread.start()

    @property
    def bind_host(self) -> str:
        """The address actually bound: every address ("") when receiving multicast."""
        return "" if self.multicast_group is not None else self.host

    @property
    def rcvbuf_usable(self) -> int:
        """Datagram bytes the granted receive buffer holds (half the value Linux reports)."""
        return usable_rcvbuf(self.rcvbuf_granted)

    def _warn_at_start(self) -> None:
        bound = self.bind_host or "0.0.0.0"
        if not is_loopback(bound) and self.allowed_senders is None:
            log.warning(
                "%s: bound to %s:%d without an allow-list: any host on the network can "
                "send to it; pass allowed_senders=[<simulator IP>]",
                self.name,
                bound,
                self.bound_port,
            )
        destination = getattr(self.pipeline, "destination_ip", None)
        if destination is not None and not serves_destination(self.bind_host, destination):
            log.warning(
                "%s: Config.json sends this sensor's data to %s, but the receiver is bound to "
                "%s: nothing will arrive; bind %s (or 0.0.0.0 with an allow-list)",
                self.name,
                destination,
                bound,
                destination,
            )
        if self.rcvbuf_usable < self.rcvbuf_requested:
            log.warning(
                "%s: receive buffer holds %d B of %d B requested (net.core.rmem_max); "
                "large sensor bursts may be lost",
                self.name,
                self.rcvbuf_usable,
                self.rcvbuf_requested,
            )

    def _configure(self, sock: socket.socket) -> None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf_requested)
        granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        if usable_rcvbuf(granted) < self.rcvbuf_requested and SO_RCVBUFFORCE is not None:
            with contextlib.suppress(OSError):  # needs CAP_NET_ADMIN; rmem_max caps otherwise
                sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, self.rcvbuf_requested)
            granted = sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        self.rcvbuf_granted = granted  # as reported: Linux doubles it
        if self.multicast_group is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.bind_host, self.port))
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"{self.name}: cannot bind {self.bind_host or '0.0.0.0'}:{self.port}: "
                f"{exc.strerror}",
            ) from exc
        if self.multicast_group is not None:
            group = socket.inet_aton(self.multicast_group)
            try:
                membership = group + socket.inet_aton(self.multicast_interface)
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
            except OSError as exc:
                raise OSError(
                    exc.errno,
                    f"{self.name}: cannot join {self.multicast_group} on interface "
                    f"{self.multicast_interface}: {exc.strerror}",
                ) from exc
            log.info(
                "%s: joined %s on interface %s",
                self.name,
                self.multicast_group,
                self.multicast_interface,
            )
        sock.setblocking(True)  # the reader blocks in recv only when the queue is drained

    async def close(self) -> None:
        """Stop the reader thread and close the socket; safe to call twice."""
        if self._sock is None:
            return
        self._stopping = True
        self._stop_event.set()
        if not self.threaded:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._sock.fileno())
            self._sock.close()
            self._sock = None
            return
        # shutdown() wakes a thread blocked in recv, even on an unconnected UDP socket on
        # Linux (it also raises ENOTCONN there, which is expected).
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RD)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        self._sock.close()
        self._sock = None
        self._thread = None

    async def __aenter__(self) -> UdpReceiver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- consumer side -----------------------------------------------------------------------------

    @property
    def local_address(self) -> tuple[str, int] | None:
        """The socket's own (address, port) while open (the kernel's view of the bind), else
        None: closed, and its reader thread joined."""
        if self._sock is None:
            return None
        host, port = self._sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def bound_port(self) -> int:
        if self._sock is None:
            return self.port
        port: int = self._sock.getsockname()[1]
        return port

    async def get(self) -> Event:
        return await self._queue.get()

    async def wait_delivered(self, count: int) -> None:
        """Wait until ``count`` events in total have been delivered (queued or overflowed)."""
        await self._queue.wait_put(count)

    def get_nowait(self) -> Event:
        return self._queue.get_nowait()

    def __aiter__(self) -> UdpReceiver:
        return self

    async def __anext__(self) -> Event:
        return await self._queue.get()

    @property
    def stats(self) -> ReceiverStats:
        drops = self.pipeline.drop_counts()
        local = {**self._local_drops, DropCause.QUEUE_FULL: self._queue.dropped}
        for cause, n in local.items():
            if n:
                drops[cause.value] = drops.get(cause.value, 0) + n
        return ReceiverStats(
            self._datagrams,
            self._bytes,
            self._queue.put_count,
            drops,
            self.rcvbuf_requested,
            self.rcvbuf_granted,
            read_socket_drops(self._sock) if self._sock is not None else None,
            read_udp_rcvbuf_errors(),
        )

    # -- reader thread -----------------------------------------------------------------------------

    def _reader(self) -> None:
        sock = self._sock
        assert sock is not None
        scratch = memoryview(bytearray(MAX_DATAGRAM))
        plain = [scratch]
        allowed = self.allowed_senders
        pipeline = self.pipeline
        process = pipeline.process
        # Sensor pipelines offer the expected fragment's place in the frame buffer, so the
        # kernel copies it there directly; anything larger spills into the scratch buffer.
        in_place = pipeline if isinstance(pipeline, InPlacePipeline) else None
        receive_slot = in_place.receive_slot if in_place is not None else None
        clock = self.clock
        # Large sensor frames go to the loop at once (latency); small messages are batched
        # until the socket is drained (fewer wake-ups at 1 kHz IMU rates).
        urgent = getattr(pipeline, "urgent", False)
        batch: list[Event] = []
        errors_in_a_row = 0
        while True:
            slot = receive_slot() if receive_slot is not None else None
            buffers = plain if slot is None else [slot, scratch]
            # One syscall per datagram while data is queued; block only when drained.
            try:
                n, _, _, sender = sock.recvmsg_into(buffers, 0, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if batch:
                    self._hand_over(batch)
                    batch = []
                try:
                    n, _, _, sender = sock.recvmsg_into(buffers)
                except OSError:
                    n, sender = -1, None
            except OSError:
                n, sender = -1, None
            if (
                self._stopping
                or sender is None
                or (allowed is not None and sender[0] not in allowed)
            ):
                if in_place is not None and slot is not None:
                    in_place.cancel_in_place()
                if self._stopping:
                    break
                if sender is None:  # a socket error: count it, back off, keep receiving
                    self._local_drops[DropCause.SOCKET_ERROR] += 1
                    errors_in_a_row += 1
                    if self._stop_event.wait(SOCKET_ERROR_BACKOFF.delay_s(errors_in_a_row)):
                        break
                else:
                    self._datagrams += 1
                    self._bytes += n
                    self._local_drops[DropCause.SENDER_NOT_ALLOWED] += 1
                continue
            errors_in_a_row = 0
            self._datagrams += 1
            self._bytes += n
            try:
                if in_place is None or slot is None:
                    events = process(scratch[:n], sender, clock())
                else:
                    events = in_place.process_in_place(n, scratch, sender, clock())
            except Exception:  # a pipeline bug must not end the receive loop
                log.exception("%s: pipeline failed on a %d B datagram", self.name, n)
                self._local_drops[DropCause.DECODE_FAILED] += 1
                continue
            if not events:
                continue
            batch.extend(events)
            if urgent or len(batch) >= self.batch_size:
                self._hand_over(batch)
                batch = []
        if batch:
            self._hand_over(batch)

    def _on_readable(self) -> None:
        """The loop's reader callback: drain what is queued, up to ``LOOP_DRAIN_MAX``."""
        sock = self._sock
        if sock is None:
            return
        scratch = self._scratch
        batch: list[Event] = []
        allowed = self.allowed_senders
        for _ in range(LOOP_DRAIN_MAX):
            try:
                n, sender = sock.recvfrom_into(scratch)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # e.g. an ICMP error queued on the socket: counted, once
                self._local_drops[DropCause.SOCKET_ERROR] += 1
                break
            self._datagrams += 1
            self._bytes += n
            if allowed is not None and sender[0] not in allowed:
                self._local_drops[DropCause.SENDER_NOT_ALLOWED] += 1
                continue
            try:
                batch.extend(self.pipeline.process(scratch[:n], sender, self.clock()))
            except Exception:  # a pipeline bug must not end the receive loop
                log.exception("%s: pipeline failed on a %d B datagram", self.name, n)
                self._local_drops[DropCause.DECODE_FAILED] += 1
        if batch:
            self._hand_over(batch)

    def _hand_over(self, batch: list[Event]) -> None:
        queue = self._queue
        dropped = queue.dropped
        if not queue.put_many(batch):  # the loop is closed: nobody is listening any more
            self._stopping = True
        if queue.dropped > dropped:
            now_ns = self.clock()
            if now_ns >= self._next_drop_report_ns:
                self._next_drop_report_ns = now_ns + DROP_REPORT_INTERVAL_NS
                log.warning(
                    "%s: the consumer is not keeping up: %d events dropped so far "
                    "(oldest first, queue of %d; queue_full in the stats)",
                    self.name,
                    queue.dropped,
                    queue.maxsize,
                )
