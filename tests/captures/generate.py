"""The captures in ``tests/captures`` and their golden outputs, made on purpose.

``python3 dev.py regen-goldens`` rewrites every ``NAME.golden.jsonl`` from ``NAME.mcap``: the
output of ``gizmo-host replay NAME.mcap --offline``. ``--captures`` first rebuilds the synthetic
captures (every case in ``CASES``; a capture recorded live, such as ``live_clean.mcap``, is
kept). A changed golden file needs a reason in its commit.

Each synthetic capture is what ``gizmo-host record`` would have written for a run of the
project's own board emulator (``gizmo_host.rigs.board``: ``Emulation`` with its seeded faults) and
RflySim stand-in (``gizmo_host.rigs.rflysim.StandIn``), on synthetic host times: a chunk is read
``READ_NS`` after its last byte has crossed the line at 115200 baud, a datagram arrives
``NET_NS`` after it is sent, and the serial port opens, hangs up and reconnects with the live
link's backoff. The cases that run the world model see a target the stand-in places (its car at
the orbit's centre) through the same camera, so the golden ``world`` lines locate it.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from gizmo_host.app.capture_world import world_metadata
from gizmo_host.app.host_config import StoreConfig
from gizmo_host.app.offline_replay import OfflineReplay
from gizmo_host.app.world_config import RflySimConfig, WorldSetup, resolve_world
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.channels import WORLD_METADATA
from gizmo_host.capture.reader import CaptureReader
from gizmo_host.capture.writer import CaptureWriter
from gizmo_host.rigs.board import BoardModel
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.detections import LatencyKind, LatencyModel, OutputPolicy, TargetInView
from gizmo_host.rigs.board.emulate_settings import emulator_camera
from gizmo_host.rigs.board.emulation import Emulation
from gizmo_host.rigs.board.faults import Fault, FaultKind, FaultTimeline
from gizmo_host.rigs.board.port import LinePacer
from gizmo_host.rigs.board.projection import camera_pose, project_box
from gizmo_host.rigs.rflysim import Rates, SimTime, StandIn, build_scenario
from gizmo_host.stream.linkstate import REASON_OPENED, REASON_STOPPED, LinkInput
from gizmo_host.stream.store import parse_selector
from gizmo_host.wire.results import NormBox
from rfly_link import messages as m
from rfly_link import ports

HERE = Path(__file__).resolve().parent
START_NS = 20_000_000_000  # host time (CLOCK_MONOTONIC) of the first input
WALL_NS = 1_780_000_000_000_000_000  # CLOCK_REALTIME at START_NS (2026-05-28): wall_ns
READ_NS = 150_000  # a chunk is read this long after its last byte arrives
NET_NS = 250_000  # a datagram arrives this long after it is sent
DRAIN_NS = 100_000_000  # the emulator lets the reader drain before it hangs up
BACKOFF_S = (0.1, 0.1, 0.2, 0.4, 0.8, 1.6)  # the live link's reconnect delays, then 2 s
SERIAL_PATH = "/dev/gizmo0"
SENDER = ("127.0.0.1", 47001)  # the stand-in's socket
REQUESTER = ("127.0.0.1", 47002)  # the host's request socket
SELECT = "type=DETECTOR,id=11"
CAMERA = {
    "width_px": 640,
    "height_px": 480,
    "hfov_deg": 90.0,
    "mount_rpy_deg": [0.0, -45.0, 0.0],  # the orbit flies 10 m out and 10 m up, nose in
}
WORLD = {"rate_hz": 5.0}

DatagramFilter = Callable[[int, int, int], int | None]  # (index, port, rx_ns) -> rx_ns or drop


class Case(NamedTuple):
    description: str
    duration_s: float
    faults: tuple[Fault, ...] = ()
    start_sequence: int = 0
    world: bool = False
    odometry_hz: int = 0  # the pose from odometry replies (else from the state)
    sim_time: SimTime = SimTime(start_s=100.0)
    udp: DatagramFilter | None = None
    seed: int = 14


def _lossy(index: int, port: int, rx_ns: int) -> int | None:
    """Loss and reordering of the state stream: 300 ms lost at 1.5 s (a pose gap), every
    20th datagram lost, and every 15th delayed by 25 ms (behind two that follow it)."""
    t_s = (rx_ns - START_NS) / 1e9
    if 1.5 <= t_s < 1.8 or index % 20 == 19:
        return None
    return rx_ns + 25_000_000 if index % 15 == 7 else rx_ns


CASES: dict[str, Case] = {
    "clean": Case("no fault; the world model locates the stand-in's car", 3.0, world=True),
    "garbage": Case(
        "garbage bursts, truncated frames and bit errors: every byte accounted for",
        3.0,
        (
            Fault(FaultKind.GARBAGE, at_s=0.5, duration_s=1.0, probability=0.3, bytes=40),
            Fault(FaultKind.TRUNCATE, at_s=1.5, duration_s=0.5, probability=0.3),
            Fault(FaultKind.BIT_ERRORS, at_s=2.0, duration_s=0.5, ber=2e-3),
        ),
    ),
    "wrap": Case("the sequence starts at 65480 and wraps: no gap", 3.0, start_sequence=65480),
    "reset": Case(
        "the board restarts at 1 s (0.3 s down): HOLD device_reset, then clock_not_locked until "
        "the new epoch locks (three frames), then PROCEED",
        4.5,
        (Fault(FaultKind.RESET, at_s=1.0, down_s=0.3),),
    ),
    "unplug": Case(
        "the port hangs up at 1 s for 0.6 s and reconnects: DOWN, then UP",
        4.0,
        (Fault(FaultKind.HANGUP, at_s=1.0, duration_s=0.6),),
    ),
    "udp_loss": Case(
        "RflySim state datagrams lost (300 ms at 1.5 s, and 1 in 20) and reordered",
        3.5,
        world=True,
        udp=_lossy,
    ),
    "sim_jump": Case(
        "simulation time jumps 5 s at 1.5 s: odometry flags it, a new pose epoch",
        3.5,
        world=True,
        odometry_hz=100,
        sim_time=SimTime(start_s=100.0, jump_at_s=1.5, jump_by_s=5.0),
    ),
    "sim_restart": Case(
        "simulation time steps back 50 s at 1.5 s, unflagged: a new pose epoch, HOLD clock_jump",
        3.5,
        world=True,
        sim_time=SimTime(start_s=100.0, jump_at_s=1.5, jump_by_s=-50.0),
    ),
}


def world_setup(case: Case) -> WorldSetup:
    """The settings ``gizmo-host run`` would resolve from the case's TOML."""
    rflysim = RflySimConfig(copter_id=1, request_odometry_hz=case.odometry_hz)
    setup = resolve_world(CAMERA, WORLD, rflysim, StoreConfig(), parse_selector(SELECT))
    assert setup is not None
    return setup


