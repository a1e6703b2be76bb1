"""A stand-in autopilot for tests and the demo: PX4's MAVLink behaviour on a skewed clock.

It has its own boot clock (``boot_ns = boot_at_start + (host - start)·(1 + skew)``), sends
HEARTBEAT at 1 Hz and ATTITUDE_QUATERNION, LOCAL_POSITION_NED and ODOMETRY at the rates
MAV_CMD_SET_MESSAGE_INTERVAL asks for (none until asked, as after a boot), sampled from
``vehicle(host_ns)`` at the exact instant its ``time_boot_ms`` names (a uint32 that wraps
after 49.7 days, as PX4's does, while TIMESYNC's clock and ODOMETRY's go on). It answers TIMESYNC
with its boot time in ns, sends its own requests at ``timesync_hz`` and keeps PX4's offset
estimate of the companion (local minus remote, round trips under 10 ms, exponential filter),
so a test can check the companion answers in the autopilot's clock: the offset stays ~0.
LANDING_TARGET messages are kept with their arrival time (and given to ``on_landing_target``:
the precland vehicle, :mod:`gizmo_host.rigs.autopilot.landing_vehicle`). ``lag_ms = (lo, hi)``
delays every telemetry message by a uniform lag (order kept), as an autopilot's output queue and a
serial link do; TIMESYNC traffic has its own ``timesync_delay_ms`` (a round-trip spike), or the same
lag with ``lag_timesync``, which also delays what the stand-in receives (a slow serial or
radio link, both ways: every round trip well over 10 ms).
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from fusion.geometry import Quat, Vec3, quat_rotate_inverse
from gizmo_host.mavlink import codec as mc
from gizmo_host.mavlink.signing import Signer
from gizmo_host.mavlink.transport import MavlinkTransport
from gizmo_host.mavlink.urls import Endpoint, parse_url
from gizmo_host.rigs.rflysim.scenario import SimScenario
from gizmo_host.timing import LoopScheduler, Scheduler, Timer

_PX4_MAX_RTT_NS = 10_000_000
_PX4_ALPHA = 0.05
_MAX_KEPT = 100_000
_BOOT_MS_WRAP = 2**32  # ``time_boot_ms`` is a uint32 of milliseconds


class VehicleTruth(NamedTuple):
    position_ned_m: Vec3
    velocity_ned_m_s: Vec3
    quaternion_wxyz: Quat  # FRD body in NED


class BootClock(NamedTuple):
    """The autopilot's clock: ``boot_ns`` at ``start_host_ns``, running ``1 + skew``."""

    start_host_ns: int
    boot_at_start_ns: int
    skew_ppm: float

    def boot_ns(self, host_ns: int) -> int:
        rate = 1.0 + self.skew_ppm * 1e-6
        return self.boot_at_start_ns + round((host_ns - self.start_host_ns) * rate)

    def host_ns(self, boot_ns: int) -> int:
        rate = 1.0 + self.skew_ppm * 1e-6
        return self.start_host_ns + round((boot_ns - self.boot_at_start_ns) / rate)


class ReceivedTarget(NamedTuple):
    host_ns: int
    boot_ns: int
    fields: dict[str, Any]


