"""``ZenohOutput``: the host's JSON lines on ``gizmo/<vehicle>/<type>``, from a thread of its own.

The host's loop only appends to a bounded queue (``[zenoh] queue_lines``; when full, the oldest
line is dropped and counted) and wakes the thread: opening the session (a client retries with
backoff until its router answers), a slow peer or an outage never slows the serial path. The
thread puts each line with congestion control DROP (Zenoh drops rather than blocks when a link
is congested) and a Zenoh timestamp from the session's clock (HLC, wall-clock based).

A line is not put (counted ``expired``) when, by its turn, its own ``valid_until_ns`` has run
out (while it waited, or before it was handed; a HOLD is put whatever its validity), or it
waited longer than ``MAX_WAIT_NS`` (a ``verdict`` HOLD is put whatever its wait): a subscriber
on another machine ages a line from its arrival (it cannot read the host's monotonic clock), so
a line that waited in the queue while the session was not open would read as just made (red
team rt23: a PROCEED 4 s old, its validity long gone, shown fresh when the router came up). A
ROS 2 snapshot likewise, and its messages carry the snapshot's own wall-clock time as their
source timestamp, not the time of the put.

It answers ``gizmo/<vehicle>/world/latest`` with the newest world line (an error reply before
the first one), and with ``[zenoh] ros2`` it also publishes each world snapshot as ROS 2
messages (``gizmo_host.ros2``), built on the thread too.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import zenoh

from fusion import WorldSnapshot
from gizmo_core import ConfigError
from gizmo_host.publish.sinks import valid_until_ns
from gizmo_host.timing import Backoff
from gizmo_host.zenoh.config import MESSAGE_TYPES, ZenohConfig, key, latest_key
from gizmo_host.zenoh.session import error_detail, load_file, open_session

LOGGER = logging.getLogger(__name__)
_TYPE_PREFIX = b'{"type":"'
OPEN_BACKOFF = Backoff(0.2, 5.0)  # a client whose router does not answer yet
CLOSE_TIMEOUT_S = 2.0
_ROS2 = "ros2"  # the queue's kind for a snapshot to publish as ROS 2 messages
# Every host line that has a validity says it at the top level before any nested object.
# The longest a line may wait for its turn and still be put: the world line's default PROCEED
# validity. (Live, a line waits microseconds; only a session not yet open makes it wait.)
MAX_WAIT_NS = 200_000_000
# A ``verdict`` HOLD is put however long it waited: it has no position to read as fresh, and
# it revokes a PROCEED that may still be valid (rt60: dropped after 210 ms behind a stalled
# put, it left a PROCEED valid for 760 ms more at ttl_ms 1000; the next HOLD came 1 s later)
_VERDICT_LINE = b'{"type":"verdict",'
# A serving that lasted this long worked: a failure after it backs off from the start again.
STEADY_NS = 60_000_000_000


def line_type(line: bytes) -> str | None:
    """A JSON line's ``type``: read from its start (every line the host writes begins with
    it), else parsed; None when it has none."""
    if line.startswith(_TYPE_PREFIX):
        end = line.find(b'"', len(_TYPE_PREFIX))
        if end > 0:
            return line[len(_TYPE_PREFIX) : end].decode("ascii", "replace")
    try:
        value = json.loads(line).get("type")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def says_hold(line: bytes) -> bool:
    """Whether a ``verdict`` or ``world`` line's own verdict is HOLD (a world line's is its
    first ``"verdict":``: the top level's come before its targets')."""
    if line.startswith(b'{"type":"verdict",'):
        return line.startswith(b'"decision":"HOLD"', 18)
    if line.startswith(b'{"type":"world",'):
        at = line.find(b'"verdict":"')
        return at >= 0 and line.startswith(b'HOLD"', at + 11)
    return False


class ZenohOutput:
    """An ``Output`` (``Host.add_output``) and, with ROS 2 on, a sink (``Host.add_sink``)."""

    name = "zenoh"

    def __init__(
        self,
        config: ZenohConfig,
        session: zenoh.Session | None = None,
        clock_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """``session``: one to use (and not close); default, one opened for ``config``
        (whose Zenoh configuration file, if any, is read now: a ``ConfigError`` at start
        rather than on the thread). ``clock_ns``: the host's clock, which the lines'
        ``valid_until_ns`` are on."""
        if config.config is not None and session is None:
            load_file(config.config)
        self.config = config
        self.vehicle = config.vehicle_name
        self._given = session
        # (kind, the line or snapshot, the host's clock when it was handed)
        self._queue: collections.deque[tuple[str, Any, int]] = collections.deque()
        self._max = config.queue_lines
        self._wake = threading.Event()
        self._closed = threading.Event()  # ends a retry's wait (a line does not: rt23)
        self._closing = False
        self._clock_ns = clock_ns
        self._thread: threading.Thread | None = None
        self._latest_world: bytes | None = None
        self.wants_snapshots = config.ros2 != "off"
        if self.wants_snapshots:  # the ros2 extra, checked now rather than on the thread
            from gizmo_host.ros2.publication import Ros2Publication  # noqa: PLC0415

            self._ros2_class: type[Ros2Publication] | None = Ros2Publication
        else:
            self._ros2_class = None
        self.handed = self.dropped = self.sent = self.errors = self.untyped = 0
        self.queries = self.open_failures = self.ros2_samples = self.ros2_skipped = 0
        self.oversized = self.expired = self.restarts = 0
        self.connected = False

    # -- the host's side (its loop) --------------------------------------------------------

    def send(self, line: bytes) -> None:
        message_type = line_type(line)
        if message_type not in MESSAGE_TYPES:
            self.untyped += 1
            return
        if len(line) > self.config.max_line_bytes:  # no fleet view would take it
            self.oversized += 1
            return
        if message_type == "world":
            self._latest_world = line  # one reference: the queryable reads it on its thread
        self.handed += 1
        self._put(message_type, line)

    def on_message(self, message: object) -> None:
        """A host sink: world snapshots to publish as ROS 2 messages."""
        if isinstance(message, WorldSnapshot):
            self._put(_ROS2, message)

    def _put(self, kind: str, item: Any) -> None:
        queue = self._queue
        if len(queue) >= self._max:
            try:
                queue.popleft()
                self.dropped += 1
            except IndexError:  # the thread emptied it meanwhile
                pass
        queue.append((kind, item, self._clock_ns()))
        self._wake.set()

    async def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"zenoh {self.vehicle}")
        self._thread.daemon = True  # a stuck session never keeps the process alive
        self._thread.start()

    async def close(self) -> None:
        """Publish what is queued (the host's last lines), then close, within a bound."""
        self._closing = True
        self._closed.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join, CLOSE_TIMEOUT_S)
            if thread.is_alive():  # a process that exits with it inside Zenoh may abort
                LOGGER.warning(
                    "zenoh: the publishing thread has not finished within %g s; the session "
                    "is left to the process's exit",
                    CLOSE_TIMEOUT_S,
                )

    def stats(self) -> dict[str, int]:
        return {
            "queued": self.handed,
            "dropped": self.dropped,
            "disconnected": 0,  # Zenoh has no reader to cut off; see "connected"
            "waiting": len(self._queue),
            "connected": int(self.connected),
            "sent": self.sent,
            "errors": self.errors,
            "untyped": self.untyped,
            "oversized": self.oversized,
            "expired": self.expired,
            "queries": self.queries,
            "open_failures": self.open_failures,
            "restarts": self.restarts,
            "ros2_samples": self.ros2_samples,
            "ros2_skipped": self.ros2_skipped,
        }

    # -- the thread ------------------------------------------------------------------------

    def _open(self) -> zenoh.Session | None:
        """The session, retried with backoff until it opens or the output closes."""
        if self._given is not None:
            return self._given
        failures = 0
        while not self._closing:
            try:
                return open_session(self.config)
            except (zenoh.ZError, ConfigError) as exc:  # ConfigError: the file, read again
                # (a certificate renewed meanwhile), is gone or broken for now (red team rt32:
                # it ended the thread, and Zenoh stayed silent for the run)
                self.open_failures += 1
                failures += 1
                delay = OPEN_BACKOFF.delay_s(failures)
                LOGGER.warning(
                    "zenoh: cannot open the session (%s); again in %.1f s", error_detail(exc), delay
                )
                self._closed.wait(delay)  # the lines queue meanwhile, bounded
        return None

    def _run(self) -> None:
        """Open, serve; a failure of the serving (a bug, or Zenoh refusing a declaration) is
        counted, logged and served again after a backoff, on a new session, rather than
        leaving the vehicle silent on Zenoh for the rest of the run (red team rt26). The
        backoff grows while the failures recur, and starts over after a serving that lasted
        ``STEADY_NS`` (rt31: reset by any line put, a fault on every world line restarted
        the session five times a second)."""
        failures = 0
        while True:
            session = self._open()
            if session is None:
                return
            started_ns = self._clock_ns()
            try:
                self._serve(session)
                return  # closing: the queue was put
            except Exception:  # a bug here must not pass silently, nor reach the host's loop
                self.errors += 1
                self.restarts += 1
                steady = self._clock_ns() - started_ns >= STEADY_NS
                failures = 1 if steady else failures + 1
                delay = OPEN_BACKOFF.delay_s(failures)
                LOGGER.exception(
                    "zenoh: the publishing thread failed; it starts again in %.1f s", delay
                )
            finally:
                self.connected = False
                if session is not self._given:
                    session.close()  # type: ignore[no-untyped-call]
            if self._closed.wait(delay):
                return

    def _serve(self, session: zenoh.Session) -> None:
        """Declare, then put the queued lines until closing; what was declared is undeclared
        whatever fails, even between two declarations (rt31: a session passed in kept the
        publishers of every failed serving)."""
        declared: list[Any] = []
        try:
            publishers, ros2 = self._declare(session, declared)
            self.connected = True
            self._put_queued(session, publishers, ros2)
        finally:
            for entity in reversed(declared):
                try:
                    entity.undeclare()
                except Exception:  # counted; the others are undeclared all the same
                    self.errors += 1

    def _declare(
        self, session: zenoh.Session, declared: list[Any]
    ) -> tuple[dict[str, zenoh.Publisher], Any]:
        """The publishers by key and the ROS 2 publication (None: off), each appended to
        ``declared`` as it is made."""
        publishers: dict[str, zenoh.Publisher] = {}
        for message_type in MESSAGE_TYPES:
            publishers[message_type] = session.declare_publisher(
                key(self.vehicle, message_type),
                encoding=zenoh.Encoding.APPLICATION_JSON,
                congestion_control=zenoh.CongestionControl.DROP,
            )
            declared.append(publishers[message_type])
        declared.append(session.declare_queryable(latest_key(self.vehicle), self._on_query))
        ros2 = None
        if self._ros2_class is not None:
            config = self.config
            ros2 = self._ros2_class(
                config.ros2, self.vehicle, config.ros2_domain, str(session.zid())
            )
            for ros2_key in ros2.keys:
                publishers[ros2_key] = session.declare_publisher(
                    ros2_key,
                    encoding=zenoh.Encoding.APPLICATION_CDR,
                    congestion_control=zenoh.CongestionControl.DROP,
                )
                declared.append(publishers[ros2_key])
        return publishers, ros2

    def _put_queued(
        self, session: zenoh.Session, publishers: dict[str, zenoh.Publisher], ros2: Any
    ) -> None:
        """Put what is queued, then wait for more, until closing: first what queued before
        this serving (the session opening, or the backoff after a failed serving)."""
        queue = self._queue
        while True:
            while queue:
                kind, item, handed_ns = queue.popleft()
                ros = kind == _ROS2
                if ros and ros2 is None:
                    continue
                until = item.valid_until_ns if ros else valid_until_ns(item)
                hold = not item.proceed if ros else says_hold(item)
                revokes = hold and not ros and item.startswith(_VERDICT_LINE)
                if not revokes and self._expired(handed_ns, until, hold=hold):
                    self.expired += 1
                    continue
                if ros:
                    self._put_ros2(publishers, ros2, item)
                    continue
                try:
                    publishers[kind].put(item, timestamp=session.new_timestamp())
                    self.sent += 1
                except zenoh.ZError:
                    self.errors += 1
            if self._closing:
                return
            self._wake.wait()
            self._wake.clear()

    def _expired(self, handed_ns: int, until_ns: int | None, *, hold: bool) -> bool:
        """Whether a line handed at ``handed_ns`` (valid until ``until_ns``, if it says) is
        past its turn: it waited too long, or its validity has run out, while it waited or
        before it was handed (a late frame's result line, red team rt26). A HOLD is put
        whatever its validity: a HOLD is safe, and the one after a PROCEED revokes it (rt27:
        dropped for its short validity, it left an older PROCEED the subscriber's last word);
        the PROCEED, older, waited longer: it is not put without the HOLD."""
        now = self._clock_ns()
        return now - handed_ns > MAX_WAIT_NS or (
            not hold and until_ns is not None and until_ns < now
        )

    def _on_query(self, query: zenoh.Query) -> None:
        """On Zenoh's thread: the newest world line, as it was published."""
        self.queries += 1
        line = self._latest_world
        if line is None:
            query.reply_err(b"no world snapshot yet")
        else:
            query.reply(latest_key(self.vehicle), line, encoding=zenoh.Encoding.APPLICATION_JSON)

    def _put_ros2(
        self, publishers: dict[str, zenoh.Publisher], ros2: Any, snapshot: WorldSnapshot
    ) -> None:
        try:
            # The snapshot's own time (a replay's capture may have none: then the put's).
            made_ns = time.time_ns() if snapshot.wall_ns is None else snapshot.wall_ns
            samples = ros2.samples(snapshot, made_ns)
        except Exception:  # a message that cannot be built is counted, never raised
            self.errors += 1
            LOGGER.exception("zenoh: a ROS 2 message could not be built")
            return
        if not samples:
            self.ros2_skipped += 1
        for sample in samples:
            try:
                publishers[sample.key].put(sample.payload, attachment=sample.attachment)
                self.ros2_samples += 1
            except zenoh.ZError:
                self.errors += 1