class Recording:
    """Timed capture inputs; written in time order (equal times keep their order)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, Callable[[CaptureWriter], object]]] = []

    def add(self, t: int, write: Callable[[CaptureWriter], object]) -> None:
        self.items.append((t, len(self.items), write))

    def port(self, t: int, event: LinkInput, reason: str) -> None:
        self.add(t, lambda w: w.port(event, reason, t))

    def uart(self, t: int, data: bytes) -> None:
        self.add(t, lambda w: w.uart(data, t))

    def datagram(self, t: int, port: int, data: bytes) -> None:
        self.add(t, lambda w: w.datagram(port, "127.0.0.1", SENDER, data, t))

    def write(self, writer: CaptureWriter) -> None:
        for _t, _n, write in sorted(self.items, key=lambda item: item[:2]):
            write(writer)
        writer.finish()


class SerialSide:
    """The host's end of the serial port: opens, a hang-up and the reconnect attempts."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.attempts = 0
        self.open_at_ns = self.open(START_NS)

    def open(self, t: int) -> int:
        self.attempts += 1
        self.recording.port(t, LinkInput.OPEN_STARTED, self._opening())
        self.recording.port(t + 400_000, LinkInput.OPENED, REASON_OPENED)
        return t + 400_000

    def _opening(self) -> str:
        return f"opening at 115200 baud, attempt {self.attempts}"

    def hang_up(self, t: int, duration_ns: int) -> None:
        """The pty closes at ``t`` and is back ``duration_ns`` later: retry until then."""
        self.recording.port(
            t, LinkInput.LOST, "disconnected: [errno 5] end of file: the tty hung up"
        )
        back_ns = t + duration_ns
        for delay_s in (*BACKOFF_S, *(2.0,) * 100):
            t += round(delay_s * 1e9)
            if t >= back_ns:
                self.open_at_ns = self.open(t)
                return
            self.attempts += 1
            self.recording.port(t, LinkInput.OPEN_STARTED, self._opening())
            reason = f"{SERIAL_PATH} is a dangling link: the board was unplugged"
            self.recording.port(t + 300_000, LinkInput.OPEN_FAILED, reason)