class StandinAutopilot:
    """The autopilot side of a MAVLink link (see the module docstring)."""

    def __init__(
        self,
        endpoint: Endpoint | str | None,
        vehicle: Callable[[int], VehicleTruth],
        *,
        send: Callable[[bytes], bool] | None = None,
        scheduler: Scheduler | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
        system_id: int = 1,
        component_id: int = 1,
        boot_at_start_ms: float = 5_000.0,
        skew_ppm: float = 0.0,
        lag_ms: tuple[float, float] | None = None,
        timesync_delay_ms: float = 0.0,
        timesync_hz: float = 10.0,
        seed: int = 0,
        on_landing_target: Callable[[ReceivedTarget], None] | None = None,
        lag_timesync: bool = False,
        signer: Signer | None = None,
    ) -> None:
        if (endpoint is None) == (send is None):
            raise ValueError("StandinAutopilot: expected an endpoint or a send function")
        self._vehicle = vehicle
        self._on_landing_target = on_landing_target
        self._clock = clock
        self._scheduler = scheduler or LoopScheduler(clock)
        self.codec = mc.Codec(system_id, component_id, signer=signer)
        self.transport: MavlinkTransport | None = None
        self._peer: tuple[str, int] | None = None  # who spoke to it last (PX4 answers them)
        if endpoint is not None:
            url = endpoint if isinstance(endpoint, Endpoint) else parse_url(endpoint)
            transport = self.transport = MavlinkTransport(url, self.feed, clock=clock)

            def send(data: bytes) -> bool:
                return transport.send(data, self._peer)

        assert send is not None
        self._out = send
        self.clock = BootClock(clock(), round(boot_at_start_ms * 1e6), skew_ppm)
        self._lag = lag_ms
        self._lag_timesync = lag_timesync
        self.timesync_delay_ns = round(timesync_delay_ms * 1e6)
        self._timesync_ns = round(1e9 / timesync_hz)
        self._random = random.Random(seed)
        self._last_due_ns = 0
        self._last_in_ns = 0
        self._timers: dict[int, Timer] = {}
        self.rates_hz: dict[int, float] = {}
        self.landing_targets: deque[ReceivedTarget] = deque(maxlen=_MAX_KEPT)
        self.px4_offset_ns: float | None = None
        self.px4_samples = 0
        self.heard_heartbeat = False
        self.counts: dict[str, int] = dict.fromkeys(
            ("sent", "timesync_answered", "interval_commands", "timesync_requests"), 0
        )

    async def run(self) -> None:
        """Serve the endpoint until cancelled."""
        if self.transport is None:
            raise ValueError("StandinAutopilot.run: no endpoint (feed() it and start() it)")
        self.start()
        try:
            await self.transport.run()
        finally:
            self.stop()

    def start(self) -> None:
        """Start the heartbeat and TIMESYNC timers (``run`` does it)."""
        now = self._clock()
        self._every(-1, 1e9, now, self._heartbeat)
        self._every(-2, self._timesync_ns, now, self._request_timesync)

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def boot_ns(self, host_ns: int) -> int:
        return self.clock.boot_ns(host_ns)

    def reboot(self, boot_at_start_ms: float = 1_000.0) -> None:
        """Boot again: the clock restarts and every requested stream stops."""
        self.clock = BootClock(self._clock(), round(boot_at_start_ms * 1e6), self.clock.skew_ppm)
        for message_id in list(self.rates_hz):
            self._set_rate(message_id, 0.0)
        self.px4_offset_ns = None
        self.px4_samples = 0

    # -- timers ----------------------------------------------------------------------------

    def _every(self, key: int, period_ns: float, first_ns: int, action: Callable[[], None]) -> None:
        step = max(1, round(period_ns))

        def fire(due_ns: int) -> None:
            action()
            following = max(due_ns + step, self._clock())
            self._timers[key] = self._scheduler.call_at_ns(following, lambda: fire(following))

        self._timers[key] = self._scheduler.call_at_ns(first_ns, lambda: fire(first_ns))

    def _set_rate(self, message_id: int, rate_hz: float) -> None:
        timer = self._timers.pop(message_id, None)
        if timer is not None:
            timer.cancel()
        self.rates_hz.pop(message_id, None)
        if rate_hz > 0:
            self.rates_hz[message_id] = rate_hz
            self._every(message_id, 1e9 / rate_hz, self._clock(), lambda: self._stream(message_id))

    def _send(self, data: bytes, *, telemetry: bool = True) -> None:
        self.counts["sent"] += 1
        now = self._clock()

        def deliver() -> None:
            self._out(data)

        if (telemetry or self._lag_timesync) and self._lag is not None:
            lag_ns = round(self._random.uniform(*self._lag) * 1e6)
            due = self._last_due_ns = max(self._last_due_ns, now + lag_ns)
            self._scheduler.call_at_ns(due, deliver)
        elif not telemetry and self.timesync_delay_ns > 0:
            self._scheduler.call_at_ns(now + self.timesync_delay_ns, deliver)
        else:
            deliver()

    # -- outgoing --------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        mav = self.codec.mav
        msg = mav.heartbeat_encode(mc.TYPE_QUADROTOR, mc.AUTOPILOT_PX4, 0, 0, mc.STATE_ACTIVE)
        self._send(self.codec.encode(msg))

    def _request_timesync(self) -> None:
        self.counts["timesync_requests"] += 1
        ts1 = self.boot_ns(self._clock())
        self._send(mc.timesync(self.codec, 0, ts1), telemetry=False)

    def _stream(self, message_id: int) -> None:
        boot = self.boot_ns(self._clock())
        mav = self.codec.mav
        if message_id == mc.MSG_ODOMETRY:
            boot_us = boot // 1000
            truth = self._vehicle(self.clock.host_ns(boot_us * 1000))
            p, v, q = truth
            vb = quat_rotate_inverse(q, v)
            nan = float("nan")
            msg = mav.odometry_encode(
                boot_us, mc.FRAME_LOCAL_NED, mc.FRAME_BODY_FRD, *p, q, *vb,
                0.0, 0.0, 0.0, [nan] * 21, [nan] * 21,
            )  # fmt: skip
        else:
            boot_ms = boot // 1_000_000
            truth = self._vehicle(self.clock.host_ns(boot_ms * 1_000_000))
            boot_ms %= _BOOT_MS_WRAP  # a uint32: it wraps after 49.7 days, as PX4's does
            p, v, q = truth
            if message_id == mc.MSG_ATTITUDE_QUATERNION:
                msg = mav.attitude_quaternion_encode(boot_ms, *q, 0.0, 0.0, 0.0, [0.0] * 4)
            elif message_id == mc.MSG_LOCAL_POSITION_NED:
                msg = mav.local_position_ned_encode(boot_ms, *p, *v)
            else:
                return
        self._send(self.codec.encode(msg))

    # -- incoming --------------------------------------------------------------------------

    def feed(self, data: bytes, host_ns: int, source: tuple[str, int] | None = None) -> None:
        """Bytes from the companion, read at ``host_ns`` (with ``lag_timesync``, handled after
        the same lag as what it sends: a slow link is slow both ways); a listening stand-in
        answers whoever spoke last (``source``), as PX4 does."""
        if source is not None:
            self._peer = source
        if self._lag_timesync and self._lag is not None:
            lag_ns = round(self._random.uniform(*self._lag) * 1e6)
            due = self._last_in_ns = max(self._last_in_ns, host_ns + lag_ns)
            self._scheduler.call_at_ns(due, lambda: self._handle(data, due))
            return
        self._handle(data, host_ns)

    def _handle(self, data: bytes, host_ns: int) -> None:
        for msg in self.codec.decode(data):
            msg_id = msg.get_msgId()
            if msg_id == mc.MSG_HEARTBEAT:
                self.heard_heartbeat = True
            elif msg_id == mc.MSG_TIMESYNC:
                self._timesync(msg, host_ns)
            elif msg_id == mc.MSG_COMMAND_LONG:
                self._command(msg)
            elif msg_id == mc.MSG_LANDING_TARGET:
                fields = {k: getattr(msg, k) for k in msg.get_fieldnames()}
                target = ReceivedTarget(host_ns, self.boot_ns(host_ns), fields)
                self.landing_targets.append(target)
                if self._on_landing_target is not None:
                    self._on_landing_target(target)

    def _timesync(self, msg: Any, host_ns: int) -> None:
        now_boot = self.boot_ns(host_ns)
        if msg.tc1 == 0:
            self.counts["timesync_answered"] += 1
            self._send(mc.timesync(self.codec, now_boot, int(msg.ts1)), telemetry=False)
            return
        rtt = now_boot - int(msg.ts1)
        if not 0 <= rtt < _PX4_MAX_RTT_NS:
            return
        sample = (int(msg.ts1) + now_boot) / 2 - int(msg.tc1)  # local minus remote
        self.px4_samples += 1
        previous = self.px4_offset_ns
        self.px4_offset_ns = (
            sample if previous is None else previous + _PX4_ALPHA * (sample - previous)
        )

    def _command(self, msg: Any) -> None:
        if msg.command != mc.CMD_SET_MESSAGE_INTERVAL:
            return
        self.counts["interval_commands"] += 1
        message_id, interval_us = int(msg.param1), float(msg.param2)
        rate = 0.0 if interval_us < 0 else 50.0 if interval_us == 0 else 1e6 / interval_us
        self._set_rate(message_id, rate)
        ack = self.codec.mav.command_ack_encode(msg.command, 0)
        self._send(self.codec.encode(ack))


def scenario_vehicle(
    scenario: SimScenario, start_ns: Callable[[], int]
) -> Callable[[int], VehicleTruth]:
    """The ego of an RflySim stand-in's scenario as the autopilot's vehicle: host time ``h`` is
    scenario time ``(h - start_ns()) / 1e9`` (``SimRunner.start_ns``), so CopterSim's state and
    the autopilot's telemetry describe one flight."""

    def vehicle(host_ns: int) -> VehicleTruth:
        t_s = max(0.0, (host_ns - start_ns()) / 1e9)
        state = scenario.state(scenario.ego.copter_id, t_s)
        return VehicleTruth(state.position_ned_m, state.velocity_ned_m_s, state.quaternion_wxyz)

    return vehicle
