"""The HIL chain in one test: stand-in -> loopback UDP -> emulator -> pty -> ``gizmo-host run``.

One :class:`~gizmo_host.rigs.rig.Rig`, as the demo and certify build theirs: the stand-in
(:class:`gizmo_host.rigs.rflysim.StandIn` on its
:class:`~gizmo_host.rigs.rflysim.sim_runner.SimRunner`) and the emulator (``gizmo-host
emulate``'s own argument parser, settings and target source, on a real pty) share the test's
event loop; the host is ``gizmo-host run`` as a child process
(:class:`~gizmo_host.rigs.rig.HostProcess`) reading the pty and hearing the stand-in on UDP,
and its JSON Lines are collected as they come. Everything runs on ``time.monotonic_ns``, so a world
line's ``capture_ns`` is a scenario time of the stand-in, where the truth is exact.

The emulator's faults come from a ``--faults`` TOML file written from :class:`Fault` values,
and its counts are snapshotted at chosen emulation times, so a test compares them, window by
window, with the ``stats`` lines ``gizmo-host run`` printed meanwhile.

Ports: each chain's ego gets a CopterID whose ports are free (``gizmo-host run`` listens on its
state port), the box sensor's port is whatever the emulator's receiver got from the kernel, the
pose source listens at a free ``--port-offset`` (the stand-in mirrors the states there) and the
stand-in's control ports are bound anywhere free: chains, and a demo on the default ports,
never meet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gizmo_host.cli import emulate as emulate_cli
from gizmo_host.rigs.board.compose import build_source, settings_from_args
from gizmo_host.rigs.board.faults import Fault
from gizmo_host.rigs.board.runner import Runner
from gizmo_host.rigs.board.target_sources import BoxSource, PoseTargetSource
from gizmo_host.rigs.free_ports import free_ports, port_is_free
from gizmo_host.rigs.rflysim import Rates, SimScenario, StandIn
from gizmo_host.rigs.rflysim.sensorset import sensor_camera
from gizmo_host.rigs.rflysim.sim_runner import SimRunner
from gizmo_host.rigs.rig import Rig
from rfly_link import ports
from rfly_link.config_json import load_config

TIMEOUT_S = 10.0
STATS_INTERVAL_S = 0.05
IMAGE = (640, 480)
BOX_SEQ_ID = 1
QUIET = Rates(others_hz=0, heartbeat_hz=0, gimbal_hz=0, truth_hz=0)


@dataclass(frozen=True, slots=True)
class Plan:
    """One run of the chain."""

    name: str
    scenario: Callable[[int], SimScenario]  # the ego's CopterID -> the scenario (target: ego + 1)
    duration_s: float  # of the emulation; fault times count from its start
    faults: tuple[Fault, ...] = ()
    seed: int = 0
    emulate_flags: tuple[str, ...] = ()  # more ``gizmo-host emulate`` flags
    emulate_toml: str = ""  # ``gizmo-host emulate --config`` (pose source)
    host_toml: str = ""  # more ``gizmo-host run`` settings
    boundaries_s: tuple[float, ...] = ()  # emulation times to snapshot the emulator's counts at
    poses: bool = False  # the emulator projects the stand-in's poses instead of its boxes
    # Config.json entries the stand-in alone sees changed (the host keeps the true sensor):
    # what a mis-measured mount or lens does to the accuracy.
    stand_in_sensor: tuple[tuple[str, Any], ...] = ()


@dataclass(slots=True)
class Chain:
    """What one run produced; times as emulation seconds unless named ``_ns``."""

    plan: Plan
    scenario: SimScenario
    target_id: int
    link: str  # the emulator's stable symlink, which gizmo-host run opens
    port_offset: int = 0  # where the pose source listens (the stand-in mirrors states there)
    camera: Any = None
    sim_start_ns: int = 0
    emulation_start_ns: int = 0
    lines: list[dict[str, Any]] = field(default_factory=list)
    emulator: dict[str, Any] = field(default_factory=dict)  # the final ``--stats``
    snapshots: dict[float, dict[str, Any]] = field(default_factory=dict)  # boundary -> stats
    stand_in: Any = None  # the stand-in's final RunStats
    returncode: int | None = None
    stderr: str = ""

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["type"] == kind]

    @property
    def world(self) -> list[dict[str, Any]]:
        return self.of_type("world")

    def at_s(self, host_ns: int) -> float:
        """Emulation time (seconds since the emulator's start) of a host time."""
        return (host_ns - self.emulation_start_ns) / 1e9

    def world_between(self, start_s: float, end_s: float) -> list[dict[str, Any]]:
        return [w for w in self.world if start_s <= self.at_s(w["host_ns"]) < end_s]

    def stats_between(self, start_s: float, end_s: float) -> dict[str, Any]:
        """A host stats line taken between two emulation times (the last one)."""
        lines = [s for s in self.of_type("stats") if start_s <= self.at_s(s["host_ns"]) < end_s]
        if not lines:
            raise AssertionError(f"{self.plan.name}: no stats line in [{start_s}, {end_s}) s")
        return lines[-1]


def selected(world: dict[str, Any]) -> dict[str, Any] | None:
    key = world["selected"]
    return next((t for t in world["targets"] if t["key"] == key), None)


def host_counters(stats: dict[str, Any]) -> dict[str, int]:
    """The host's counters, named as the emulator's ``--stats`` ``host`` table names them."""
    link = stats["link"]
    source = stats["sources"].get("1", {})
    return {
        "frames_ok": link["frames_ok"],
        "bytes_discarded": link["bytes_discarded"],
        "lost": source.get("lost", 0),
        "duplicates": source.get("duplicates", 0),
        "resets": source.get("resets", 0),
        "discontinuities": source.get("discontinuities", 0),
        "disconnects": link["disconnects"],
    }


def faults_toml(faults: Sequence[Fault], seed: int) -> str:
    """A ``--faults`` file for ``faults``."""
    out = [f"seed = {seed}"]
    for fault in faults:
        out.append("[[fault]]")
        for key, value in fault.to_dict().items():
            if value is None:
                continue
            out.append(f"{key} = {json.dumps(value)}")
    return "\n".join(out) + "\n"


# -- ports ---------------------------------------------------------------------------------


def free_copter_ids(count: int, rng: random.Random) -> list[int]:
    """CopterIDs ``N`` (three apart) whose and whose ``N + 1``'s state ports are free."""
    chosen: list[int] = []
    candidates = list(range(200, ports.MAX_COPTERS))
    rng.shuffle(candidates)
    for copter_id in candidates:
        if len(chosen) == count:
            return chosen
        if any(abs(copter_id - other) < 3 for other in chosen):
            continue
        if all(port_is_free(ports.coptersim_state_port(copter_id + k)) for k in (0, 1)):
            chosen.append(copter_id)
    raise RuntimeError("no free CopterSim state ports on 127.0.0.1")


def free_port_offset(copter_ids: Sequence[int], rng: random.Random) -> int:
    """An offset that puts the state ports of ``copter_ids`` on free ports, off RflySim's map."""
    for _ in range(100):
        offset = rng.randrange(5000, 9000)
        if all(port_is_free(ports.coptersim_state_port(c) + offset) for c in copter_ids):
            return offset
    raise RuntimeError("no free port offset for the pose source")


def box_sensor_config(copter_id: int, port: int, changes: Sequence[tuple[str, Any]] = ()) -> str:
    """A Config.json with one TypeID 30 sensor on ``copter_id``: 640x480, 90°, pitched -45°
    (with ``changes`` to its entries)."""
    sensor = {
        "SeqID": BOX_SEQ_ID,
        "TypeID": 30,
        "TargetCopter": copter_id,
        "TargetMountType": 0,
        "DataWidth": IMAGE[0],
        "DataHeight": IMAGE[1],
        "DataCheckFreq": 30,
        "SendProtocol": [1, 127, 0, 0, 1, port, 0, 0],
        "CameraFOV": 90.0,
        "SensorPosXYZ": [0.1, 0.0, 0.05],
        "EularOrQuat": 0,
        "SensorAngEular": [0.0, -45.0, 0.0],
        "SensorAngQuat": [1, 0, 0, 0],
        "otherParams": [100, 10] + [0] * 14,
    }
    sensor.update(changes)
    return json.dumps({"VisionSensors": [sensor]}, indent=2) + "\n"


# -- one run -------------------------------------------------------------------------------


def _emulate_flags(plan: Plan, tmp: Path, link: str, copter_id: int, offset: int) -> list[str]:
    target_id = copter_id + 1
    flags = [
        *("--link", link, "--duration", str(plan.duration_s)),
        *("--class", f"{target_id}=PEDESTRIAN"),
        *plan.emulate_flags,
    ]
    if plan.faults:
        faults = tmp / "faults.toml"
        faults.write_text(faults_toml(plan.faults, plan.seed))
        flags += ["--faults", str(faults)]
    if plan.poses:
        emulate_toml = tmp / "emulate.toml"
        emulate_toml.write_text(f"[camera]\nrflysim_sensor = {BOX_SEQ_ID}\n{plan.emulate_toml}")
        flags += ["--config", str(emulate_toml), "--rfly-config", str(tmp / "Config.json")]
        flags += ["--ego", str(copter_id), "--targets", str(target_id)]
        flags += ["--port-offset", str(offset)]
    else:
        flags += ["--boxes", "0", "--image-size", f"{IMAGE[0]}x{IMAGE[1]}"]
    return flags


def _host_toml(plan: Plan, copter_id: int, config_json: Path) -> str:
    return (
        f"{plan.host_toml}\n"
        f"[camera]\nrflysim_sensor = {BOX_SEQ_ID}\n"
        f"[rflysim]\ncopter_id = {copter_id}\nconfig = {json.dumps(str(config_json))}\n"
    )


async def _snapshots(runner: Runner, chain: Chain, boundaries: Sequence[float]) -> None:
    await runner.started.wait()
    emulation = runner.emulation
    assert emulation is not None
    for at_s in sorted(boundaries):
        delay_s = (emulation.start_ns + at_s * 1e9 - time.monotonic_ns()) / 1e9
        if delay_s > 0:
            await asyncio.sleep(delay_s)
        chain.snapshots[at_s] = emulation.stats()


async def _caught_up(chain: Chain, arrived: asyncio.Event, frames_ok: int) -> None:
    """Until a host stats line counts every frame the emulator sent intact."""
    while True:
        stats = chain.of_type("stats")
        if stats and stats[-1]["link"]["frames_ok"] >= frames_ok:
            return
        arrived.clear()
        await arrived.wait()


async def run_chain(plan: Plan, tmp: Path, copter_id: int, offset: int) -> Chain:
    """Run ``plan`` with the ego ``copter_id`` (pose source at ``offset``) in ``tmp``."""
    scenario = plan.scenario(copter_id)
    rig = Rig(tmp)
    chain = Chain(plan, scenario, copter_id + 1, rig.link, offset if plan.poses else 0)
    config_json = tmp / "Config.json"
    config_json.write_text(box_sensor_config(copter_id, free_ports()[0]))
    parser = argparse.ArgumentParser()
    emulate_cli.add_arguments(parser)
    args = parser.parse_args(_emulate_flags(plan, tmp, rig.link, copter_id, offset))
    settings, timeline = settings_from_args(args)
    source = build_source(settings)
    assert isinstance(source, PoseTargetSource if plan.poses else BoxSource)
    runner = rig.add_board(settings, timeline, source, duration_s=plan.duration_s)
    await rig.bind_board()  # the box source's port, for the Config.json
    rates = QUIET
    if plan.poses:  # the target's pose is needed, the boxes are not
        rates = Rates(others_hz=20, heartbeat_hz=0, gimbal_hz=0, truth_hz=0, boxes_hz=0)
    else:  # the boxes go where the emulator listens
        assert isinstance(source, BoxSource)
        config_json.write_text(box_sensor_config(copter_id, source.bound_port))
    loaded = load_config(config_json)
    if plan.stand_in_sensor:
        stand_in_json = tmp / "stand_in.json"
        port = source.bound_port if isinstance(source, BoxSource) else free_ports()[0]
        stand_in_json.write_text(box_sensor_config(copter_id, port, plan.stand_in_sensor))
        loaded = load_config(stand_in_json)
    chain.camera = sensor_camera(loaded.sensors[0])  # the stand-in's: its truth
    host_toml = tmp / "hil.toml"
    host_toml.write_text(_host_toml(plan, copter_id, config_json))
    stand_in = StandIn(
        scenario, config=loaded, rates=rates, mirror_offset=offset if plan.poses else 0
    )
    sim = rig.add_stand_in(
        SimRunner(stand_in, control_ports={p: 0 for p in stand_in.control_ports()})
    )
    arrived = asyncio.Event()

    def on_line(line: dict[str, Any]) -> None:
        chain.lines.append(line)
        arrived.set()

    host = rig.add_host_process(
        [
            *("--serial", rig.link, "--config", str(host_toml), "--transport-delay-ms", "0"),
            *("--stats-interval-s", str(STATS_INTERVAL_S), "--log-level", "WARNING"),
        ],
        on_line,
    )
    rig.add_task("snapshots", lambda: _snapshots(runner, chain, plan.boundaries_s), ends="quietly")
    try:
        await asyncio.wait_for(rig.start(), TIMEOUT_S)
        chain.sim_start_ns = sim.start_ns
        # until the board has run its duration
        await asyncio.wait_for(rig.wait(asyncio.Event()), plan.duration_s + TIMEOUT_S)
        assert runner.emulation is not None
        chain.emulation_start_ns = runner.emulation.start_ns
        chain.emulator = runner.stats()
        frames_ok = chain.emulator["host"]["frames_ok"]
        await asyncio.wait_for(_caught_up(chain, arrived, frames_ok), TIMEOUT_S)
    finally:
        await rig.stop()
        chain.stand_in = sim.stats
        chain.stderr, chain.returncode = host.stderr, host.returncode
    return chain


async def run_chains(plans: Sequence[Plan], tmp: Path) -> dict[str, Chain]:
    """Every plan at once, each in its own directory, ports and CopterID."""
    rng = random.Random()
    copter_ids = free_copter_ids(len(plans), rng)
    offset = free_port_offset([c + k for c in copter_ids for k in (0, 1)], rng)
    runs = []
    for plan, copter_id in zip(plans, copter_ids, strict=True):
        directory = tmp / plan.name
        directory.mkdir()
        runs.append(run_chain(plan, directory, copter_id, offset))
    chains = await asyncio.gather(*runs)
    return {chain.plan.name: chain for chain in chains}