def board_run(
    case: Case,
    recording: Recording,
    boxes: Callable[[int, NormBox], NormBox] | None = None,
    scene_s: Callable[[float], float] | None = None,
    seen: Callable[[int], list[TargetInView]] | None = None,
) -> Emulation:
    """The board's cycles for the case, its bytes read by the host; ``boxes`` (capture
    time, box -> box): what a faulty detector makes of each box; ``scene_s`` (seconds from
    the start -> the scenario's time the camera sees then: a paused simulation's scene stands
    still); ``seen`` (capture time -> what the camera sees, instead of the case's scene: a
    camera of the test's own, on a gimbal say)."""
    serial = SerialSide(recording)
    emulation = Emulation(
        board=BoardModel(
            live_clock=True, clock=_no_clock, timestamp_ms=60_000, sequence=case.start_sequence
        ),
        policy=OutputPolicy(),
        latency=LatencyModel(LatencyKind.UNIFORM, 10.0, 14.0),
        timeline=FaultTimeline(case.faults, case.seed),
        start_ns=serial.open_at_ns + 1_000_000,  # the emulator starts when a reader opens
    )
    detections = _detections(case, scene_s) if seen is None else seen
    if boxes is not None:
        seen, faulty = detections, boxes
        detections = lambda t: [v._replace(box=faulty(t, v.box)) for v in seen(t)]  # noqa: E731
    pacer = LinePacer(115200)
    end_ns = START_NS + round(case.duration_s * 1e9)
    hung_up = False
    index = 0
    while (capture_ns := emulation.capture_ns(index)) < end_ns:
        connected = capture_ns >= serial.open_at_ns
        if connected and hung_up:
            hung_up = False
            emulation.reconnected()
        cycle = emulation.cycle(index, detections(capture_ns), connected=connected)
        for chunk in cycle.chunks:
            _start, done_ns = pacer.send(cycle.send_ns, len(chunk))
            recording.uart(done_ns + READ_NS, chunk)
        if cycle.hangup is not None:
            hung_up = True
            at_ns = max(pacer.busy_until_ns, cycle.send_ns) + DRAIN_NS
            serial.hang_up(at_ns, round(cycle.hangup.duration_s * 1e9))
            emulation.hung_up(observed=True)  # the recorded reader had the port open
        index += 1
    recording.port(end_ns, LinkInput.STOPPED, REASON_STOPPED)
    return emulation


def _no_clock() -> int:
    raise AssertionError("the emulation read the host clock")


def _detections(
    case: Case, scene_s: Callable[[float], float] | None = None
) -> Callable[[int], list[TargetInView]]:
    """What the board sees at a capture: the stand-in's vehicles through ``CAMERA`` (world
    cases), else the emulator's built-in scenario."""
    if not case.world:
        board_scenario = BoardScenario()
        return lambda capture_ns: board_scenario.detections((capture_ns - START_NS) / 1e9)
    scenario = build_scenario("orbit", time=case.sim_time)
    camera = emulator_camera(world_setup(case).camera)
    extents = {v.copter_id: tuple(x / 2 for x in v.size_m) for v in scenario.others}

    def detections(capture_ns: int) -> list[TargetInView]:
        t_s = (capture_ns - START_NS) / 1e9
        truth = scenario.truth(t_s if scene_s is None else scene_s(t_s))
        ego = truth.ego.state
        pose = camera_pose(camera, ego.position_ned_m, ego.quaternion_wxyz)
        out = []
        for target in truth.targets:
            x, y, z = extents[target.copter_id]
            box = project_box(camera, pose, target.state.position_ned_m, (x, y, z))
            if box is not None:
                out.append(TargetInView(str(target.copter_id), box, 80))
        return out

    return detections


