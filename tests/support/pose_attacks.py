"""The pose attack rig for gizmo-host run: a pty board on the host clock, CopterSim state and
odometry senders (honest, spoofed, jumping, late, reordered) and a judge of world lines against
truth computed here (no fusion code).
"""

from __future__ import annotations

import asyncio
import math
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from gizmo_host.rigs.board import PtyBoard
from rfly_link import messages as m
from rfly_link import ports
from tests.support.coptersim import free_copter_id
from tests.support.run_process import (
    Run,
    spawn_run,
)
from tests.support.world_attacks import (
    ACCURACY_MS,
    LOCK_TOML,
    ODOM_VALID,
    POSE_PERIOD_S,
    SELECT,
    SPEED_M_S,
    TTL_MS,
    Board,
    Truth,
    proceeds,
    run_world,
    selected,
    stop,
)

POSITION_TOL_M = 0.5


BEARING_TOL_DEG = 2.0


CAMERA_BELOW_DEG = 45.0


STEP_MARGIN_NS = 15_000_000  # a step between two pose samples: either side is the truth


RECOVER_S = 1.5  # issue 17: PROCEED back within ~1.5 s of the stream being good again


SPOOF_OFFSET_M = (0.0, 30.0, 0.0)  # the spoofer's vehicle: 30 m east, yaw +90 degrees


SPOOF_YAW_RAD = math.pi / 2


@dataclass
class Flight(Truth):
    """The truth: ``Truth``'s northward flight, plus steps ``(host_ns, d_north_m, d_east_m,
    d_yaw_rad)`` from their host time on."""

    steps: list[tuple[int, float, float, float]] = field(default_factory=list)

    def pose(self, host_ns: int) -> tuple[tuple[float, float, float], float]:
        north, east, down = super().position(host_ns)
        yaw = 0.0
        for at_ns, d_north, d_east, d_yaw in self.steps:
            if at_ns <= host_ns:
                north, east, yaw = north + d_north, east + d_east, yaw + d_yaw
        return (north, east, down), yaw

    def position(self, host_ns: int) -> tuple[float, float, float]:
        return self.pose(host_ns)[0]

    def sim_time_s(self, host_ns: int) -> float:
        return 1000.0 + (host_ns - self.t0_ns) / 1e9


