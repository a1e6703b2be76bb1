"""The stand-in's sans-I/O core: what to send, where and when, and the answers to requests.

:class:`StandIn` is driven from outside with host time ``t_ns`` (nanoseconds since scenario
time 0): :meth:`StandIn.poll` returns the datagrams and ground-truth records due by then,
:meth:`StandIn.next_due_ns` says when to call it next, and :meth:`StandIn.receive` takes what
arrives on a vehicle's CopterSim control port. It never reads a clock or touches a socket, so
a test steps it through any timeline and the runner (:mod:`gizmo_host.rigs.rflysim.sim_runner`)
paces it by the real clock.

Streams are periodic at their rates. A poll emits each due stream once, stamped with the
poll's time; a stream more than a period late skips the missed samples (counted) instead of
bursting to catch up. Odometry and IMU answer ``SensorReqCopterSim`` the way CopterSim does:
they stream at the request's rate to its IP and port, and a request naming a loopback address
(the SDK's default) is answered to the address it came from. A repeated request (same vehicle,
sensor and reply address) changes the rate; at most ``max_subscriptions`` run at once.

``mirror_offset`` (0: off) sends every vehicle state a second time, to its port plus the offset
(kind ``state_mirror``): a program that needs the states beside the host, which binds the
ego's state port, listens there (``gizmo-host emulate --port-offset N`` for its pose source).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from gizmo_host.rigs.rflysim import builders, sensorset
from gizmo_host.rigs.rflysim.scenario import SimScenario, Truth
from hil_geometry.pinhole import Pinhole
from rfly_link import dispatch, ports
from rfly_link import messages as m
from rfly_link.config_json import LoadedConfig, VisionSensorConfig
from rfly_link.errors import DecodeError
from rfly_link.messages import TypeId

Address = tuple[str, int]
MAX_REQUEST_HZ = 1000  # SensorReqCopterSim.update_freq: 1..1000 Hz


class Datagram(NamedTuple):
    # state, other_state, state_mirror, heartbeat, gimbal, distance, boxes, lidar, odometry, imu
    kind: str
    address: Address
    data: bytes


class PollResult(NamedTuple):
    """What :meth:`StandIn.poll` has to send now, and the truth it was built from."""

    datagrams: list[Datagram]
    truths: list[Truth]


@dataclass(frozen=True, slots=True)
class Rates:
    """Stream rates in Hz; 0 turns a stream off. ``None`` for a sensor: its DataCheckFreq."""

    state_hz: float = 100.0  # the ego's CopterSim state
    others_hz: float = 100.0  # the other vehicles' states
    heartbeat_hz: float = 1.0
    gimbal_hz: float = 10.0
    truth_hz: float = 10.0
    distance_hz: float | None = None
    boxes_hz: float | None = None
    lidar_hz: float | None = None

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if value is not None and not (value == 0 or 0.01 <= value <= MAX_REQUEST_HZ):
                raise ValueError(f"{name}: expected 0 (off) or 0.01..{MAX_REQUEST_HZ}, got {value}")


def period_ns(rate_hz: float) -> int:
    return max(1, round(1e9 / rate_hz))


@dataclass(slots=True)
class _Stream:
    kind: str
    period_ns: int
    next_ns: int
    emit: Callable[[Truth, int], list[Datagram]]  # (truth, t_ns) -> datagrams


@dataclass(slots=True)
class _Subscription:
    copter_id: int
    sensor: m.CopterSimSensor
    address: Address
    period_ns: int
    next_ns: int
    sequence: int = 0
    epoch: int = 0


class StandInStats(NamedTuple):
    sent: dict[str, int]  # datagrams by kind
    skipped: dict[str, int]  # samples a late poll skipped, by kind
    requests: int  # SensorReqCopterSim accepted
    subscriptions: int  # replies streaming now
    drops: dict[str, int]  # what arrived and was not used, by cause


class StandIn:
    """RflySim's side of the wire for one :class:`SimScenario`: CopterSim and RflySim3D."""

    def __init__(
        self,
        scenario: SimScenario,
        *,
        host: str = "127.0.0.1",
        config: LoadedConfig | None = None,
        rates: Rates = Rates(),
        camera: Pinhole | None = None,
        max_subscriptions: int = 16,
        mirror_offset: int = 0,
    ) -> None:
        self.scenario = scenario
        self.host = host
        self.rates = rates
        self.camera = camera
        self.max_subscriptions = max_subscriptions
        self.mirror_offset = mirror_offset
        for vehicle in scenario.vehicles:
            mirrored = ports.coptersim_state_port(vehicle.copter_id) + mirror_offset
            if mirror_offset and not 1 <= mirrored <= 65535:
                raise ValueError(
                    f"mirror_offset: expected state ports + offset within 1..65535, got "
                    f"{mirrored} for CopterID {vehicle.copter_id}"
                )
        ego_id = scenario.ego.copter_id
        self.sensors = sensorset.select_sensors(
            config or sensorset.builtin_config(host, ego_id), ego_id
        )
        self._streams: list[_Stream] = []
        self._subscriptions: dict[tuple[int, int, Address], _Subscription] = {}
        self._sent: Counter[str] = Counter()
        self._skipped: Counter[str] = Counter()
        self._drops: Counter[str] = Counter()
        self._requests = 0
        self._truth_period_ns = period_ns(rates.truth_hz) if rates.truth_hz else 0
        self._next_truth_ns = 0
        self._wall_start_ms: int | None = None
        self._wall_ms = 0
        self._frames: Counter[int] = Counter()  # frame_id per sensor SeqID
        self._heartbeats: Counter[int] = Counter()
        self._build_streams()

    # -- what the stand-in sends -------------------------------------------------------------

    def control_ports(self) -> dict[int, int]:
        """Each vehicle's CopterSim control port (where requests arrive) -> its CopterID."""
        return {
            ports.coptersim_control_port(v.copter_id): v.copter_id for v in self.scenario.vehicles
        }

    def _add(self, kind: str, rate_hz: float, emit: Callable[[Truth, int], list[Datagram]]) -> None:
        if rate_hz > 0:
            self._streams.append(_Stream(kind, period_ns(rate_hz), 0, emit))

    def _build_streams(self) -> None:
        r = self.rates
        for vehicle in self.scenario.vehicles:
            ego = vehicle is self.scenario.ego
            self._add(
                "state" if ego else "other_state",
                r.state_hz if ego else r.others_hz,
                self._state_emitter(vehicle.copter_id, vehicle.vehicle_type),
            )
            self._add("heartbeat", r.heartbeat_hz, self._heartbeat_emitter(vehicle.copter_id))
        overrides = {
            TypeId.DISTANCE: r.distance_hz,
            TypeId.BOX_TARGETS: r.boxes_hz,
            TypeId.LIDAR_BODY: r.lidar_hz,
            TypeId.LIDAR_WORLD: r.lidar_hz,
        }
        for sensor in self.sensors.simulated:
            if sensor.type_id == TypeId.GIMBAL:
                self._add("gimbal", r.gimbal_hz, self._gimbal_emitter(sensor))
                continue
            rate = overrides[TypeId(sensor.type_id)]
            self._add(
                _SENSOR_KIND[sensor.type_id],
                sensorset.rate_hz(sensor) if rate is None else rate,
                self._sensor_emitter(sensor),
            )

    def _state_emitter(
        self, copter_id: int, vehicle_type: int
    ) -> Callable[[Truth, int], list[Datagram]]:
        address = (self.host, ports.coptersim_state_port(copter_id))
        kind = "state" if copter_id == self.scenario.ego.copter_id else "other_state"

        mirror = (self.host, address[1] + self.mirror_offset) if self.mirror_offset else None

        def emit(truth: Truth, t_ns: int) -> list[Datagram]:
            state = truth.ego if copter_id == truth.ego.copter_id else truth.target(copter_id)
            data = builders.state_168(copter_id, vehicle_type, state.state, truth.sim_time_s)
            encoded = data.encode()
            out = [Datagram(kind, address, encoded)]
            if mirror is not None:
                out.append(Datagram("state_mirror", mirror, encoded))
            return out

        return emit

    def _heartbeat_emitter(self, copter_id: int) -> Callable[[Truth, int], list[Datagram]]:
        address = (self.host, ports.TIME_STAMP_PORT)

        def emit(truth: Truth, t_ns: int) -> list[Datagram]:
            if self._wall_start_ms is None:
                self._wall_start_ms = self._wall_ms - t_ns // 1_000_000
            count = self._heartbeats[copter_id]
            self._heartbeats[copter_id] += 1
            msg = builders.heartbeat(copter_id, self._wall_start_ms, self._wall_ms, count)
            return [Datagram("heartbeat", address, msg.encode())]

        return emit

    def _gimbal_emitter(self, sensor: VisionSensorConfig) -> Callable[[Truth, int], list[Datagram]]:
        camera = sensorset.sensor_camera(sensor)
        address = (self.host, ports.RFLYSIM3D_OUT_PORT)
        ground = self.scenario.ground_down_m

        def emit(truth: Truth, t_ns: int) -> list[Datagram]:
            bodies = self.scenario.placed(truth)
            hit = builders.laser_hit(sensor, truth.ego.state, bodies, ground, 1e4)
            msg = builders.gimbal_status(sensor, camera, 0.0 if hit is None else hit.distance_m)
            return [Datagram("gimbal", address, msg.encode())]

        return emit

    def _sensor_emitter(self, sensor: VisionSensorConfig) -> Callable[[Truth, int], list[Datagram]]:
        kind = _SENSOR_KIND[sensor.type_id]
        address = (sensor.receiver_ip, sensor.port)
        camera = sensorset.sensor_camera(sensor) if sensor.type_id == TypeId.BOX_TARGETS else None
        ground = self.scenario.ground_down_m

        def emit(truth: Truth, t_ns: int) -> list[Datagram]:
            bodies = self.scenario.placed(truth)
            ego = truth.ego.state
            if camera is not None:
                payload = builders.boxes_payload(sensor, camera, ego, bodies)
            elif sensor.type_id == TypeId.DISTANCE:
                payload = builders.distance_payload(sensor, ego, bodies, ground)
            else:
                payload = builders.lidar_payload(sensor, ego, bodies, ground)
            frame = self._frames[sensor.seq_id]
            self._frames[sensor.seq_id] += 1
            fragments = builders.sensor_datagrams(sensor, payload, frame, truth.sim_time_s)
            return [Datagram(kind, address, data) for data in fragments]

        return emit

    # -- pacing ------------------------------------------------------------------------------

    def next_due_ns(self) -> int:
        """When the next poll has something to do (streams, replies or truth)."""
        due = [s.next_ns for s in self._streams]
        due += [s.next_ns for s in self._subscriptions.values()]
        if self._truth_period_ns:
            due.append(self._next_truth_ns)
        return min(due, default=2**63 - 1)

    def _advance(self, next_ns: int, step_ns: int, t_ns: int, kind: str) -> int:
        """The stream's next time after emitting at ``t_ns``; missed samples are skipped."""
        next_ns += step_ns
        if next_ns <= t_ns:
            missed = (t_ns - next_ns) // step_ns + 1
            self._skipped[kind] += missed
            next_ns += missed * step_ns
        return next_ns

    def poll(self, t_ns: int, wall_ms: int = 0) -> PollResult:
        """Everything due by ``t_ns`` (scenario time, ns), built from the truth at ``t_ns``.

        ``wall_ms`` is the wall clock in Unix milliseconds, for CopterSim's heartbeat.
        """
        self._wall_ms = wall_ms
        due = [s for s in self._streams if s.next_ns <= t_ns]
        replies = [s for s in self._subscriptions.values() if s.next_ns <= t_ns]
        want_truth = bool(self._truth_period_ns) and self._next_truth_ns <= t_ns
        if not (due or replies or want_truth):
            return PollResult([], [])
        truth = self.scenario.truth(t_ns / 1e9, self.camera)
        out: list[Datagram] = []
        for stream in due:
            out += stream.emit(truth, t_ns)
            stream.next_ns = self._advance(stream.next_ns, stream.period_ns, t_ns, stream.kind)
        for sub in replies:
            out.append(self._reply(sub, truth))
            sub.next_ns = self._advance(sub.next_ns, sub.period_ns, t_ns, _REPLY_KIND[sub.sensor])
        truths = []
        if want_truth:
            truths.append(truth)
            self._next_truth_ns = self._advance(
                self._next_truth_ns, self._truth_period_ns, t_ns, "truth"
            )
        for datagram in out:
            self._sent[datagram.kind] += 1
        return PollResult(out, truths)

    def _reply(self, sub: _Subscription, truth: Truth) -> Datagram:
        state = (
            truth.ego if sub.copter_id == truth.ego.copter_id else truth.target(sub.copter_id)
        ).state
        if sub.sensor == m.CopterSimSensor.IMU:
            msg: m.WireMessage = builders.imu(sub.sequence, state, truth.sim_time_s)
        else:
            jumped = truth.epoch != sub.epoch
            msg = builders.odometry(
                sub.sequence, sub.copter_id, state, truth.sim_time_s, discontinuity=jumped
            )
        sub.epoch = truth.epoch
        sub.sequence += 1
        return Datagram(_REPLY_KIND[sub.sensor], sub.address, msg.encode())

    # -- requests ----------------------------------------------------------------------------

    def receive(self, data: bytes, sender: Address, port: int, t_ns: int) -> None:
        """A datagram that arrived on ``port`` (a vehicle's CopterSim control port) at ``t_ns``."""
        copter_id = self.control_ports().get(port)
        if copter_id is None:
            self._drops["not_a_control_port"] += 1
            return
        try:
            message = dispatch.decode(data, port=port)
        except DecodeError as exc:
            self._drops[exc.cause.value] += 1
            return
        if not isinstance(message, m.SensorReqCopterSim):
            self._drops[f"ignored_{type(message).__name__}"] += 1
            return
        try:
            sensor = m.CopterSimSensor(message.sensor_type)
        except ValueError:
            self._drops["unknown_sensor_type"] += 1
            return
        if not 1 <= message.update_freq_hz <= MAX_REQUEST_HZ:
            self._drops["bad_rate"] += 1
            return
        ip = message.reply_ip
        if ip.startswith("127.") or ip == "0.0.0.0":  # the SDK's default: answer the sender
            ip = sender[0]
        address = (ip, message.port or ports.coptersim_reply_port(copter_id))
        key = (copter_id, int(sensor), address)
        period = period_ns(message.update_freq_hz)
        existing = self._subscriptions.get(key)
        if existing is not None:
            existing.period_ns = period
        elif len(self._subscriptions) >= self.max_subscriptions:
            self._drops["subscriptions_full"] += 1
            return
        else:
            epoch = self.scenario.time.epoch(t_ns / 1e9)
            self._subscriptions[key] = _Subscription(
                copter_id, sensor, address, period, t_ns, epoch=epoch
            )
        self._requests += 1

    @property
    def stats(self) -> StandInStats:
        return StandInStats(
            dict(self._sent),
            dict(self._skipped),
            self._requests,
            len(self._subscriptions),
            dict(self._drops),
        )


_SENSOR_KIND: dict[int, str] = {
    TypeId.DISTANCE: "distance",
    TypeId.BOX_TARGETS: "boxes",
    TypeId.LIDAR_BODY: "lidar",
    TypeId.LIDAR_WORLD: "lidar",
}
_REPLY_KIND = {m.CopterSimSensor.IMU: "imu", m.CopterSimSensor.ODOMETRY: "odometry"}