def sim_run(case: Case, recording: Recording, setup: WorldSetup) -> StandIn:
    """The stand-in's datagrams to the ports the host hears for ``setup``."""
    assert setup.rflysim is not None
    from gizmo_host.app.world_build import DatagramRouter

    heard = set(DatagramRouter(setup.rflysim).ports)
    off = {"others_hz": 0.0, "heartbeat_hz": 0.0, "gimbal_hz": 0.0, "truth_hz": 0.0}
    rates = Rates(
        state_hz=50.0 if case.odometry_hz else 100.0,
        distance_hz=0.0,
        boxes_hz=0.0,
        lidar_hz=0.0,
        **off,
    )
    standin = StandIn(build_scenario("orbit", time=case.sim_time), rates=rates)
    if case.odometry_hz:  # what the host's SensorRequester sends at start
        request = m.SensorReqCopterSim.build(
            m.CopterSimSensor.ODOMETRY, case.odometry_hz, "127.0.0.1", 0
        )
        standin.receive(request.encode(), REQUESTER, ports.coptersim_control_port(1), 0)
    end_ns = round(case.duration_s * 1e9)
    index = 0
    while (t_ns := standin.next_due_ns()) < end_ns:
        for datagram in standin.poll(t_ns).datagrams:
            port = datagram.address[1]
            if port not in heard:
                continue
            rx_ns: int | None = START_NS + t_ns + NET_NS
            if case.udp is not None and port == ports.coptersim_state_port(1):
                rx_ns = case.udp(index, port, START_NS + t_ns + NET_NS)
                index += 1
            if rx_ns is not None:
                recording.datagram(rx_ns, port, datagram.data)
    return standin


def build(name: str) -> bytes:
    """The capture for case ``name``, as MCAP bytes."""
    case = CASES[name]
    recording = Recording()
    emulation = board_run(case, recording)
    info: dict[str, str] = {
        "generator": "tests/captures/generate.py",
        "case": name,
        "description": case.description,
        "host_clock": "CLOCK_MONOTONIC",
        "monotonic_ns_at_start": str(START_NS),
        "wall_clock_ns_at_start": str(WALL_NS),
        "emulator": json.dumps(emulation.stats(), sort_keys=True),
    }
    metadata = {}
    if case.world:
        setup = world_setup(case)
        standin = sim_run(case, recording, setup)
        info["standin"] = json.dumps(standin.stats._asdict(), sort_keys=True)
        metadata[WORLD_METADATA] = world_metadata(setup)
    settings = HostSettings(
        serial_path=SERIAL_PATH, stats_interval_s=1.0, selector=parse_selector(SELECT)
    )
    out = io.BytesIO()
    recording.write(CaptureWriter(out, f"{name}.mcap", settings, info=info, metadata=metadata))
    return out.getvalue()


def golden(path: Path) -> bytes:
    """What ``gizmo-host replay PATH --offline`` prints."""
    reader = CaptureReader(str(path))
    return b"".join(OfflineReplay(reader.info, reader.path).replay(reader.messages()))


def world_case_lines(
    description: str, duration_s: float, boxes: Callable[[int, NormBox], NormBox]
) -> list[dict[str, Any]]:
    """The world case ``duration_s`` long with a faulty detector's ``boxes`` (``board_run``),
    replayed: its lines, parsed."""
    case = Case(description, duration_s, world=True)
    setup = world_setup(case)
    recording = Recording()
    board_run(case, recording, boxes)
    sim_run(case, recording, setup)
    return replayed(recording, setup)


def replayed(recording: Recording, setup: WorldSetup) -> list[dict[str, Any]]:
    """The lines ``gizmo-host replay --offline`` prints for ``recording`` with ``setup``'s
    world (the generator's settings), parsed: what a test made of the world case judges."""
    settings = HostSettings(
        serial_path=SERIAL_PATH, stats_interval_s=1.0, selector=parse_selector(SELECT)
    )
    out = io.BytesIO()
    metadata = {WORLD_METADATA: world_metadata(setup)}
    recording.write(CaptureWriter(out, "test.mcap", settings, info={}, metadata=metadata))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "test.mcap"
        path.write_bytes(out.getvalue())
        return [json.loads(line) for line in golden(path).decode().splitlines()]


def captures() -> Iterator[Path]:
    return iter(sorted(HERE.glob("*.mcap")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="regen-goldens", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--captures", action="store_true", help="rebuild the synthetic captures first"
    )
    args = parser.parse_args(argv)
    if args.captures:
        for name in CASES:
            path = HERE / f"{name}.mcap"
            path.write_bytes(build(name))
            print(f"{path.relative_to(HERE.parent.parent)}: {path.stat().st_size} bytes")
    for path in captures():
        target = path.with_name(path.stem + ".golden.jsonl")
        data = golden(path)
        changed = not target.exists() or target.read_bytes() != data
        target.write_bytes(data)
        lines = data.count(b"\n")
        state = "changed" if changed else "unchanged"
        print(f"{target.relative_to(HERE.parent.parent)}: {lines} lines, {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