def target_truth(position, yaw_rad: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The target's NED position and the unit bearing to it from ``position`` at ``yaw_rad``."""
    north, east, down = position
    below = math.radians(CAMERA_BELOW_DEG)
    ahead_m = -down / math.tan(below)
    spot = (north + ahead_m * math.cos(yaw_rad), east + ahead_m * math.sin(yaw_rad), 0.0)
    c = math.cos(below)
    return spot, (c * math.cos(yaw_rad), c * math.sin(yaw_rad), math.sin(below))


def angle_deg(a, b) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    return math.degrees(math.acos(max(-1.0, min(1.0, dot / norm))))


@dataclass
class Figures:
    world: int = 0
    proceed: int = 0
    wrong: list[str] = field(default_factory=list)  # one entry per wrong PROCEED line
    max_error_m: float = 0.0
    max_bearing_deg: float = 0.0

    @property
    def availability(self) -> float:
        return self.proceed / self.world if self.world else 0.0

    def __str__(self) -> str:
        return (
            f"world={self.world} proceed={self.proceed} wrong={len(self.wrong)} "
            f"max_error_m={self.max_error_m:.2f} max_bearing_deg={self.max_bearing_deg:.1f} "
            f"availability={self.availability:.0%}"
        )


def judge(
    messages: list[dict], flight: Flight, since_ns: int = 0, until_ns: int | None = None
) -> Figures:
    """Every world line between ``since_ns`` and ``until_ns`` counted; every PROCEED judged."""
    until = math.inf if until_ns is None else until_ns
    figures = Figures()
    for line in run_world(messages):
        if not since_ns <= line["host_ns"] <= until:
            continue
        figures.world += 1
        if line["verdict"] != "PROCEED":
            continue
        figures.proceed += 1
        why = judge_line(line, flight, figures)
        if why:
            figures.wrong.append(f"world {line['seq']}: " + "; ".join(why))
    return figures


def judge_line(line: dict, flight: Flight, figures: Figures) -> list[str]:
    """What is wrong with one PROCEED line (its errors also raise the figures' maxima)."""
    why: list[str] = []
    target = selected(line)
    capture = min(flight.captures_ns, key=lambda c: abs(c - target["capture_ns"]), default=0)
    if abs(capture - target["capture_ns"]) > ACCURACY_MS * 1e6:
        return ["capture matches no frame"]
    age_ms = (line["host_ns"] - capture) / 1e6
    if age_ms > TTL_MS + ACCURACY_MS:
        why.append(f"target truly {age_ms:.1f} ms old")
    truths = [target_truth(*flight.pose(capture + d)) for d in (-STEP_MARGIN_NS, 0, STEP_MARGIN_NS)]
    if target["position_ned_m"] is not None:
        error_m = min(math.dist(target["position_ned_m"], spot) for spot, _ in truths)
        figures.max_error_m = max(figures.max_error_m, error_m)
        if error_m > POSITION_TOL_M:
            why.append(f"position {error_m:.2f} m off")
    if target["bearing_ned"] is not None:
        off_deg = min(angle_deg(target["bearing_ned"], bearing) for _, bearing in truths)
        figures.max_bearing_deg = max(figures.max_bearing_deg, off_deg)
        if off_deg > BEARING_TOL_DEG:
            why.append(f"bearing {off_deg:.1f} deg off")
    return why


def quaternion(yaw_rad: float) -> tuple[float, float, float, float]:
    return (math.cos(yaw_rad / 2), 0.0, 0.0, math.sin(yaw_rad / 2))


def state_at(copter: int, sim_time_s: float, position, yaw_rad: float, **over) -> bytes:
    fields = {
        "copter_id": copter,
        "vehicle_type": 3,
        "velocity_ned_m_s": (SPEED_M_S, 0.0, 0.0),
        "euler_rad": (0.0, 0.0, yaw_rad),
        "quaternion_wxyz": quaternion(yaw_rad),
        "runned_time_s": sim_time_s,
        "position_ned_m": position,
    }
    fields.update(over)
    return m.SOut2Simulator(**fields).encode()


def odom_at(copter: int, seq: int, sim_time_s: float, position, yaw_rad: float) -> bytes:
    return m.OdomReply(
        sequence=seq % 2**32,
        simulation_time_s=sim_time_s,
        copter_id=copter,
        frame_type=int(m.OdomFrameType.NED_FRD),
        flags=ODOM_VALID,
        position_ned_m=position,
        quaternion_wxyz=quaternion(yaw_rad),
        velocity_ned_m_s=(SPEED_M_S, 0.0, 0.0),
        angular_velocity_frd_rad_s=(0.0, 0.0, 0.0),
    ).encode()


def spoofed(position) -> tuple[float, float, float]:
    return tuple(p + d for p, d in zip(position, SPOOF_OFFSET_M, strict=True))  # type: ignore


@dataclass(frozen=True)
class Out:
    """A datagram to send now (or ``delay_s`` later) from source socket ``via``."""

    datagram: bytes
    delay_s: float = 0.0
    via: int = 0


MakeOut = Callable[[int, float, int], list[Out]]  # (tick, sim time, host ns) -> datagrams


@dataclass
class Sim:
    """A CopterSim stand-in at 100 Hz sending to ``port`` from one socket per address of
    ``sources`` (each bound to an ephemeral port there, kept for the run)."""

    port: int
    make: MakeOut
    sources: tuple[str, ...] = ("127.0.0.1",)
    paused: bool = False
    sent: int = 0

    async def run(self, stop_event: asyncio.Event) -> None:
        socks = []
        for address in self.sources:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((address, 0))
            socks.append(sock)
        loop = asyncio.get_running_loop()
        destination = ("127.0.0.1", self.port)
        handles: list[asyncio.TimerHandle] = []
        i = order = 0
        start_s = loop.time()
        try:
            while not stop_event.is_set():
                now_ns = time.monotonic_ns()
                if not self.paused:
                    for out in self.make(i, 0.0, now_ns):
                        sock = socks[out.via]
                        if out.delay_s > 0:
                            order += 1  # equal deadlines leave in the order they were made
                            at = loop.time() + out.delay_s + order * 1e-7
                            handles.append(loop.call_at(at, sock.sendto, out.datagram, destination))
                        else:
                            sock.sendto(out.datagram, destination)
                        self.sent += 1
                i += 1
                await asyncio.sleep(max(0.0, start_s + i * POSE_PERIOD_S - loop.time()))
        finally:
            for handle in handles:
                handle.cancel()
            for sock in socks:
                sock.close()


def camera_toml(copter: int, world: str = "") -> str:
    return (
        f"{LOCK_TOML}[store]\nttl_ms = {TTL_MS}\n"
        f'[verdict]\nselect = "{SELECT}"\ninterval_s = 0.2\n'
        "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
        f"mount_rpy_deg = [0.0, {-CAMERA_BELOW_DEG}, 0.0]\n"
        "mount_position_frd_m = [0.0, 0.0, 0.0]\n"
        f"[world]\nrate_hz = 50\n{world}"
        f"[rflysim]\ncopter_id = {copter}\n"
    )


@dataclass
class Rig:
    run: Run
    board: Board
    flight: Flight
    sims: list[Sim]
    copter: int
    marks: dict[str, int] = field(default_factory=dict)

    def mark(self, name: str) -> int:
        self.marks[name] = time.monotonic_ns()
        return self.marks[name]


SimsFor = Callable[[int, Flight], list[Sim]]


async def scenario(
    link_path, tmp_path, sims_for: SimsFor, body: Callable[[Rig], Awaitable[None]], *extra: str
) -> tuple[list[dict], Rig]:
    copter = free_copter_id()
    flight = Flight()
    config = tmp_path / "gizmo.toml"
    config.write_text(camera_toml(copter))
    with PtyBoard(link_path) as pty:
        run = await spawn_run(
            link_path,
            config,
            *("--stats-interval-s", "0.2", "--event-loop", "asyncio", *extra),
            ready=lambda msg: msg["type"] == "world",  # the receivers are bound
            stderr=asyncio.subprocess.PIPE,
        )
        sims = sims_for(copter, flight)
        done = asyncio.Event()
        tasks = [asyncio.create_task(sim.run(done)) for sim in sims]
        rig = Rig(run, Board(pty, flight), flight, sims, copter)
        try:
            await body(rig)
            rig.mark("end")
        finally:
            done.set()
            await asyncio.gather(*tasks)
        messages = await stop(run)
    return messages, rig


def honest(copter: int, flight: Flight) -> MakeOut:
    def make(i: int, _sim: float, now_ns: int) -> list[Out]:
        position, yaw = flight.pose(now_ns)
        return [Out(state_at(copter, flight.sim_time_s(now_ns), position, yaw))]

    return make


def state_sims(make_for: Callable[[int, Flight], MakeOut], **sim) -> SimsFor:
    def sims_for(copter: int, flight: Flight) -> list[Sim]:
        return [Sim(ports.coptersim_state_port(copter), make_for(copter, flight), **sim)]

    return sims_for


async def fly(rig: Rig, seconds: float, lock_limit_s: float = 10.0) -> None:
    """Frames until the first PROCEED (the clocks lock), marked ``locked``, then ``seconds``.
    The lock takes ~0.4 s here, longer on a loaded machine: the limit only bounds a run that
    never locks (whose test then fails on its availability, not on a lock judged too soon)."""
    for _ in range(round(lock_limit_s / 0.1)):
        if proceeds(rig.run.messages):
            break
        await rig.board.stream(0.1)
    rig.mark("locked")
    await rig.board.stream(seconds)


def stats_world(messages: list[dict]) -> dict:
    return [s for s in messages if s["type"] == "stats" and "world" in s][-1]["world"]


def report(name: str, figures: Figures, **more) -> None:
    extra = " ".join(f"{k}={v}" for k, v in more.items())
    print(f"\n[{name}] {figures} {extra}")


def first_proceed_after(messages: list[dict], after_ns: int) -> int | None:
    later = [w["host_ns"] for w in proceeds(messages) if w["host_ns"] > after_ns]
    return min(later) if later else None


def spoofer(via: int, *, offset_s: float = 0.0, odometry: bool = False) -> Callable:
    """The honest pose each tick, just after a spoofed one (30 m east, yaw +90 degrees) from
    source socket ``via`` at the same simulation time (or ``offset_s`` off it)."""

    def make_for(copter: int, flight: Flight) -> MakeOut:
        def make(i: int, _sim: float, now_ns: int) -> list[Out]:
            position, yaw = flight.pose(now_ns)
            sim_time_s = flight.sim_time_s(now_ns)
            fake = spoofed(position)
            if odometry:
                lie = odom_at(copter, i, sim_time_s + offset_s, fake, yaw + SPOOF_YAW_RAD)
                true = odom_at(copter, i, sim_time_s, position, yaw)
            else:
                lie = state_at(copter, sim_time_s + offset_s, fake, yaw + SPOOF_YAW_RAD)
                true = state_at(copter, sim_time_s, position, yaw)
            return [Out(lie, via=via), Out(true)]

        return make

    return make_for


def spoof_sims(sources: tuple[str, ...], via: int, **kw) -> SimsFor:
    odometry = kw.get("odometry", False)

    def sims_for(copter: int, flight: Flight) -> list[Sim]:
        port = (ports.coptersim_reply_port if odometry else ports.coptersim_state_port)(copter)
        return [Sim(port, spoofer(via, **kw)(copter, flight), sources=sources)]

    return sims_for


def drops(messages: list[dict], cause: str) -> int:
    receivers = stats_world(messages)["rflysim"]["receivers"].values()
    return sum(r["drops"].get(cause, 0) for r in receivers)


def jumping(period_s: float, d_east_m: float, d_yaw_rad: float) -> Callable:
    """Every ``period_s`` the vehicle jumps ``d_east_m`` east and turns ``d_yaw_rad``, while
    its state keeps reporting 4 m/s north and no rotation, and the sim time runs on."""

    def make_for(copter: int, flight: Flight) -> MakeOut:
        def make(i: int, _sim: float, now_ns: int) -> list[Out]:
            if i and i % round(period_s / POSE_PERIOD_S) == 0:
                flight.steps.append((now_ns, 0.0, d_east_m, d_yaw_rad))
            position, yaw = flight.pose(now_ns)
            return [Out(state_at(copter, flight.sim_time_s(now_ns), position, yaw))]

        return make

    return make_for


def hiccup(at: dict[str, int], length_s: float) -> Callable:
    """From ``at["hiccup"]`` the state stream stalls ``length_s``, then flushes what it held in
    order just before the first datagram on time again."""

    def make_for(copter: int, flight: Flight) -> MakeOut:
        once = honest(copter, flight)
        held: list[Out] = []

        def make(i: int, s: float, now_ns: int) -> list[Out]:
            start = at.get("hiccup")
            outs = once(i, s, now_ns)
            if start is not None and start <= now_ns < start + length_s * 1e9:
                held.extend(outs)
                return []
            flushed, held[:] = held + outs, []
            return flushed

        return make

    return make_for


def reordering(make_for: Callable) -> Callable:
    """Adjacent datagrams swapped (tick 2k leaves after 2k+1) and every 13th 25 ms late."""

    def reordered_for(copter: int, flight: Flight) -> MakeOut:
        inner = make_for(copter, flight)
        held: list[Out] = []

        def make(i: int, s: float, now_ns: int) -> list[Out]:
            outs = [
                Out(o.datagram, delay_s=0.025) if i % 13 == 12 else o for o in inner(i, s, now_ns)
            ]
            if i % 2 == 0:
                held[:] = outs
                return []
            out, held[:] = outs + held, []
            return out

        return make

    return reordered_for


def overtaken_triples(make_for: Callable) -> Callable:
    """Every 13th tick three datagrams in a row take a slow path: the next one overtakes them
    and they arrive together 5 ms after it (30 ms at most out of order)."""

    def reordered_for(copter: int, flight: Flight) -> MakeOut:
        inner = make_for(copter, flight)

        def make(i: int, s: float, now_ns: int) -> list[Out]:
            k = i % 13
            outs = inner(i, s, now_ns)
            if k < 10:
                return outs
            delay_s = (13 - k) * POSE_PERIOD_S + 0.005
            return [Out(o.datagram, delay_s=delay_s, via=o.via) for o in outs]

        return make

    return reordered_for


def honest_odometry(copter: int, flight: Flight) -> MakeOut:
    def make(i: int, _sim: float, now_ns: int) -> list[Out]:
        position, yaw = flight.pose(now_ns)
        return [Out(odom_at(copter, i, flight.sim_time_s(now_ns), position, yaw))]

    return make


def timeline(messages: list[dict], t0_ns: int) -> list[str]:
    """The world's verdict and reasons each time they change (for the failure message)."""
    out, last = [], None
    for line in run_world(messages):
        now = (line["verdict"], tuple(line["reasons"]))
        if now != last:
            out.append(f"{(line['host_ns'] - t0_ns) / 1e6:.0f} ms {now[0]} {','.join(now[1])}")
            last = now
    return out
