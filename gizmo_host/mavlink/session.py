"""One autopilot over one MAVLink link: heartbeats, streams, and its clock on ours.

The session is fed bytes with their host receive time and sender (``feed``) and sends through
an injected ``send(bytes, to) -> bool``, so it runs the same over any transport and, on a
``ManualScheduler``, without one. It

- sends its own HEARTBEAT (an onboard controller) at ``heartbeat_hz``, TIMESYNC requests at
  ``timesync_hz``, and asks the autopilot for ``streams`` at ``stream_hz`` with
  MAV_CMD_SET_MESSAGE_INTERVAL whenever the link comes up, the autopilot reboots, or a stream
  stays silent; everything it sends goes to the bound autopilot's address only (before any,
  to the link's own peer, if it has one), and once a bound autopilot's link is DOWN its
  address is asked nothing but our HEARTBEAT (whoever answers there keeps nothing: only the
  autopilot's own HEARTBEAT keeps its binding);
- binds one autopilot by its ids **and** its address (:mod:`~gizmo_host.mavlink.binding`):
  a second voice claiming to be it, or a second autopilot that ``target_system = 0`` would
  also allow, is a conflict: its messages are dropped, counted and logged, and ``on_conflict``
  is told (the world HOLDs ``pose_conflict``) until it has been quiet for
  ``conflict_quiet_s``. Everything else (other ids, garbage, bad CRCs, unknown ids, unsigned
  frames when signing) is counted and dropped;
- declares the link down ``link_timeout_s`` after the last HEARTBEAT, and tells ``on_link``
  (the world) UP only ``bind_settle_s`` after a new binding (:mod:`.settle`);
- drops a message whose boot time is further ahead of the autopilot's clock (as mapped) than
  ``future_ms`` (counted ``future_stamp``): one far stamp must not move any clock;
- maps the autopilot's boot clock to the host clock with a
  :class:`~fusion.timesync.TimesyncEstimator` (every boot time feeds its reboot check, each
  message id a stream of its own; ``time_boot_ms`` is unwrapped there, and the listeners
  read the message's unwrapped boot time as ``boot_ns``). An answer to our TIMESYNC counts
  only if it answers a request still outstanding, within ``answer_deadline_ms``: answers
  to no request, late answers and replays are refused and counted. The estimator's
  round-trip gate is the only one (``rtt_slack_ms`` is its slack over the least recent
  round trip);
- answers the bound autopilot's own TIMESYNC requests always: in its clock as mapped once
  locked (PX4's offset to us stays zero), and before that with its own request time (its
  offset to us is then half the round trip). MAVSDK answers a peer only after the peer has
  answered it, so waiting for our lock first would deadlock both (docs/mavlink.md).

Accepted messages go to the listeners (the pose source) with their host receive time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from fusion.timesync import TimesyncEstimator
from gizmo_core.clock import ClockStatus
from gizmo_host.timing import Scheduler, Timer

from . import codec as mc
from .binding import AutopilotBinding, Heard, Source, describe
from .requests import TimesyncRequests
from .settle import LinkTeller
from .signing import Signer

LOGGER = logging.getLogger(__name__)
Send = Callable[[bytes, "Source | None"], bool]
Listener = Callable[[Any, int], None]
LinkCallback = Callable[[bool, int, str], None]
ConflictCallback = Callable[[int, str], None]
DEFAULT_STREAMS = (mc.MSG_ATTITUDE_QUATERNION, mc.MSG_LOCAL_POSITION_NED, mc.MSG_ODOMETRY)
_RATE_WINDOW_NS = 1_000_000_000
_REREQUEST_NS = 5_000_000_000
CONFLICT_TELL_NS = 200_000_000  # on_conflict at most this often while in conflict
_INT64_MAX = 2**63 - 1


class AutopilotSession:
    """The host's side of one autopilot link (see the module docstring)."""

    def __init__(
        self,
        send: Send,
        scheduler: Scheduler,
        *,
        target_system: int = 0,
        target_component: int = 0,
        system_id: int = 1,
        component_id: int = mc.COMP_ONBOARD_COMPUTER,
        streams: Sequence[int] = DEFAULT_STREAMS,
        stream_hz: float = 50.0,
        heartbeat_hz: float = 1.0,
        timesync_hz: float = 10.0,
        link_timeout_s: float = 3.0,
        conflict_quiet_s: float = 2.0,
        bind_settle_s: float = 1.2,
        rtt_slack_ms: float = 1.0,
        answer_deadline_ms: float = 200.0,
        future_ms: float = 50.0,
        estimator: TimesyncEstimator | None = None,
        signer: Signer | None = None,
        on_link: LinkCallback | None = None,
        on_conflict: ConflictCallback | None = None,
    ) -> None:
        for name, value in (
            ("heartbeat_hz", heartbeat_hz),
            ("timesync_hz", timesync_hz),
            ("link_timeout_s", link_timeout_s),
            ("conflict_quiet_s", conflict_quiet_s),
            ("answer_deadline_ms", answer_deadline_ms),
            ("future_ms", future_ms),
        ):
            if not value > 0:
                raise ValueError(f"{name}: expected > 0, got {value!r}")
        if not 0 <= target_system <= 255 or not 0 <= target_component <= 255:
            raise ValueError(
                f"target ids: expected 0..255, got {target_system!r}/{target_component!r}"
            )
        self.codec = mc.Codec(system_id, component_id, signer=signer)
        self.estimator = estimator or TimesyncEstimator(rtt_slack_ms=rtt_slack_ms)
        self._send = send
        self._scheduler = scheduler
        self._timeout_ns = round(link_timeout_s * 1e9)
        self.binding = AutopilotBinding(
            target_system,
            target_component,
            quiet_ns=round(conflict_quiet_s * 1e9),
            rebind_ns=self._timeout_ns,
        )
        self._streams = tuple(streams)
        self._stream_hz = stream_hz
        self._heartbeat_ns = round(1e9 / heartbeat_hz)
        self._timesync_ns = round(1e9 / timesync_hz)
        self._link = LinkTeller(on_link, scheduler, round(bind_settle_s * 1e9))
        self._bound_ns = 0  # when the current binding was made
        self._on_conflict = on_conflict
        self._conflict_told_ns: int | None = None
        self._in_conflict = False
        self._requests = TimesyncRequests(deadline_ns=round(answer_deadline_ms * 1e6))
        self._future_ns = round(future_ms * 1e6)
        self._listeners: list[Listener] = []
        self._timers: list[Timer] = []
        self._link_timer: Timer | None = None
        self._up = False
        self._last_heartbeat_ns: int | None = None
        self._autopilot: tuple[int, int] | None = None  # (MAV_TYPE, MAV_AUTOPILOT)
        self._epoch = self.estimator.epoch
        # The boot time (ns) of the message the listeners are told of, unwrapped: theirs to
        # read instead of its ``time_boot_ms`` / ``time_usec``; ``None`` when it has none.
        self.boot_ns: int | None = None
        self._requested_ns: int | None = None
        self._received: dict[str, int] = {}
        self._window: dict[str, int] = {}
        self._window_ns = 0
        self.rates_hz: dict[str, float] = {}
        self.counts: dict[str, int] = dict.fromkeys(
            (
                "accepted",
                "foreign",
                "unbound",
                "conflicts",
                "rebinds",
                "future_stamp",
                "link_ups",
                "link_losses",
                "reboots",
                "stream_requests",
                "timesync_requests",
                "timesync_answered",
                "timesync_answered_unlocked",
                "timesync_unmatched",
                "timesync_replayed",
                "timesync_late",
                "timesync_invalid",
                "send_failures",
            ),
            0,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        now = self._scheduler.now_ns()
        self._window_ns = now
        self._every(self._heartbeat_ns, self._tick_heartbeat, now)
        self._every(self._timesync_ns, self._tick_timesync, now)

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._link_timer is not None:
            self._link_timer.cancel()
            self._link_timer = None
        self._up = False  # a restarted session tells the world UP again
        self._link.reset()

    def _every(self, period_ns: int, action: Callable[[int], None], first_ns: int) -> None:
        slot = len(self._timers)

        def fire(due_ns: int) -> None:
            now = self._scheduler.now_ns()
            action(now)
            following = max(due_ns + period_ns, now + 1)
            self._timers[slot] = self._scheduler.call_at_ns(following, lambda: fire(following))

        self._timers.append(self._scheduler.call_at_ns(first_ns, lambda: fire(first_ns)))

    # -- sending ---------------------------------------------------------------------------

    def send(self, data: bytes) -> bool:
        """Send ``data`` to the bound autopilot (on a ``udpin`` link, nowhere before one is
        bound: counted as a send failure)."""
        bound = self.binding.bound
        if self._send(data, None if bound is None else bound[2]):
            return True
        self.counts["send_failures"] += 1
        return False

    def _tick_heartbeat(self, now_ns: int) -> None:
        self.send(mc.heartbeat(self.codec, mc.TYPE_ONBOARD_CONTROLLER, mc.AUTOPILOT_INVALID))
        elapsed = now_ns - self._window_ns
        if elapsed >= _RATE_WINDOW_NS:
            self.rates_hz = {k: round(n * 1e9 / elapsed, 2) for k, n in self._window.items()}
            self._window = {}
            self._window_ns = now_ns
            if self._up and self._requested_ns is not None:
                silent = [i for i in self._streams if not self.rates_hz.get(_name(i), 0.0)]
                if silent and now_ns - self._requested_ns >= _REREQUEST_NS:
                    self._request_streams(now_ns, silent)

    def _tick_timesync(self, now_ns: int) -> None:
        if not self._up and self.binding.bound is not None:
            return  # a DOWN link's old address is asked nothing: its answers keep nothing
        ts1 = self.estimator.request(now_ns)
        self._requests.sent(ts1, now_ns)
        self.counts["timesync_requests"] += 1
        self.send(mc.timesync(self.codec, 0, ts1))

    def _request_streams(self, now_ns: int, streams: Sequence[int] | None = None) -> None:
        bound = self.binding.bound
        if bound is None or not self._up:
            return  # asked again when its link comes up
        self._requested_ns = now_ns
        for message_id in self._streams if streams is None else streams:
            self.counts["stream_requests"] += 1
            self.send(mc.set_message_interval(self.codec, *bound[:2], message_id, self._stream_hz))

    # -- receiving -------------------------------------------------------------------------

    def feed(self, data: bytes, host_ns: int, source: Source | None = None) -> None:
        """Bytes read at ``host_ns``: decode, filter, and act on every message in them.
        ``source``: the datagram's sender (each datagram is then framed alone), or ``None``
        for a byte stream (TCP, serial)."""
        codec = self.codec
        if source is None:
            messages = codec.decode(data, host_ns)
        else:
            messages = codec.decode_datagram(data, host_ns)
        for msg in messages:
            self._message(msg, host_ns, source)
        self._tell_conflict(host_ns)

    def _message(self, msg: Any, host_ns: int, source: Source | None) -> None:
        voice = (msg.get_srcSystem(), msg.get_srcComponent(), source)
        msg_id = msg.get_msgId()
        autopilot = int(msg.autopilot) if msg_id == mc.MSG_HEARTBEAT else None
        heard = self.binding.hear(voice, autopilot, host_ns)
        if heard is Heard.UNBOUND or heard is Heard.FOREIGN:
            self.counts[heard.value] += 1
            return
        if heard is Heard.CONFLICT:
            self.counts["conflicts"] += 1
            return
        if heard is Heard.REBOUND and self._up:
            # The old binding's link timeout was due (a rebinding waits that long) but its
            # timer has not run yet (a datagram handled before the timer in one loop turn):
            # the link goes DOWN now, so the new binding is told UP only once settled.
            if self._link_timer is not None:
                self._link_timer.cancel()
            self._lost()
        if heard is Heard.BOUND or heard is Heard.REBOUND:
            self._bound_ns = host_ns
        if heard is Heard.BOUND:
            LOGGER.info("mavlink: bound the autopilot, %s", describe(voice))
        elif heard is Heard.REBOUND:
            self.counts["rebinds"] += 1
            LOGGER.warning("mavlink: the autopilot now speaks %s", describe(voice))
            # Another autopilot, or one restarted on a new port: its clock is not the last
            # binding's.
            self.estimator.restart()
        boot_ns = None
        if msg_id not in (mc.MSG_TIMESYNC, mc.MSG_HEARTBEAT):
            boot_ns = self._boot_ns(msg, host_ns)
            if boot_ns is not None:
                now = self.estimator.to_autopilot_ns(host_ns)
                if now is not None and boot_ns > now + self._future_ns:
                    self.counts["future_stamp"] += 1  # never fed to a clock, never a pose
                    return
                self.estimator.boot_time(boot_ns, msg_id)
                if self.estimator.epoch != self._epoch:  # a reboot: unwrapped in the new one
                    boot_ns = self._boot_ns(msg, host_ns)
        self.boot_ns = boot_ns
        self.counts["accepted"] += 1
        name = msg.get_type()
        self._received[name] = self._received.get(name, 0) + 1
        self._window[name] = self._window.get(name, 0) + 1
        if msg_id == mc.MSG_HEARTBEAT:
            self._heartbeat(msg, host_ns)
        elif msg_id == mc.MSG_TIMESYNC:
            self._timesync(msg, host_ns)
        if self.estimator.epoch != self._epoch:
            self._epoch = self.estimator.epoch
            self.counts["reboots"] += 1
            self._request_streams(host_ns)
        for listener in self._listeners:
            listener(msg, host_ns)

    def _boot_ns(self, msg: Any, host_ns: int) -> int | None:
        """A message's time on the autopilot's boot clock, when it carries one: its
        ``time_boot_ms`` unwrapped (:meth:`TimesyncEstimator.boot_ms_ns`), or ODOMETRY's
        ``time_usec``."""
        ms = getattr(msg, "time_boot_ms", None)
        if ms is not None:
            return self.estimator.boot_ms_ns(int(ms), host_ns)
        us = getattr(msg, "time_usec", None)
        if us is not None and msg.get_msgId() == mc.MSG_ODOMETRY:
            return int(us) * 1000
        return None

    def _tell_conflict(self, host_ns: int) -> None:
        """Log a conflict's start and end; tell ``on_conflict`` while it lasts (rate-capped)."""
        binding = self.binding
        conflict = binding.in_conflict(host_ns)
        if conflict != self._in_conflict:
            self._in_conflict = conflict
            if conflict:
                LOGGER.warning("mavlink: conflict: %s", binding.last_conflict)
            else:
                LOGGER.warning("mavlink: conflict over: no second voice for the quiet period")
        if not conflict or self._on_conflict is None:
            return
        told = self._conflict_told_ns
        if told is None or host_ns - told >= CONFLICT_TELL_NS or host_ns < told:
            self._conflict_told_ns = host_ns
            self._on_conflict(host_ns, binding.last_conflict or "a second voice")

    def _heartbeat(self, msg: Any, host_ns: int) -> None:
        self._last_heartbeat_ns = host_ns
        self._autopilot = (int(msg.type), int(msg.autopilot))
        if self._link_timer is not None:
            self._link_timer.cancel()
        self._link_timer = self._scheduler.call_at_ns(host_ns + self._timeout_ns, self._lost)
        if not self._up:
            self._up = True
            self.counts["link_ups"] += 1
            self._request_streams(host_ns)
            self._link.up(host_ns, self._bound_ns)

    def _lost(self) -> None:
        self._link_timer = None
        if self._up:
            self._up = False
            self.counts["link_losses"] += 1
            reason = f"no heartbeat for {self._timeout_ns / 1e9:g} s"
            self._link.down(self._scheduler.now_ns(), reason)

    def _timesync(self, msg: Any, host_ns: int) -> None:
        tc1, ts1 = int(msg.tc1), int(msg.ts1)
        if tc1 < 0 or ts1 <= 0:
            self.counts["timesync_invalid"] += 1
            return
        if tc1 == 0:
            self._answer(ts1, host_ns)
            return
        rtt = self._requests.answer(ts1, host_ns)
        if isinstance(rtt, str):
            self.counts[f"timesync_{rtt}"] += 1
            return
        self.estimator.answer(tc1, ts1, host_ns)  # its round-trip gate is the one

    def _answer(self, ts1: int, host_ns: int) -> None:
        """Answer the autopilot's own request: in its clock once locked, else with its own
        request time (docs/mavlink.md: the MAVSDK deadlock)."""
        now = self.estimator.autopilot_now_ns(host_ns)
        if now is None or not 0 < now <= _INT64_MAX:
            now = ts1
            self.counts["timesync_answered_unlocked"] += 1
        else:
            self.counts["timesync_answered"] += 1
        self.send(mc.timesync(self.codec, now, ts1))

    # -- state -----------------------------------------------------------------------------

    @property
    def link_up(self) -> bool:
        return self._up

    @property
    def locked(self) -> bool:
        return self.estimator.status is ClockStatus.LOCKED

    def stats(self, now_ns: int) -> dict[str, Any]:
        ts = self.estimator.stats()
        hb = self._last_heartbeat_ns
        bound = self.binding.bound
        return {
            "link": "UP" if self._up else "DOWN",
            "autopilot": None if bound is None else list(bound[:2]),
            "autopilot_address": None if bound is None or bound[2] is None else list(bound[2]),
            "conflict": self.binding.in_conflict(now_ns),
            "last_conflict": self.binding.last_conflict,
            "autopilot_type": None if self._autopilot is None else list(self._autopilot),
            "heartbeat_age_ms": None if hb is None else round((now_ns - hb) / 1e6, 1),
            "rates_hz": dict(self.rates_hz),
            "received": dict(self._received),
            "timesync": {
                "status": self.estimator.status_at(now_ns).value,
                "epoch": ts.epoch,
                "offset_ms": None if ts.offset_ns is None else round(ts.offset_ns / 1e6, 3),
                "rtt_ms": None if ts.rtt_ns is None else round(ts.rtt_ns / 1e6, 3),
                "min_rtt_ms": None if ts.min_rtt_ns is None else round(ts.min_rtt_ns / 1e6, 3),
                "skew_ppm": None if ts.skew_ppm is None else round(ts.skew_ppm, 2),
                "samples": ts.samples,
                "accepted": ts.accepted,
                "rejected_rtt": ts.rejected_rtt,
                "rtt_gate_ms": round(ts.rtt_gate_ns / 1e6, 3),
                "outliers": ts.outliers,
                "reboots": ts.reboots,
            },
            "counts": dict(self.counts),
            "codec": self.codec.stats(),
        }


def _name(message_id: int) -> str:
    return mc.message_name(message_id)
