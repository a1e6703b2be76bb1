"""``gizmo-host demo --scenario precland``: a precision landing closed through the host.

One process, one loop, no simulator: the real vehicle's set-up, with stand-ins at both ends.

- the autopilot: :class:`~gizmo_host.rigs.autopilot.standin.StandinAutopilot` on its own skewed boot
  clock, 8-16 ms telemetry lag, over loopback UDP to the host's ``[mavlink]`` link; its vehicle is a
  :class:`~gizmo_host.rigs.autopilot.landing_vehicle.PrecLandVehicle`, steered only by the
  LANDING_TARGET messages the host sends (PX4's precland manner, ``px4`` profile by default);
- the board: the emulated Gizmo board on a pty, its detections the landing pad projected
  through the emulator's own downward camera (:mod:`hil_geometry.pinhole`) from the vehicle's
  true pose at each capture, 1 px of detector noise, with the fault timeline (``--faults``);
- the host: the same ``Host`` as ``gizmo-host run`` with ``[camera]`` (looking down) and
  ``[mavlink]``: the world's pose is the autopilot's, and LANDING_TARGET goes out only while
  the world says PROCEED.

The run ends once the vehicle has landed (or at ``--duration``). The summary is the stand-in's:
the landing error against the pad's true position, the time to land, the descents made without
a fresh target (must be 0), and the host's LANDING_TARGET counters and latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusion import WorldSnapshot
from gizmo_core import Decision
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import HostConfig, config_from_mapping
from gizmo_host.errors import ServiceFailed
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.rigs.autopilot.landing_vehicle import PrecLandConfig, PrecLandVehicle
from gizmo_host.rigs.autopilot.standin import StandinAutopilot
from gizmo_host.rigs.board.detections import TargetInView
from gizmo_host.rigs.board.emulate_settings import load_settings
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.board.projection import camera_pose, clamp_box, project_box
from gizmo_host.rigs.rig import Rig
from gizmo_host.timing import LoopScheduler, call_after, poll
from gizmo_host.wire.results import NormBox
from hil_geometry.pinhole import Pinhole

HOST = "127.0.0.1"
WIDTH_PX, HEIGHT_PX, HFOV_DEG, MOUNT_RPY_DEG = 640, 480, 90.0, (0.0, -90.0, 0.0)  # looking down
CAMERA = {
    "width_px": WIDTH_PX,
    "height_px": HEIGHT_PX,
    "hfov_deg": HFOV_DEG,
    "mount_rpy_deg": list(MOUNT_RPY_DEG),
}
PAD_HALF_EXTENT_M = (0.2, 0.2, 0.01)  # a 0.4 m pad: in the image down to the landing height
PAD_NAME = "pad"
LAG_MS = (8.0, 16.0)
SKEW_PPM = 60.0
LANDED_GRACE_S = 0.5  # after touchdown, before the run ends
NOISE_PX = 1.0  # the detector's box-centre noise (1 sigma)
CROSSING_S = 2.0  # a moving pad passes beside the start point this long after the start
# How long the autopilot may take to hear a HOLD: the telemetry lag, plus a controller step.
HOLD_NEWS_NS = round((LAG_MS[1] + 50.0) * 1e6)


@dataclass(frozen=True, slots=True)
class PrecLandSettings:
    timeline: FaultTimeline = field(default_factory=FaultTimeline)
    profile: str = "px4"
    seed: int = 0
    vehicle: PrecLandConfig = field(default_factory=PrecLandConfig)
    noise_px: float = NOISE_PX


def settings_for_seed(
    timeline: FaultTimeline, seed: int, profile: str = "px4", pad_speed_m_s: float = 0.0
) -> PrecLandSettings:
    """The seed places the pad (1.5..3.5 m from the start, any direction) and draws the
    autopilot's telemetry lag; the timeline's own seed is the faults'. A moving pad drives any
    heading, passing 0.5..1.5 m beside the start point ``CROSSING_S`` after it (in view while
    the links lock), and is followed at up to twice its speed (at least 1.5 m/s)."""
    rng = random.Random(seed)
    distance_m, angle = rng.uniform(1.5, 3.5), rng.uniform(-math.pi, math.pi)
    pad = (distance_m * math.cos(angle), distance_m * math.sin(angle), 0.0)
    heading, beside = rng.uniform(-math.pi, math.pi), rng.uniform(0.5, 1.5)
    velocity = (pad_speed_m_s * math.cos(heading), pad_speed_m_s * math.sin(heading), 0.0)
    if pad_speed_m_s > 0:
        pad = (
            -velocity[0] * CROSSING_S - beside * math.sin(heading),
            -velocity[1] * CROSSING_S + beside * math.cos(heading),
            0.0,
        )
    vehicle = PrecLandConfig(
        pad_ned_m=pad,
        pad_velocity_ned_m_s=velocity,
        max_speed_m_s=max(PrecLandConfig().max_speed_m_s, 2.0 * pad_speed_m_s),
    )
    return PrecLandSettings(timeline, profile, seed, vehicle)


def host_config(link: str, profile: str) -> HostConfig:
    """``gizmo-host run``'s settings for the rig: the pty, a downward camera, the autopilot."""
    return config_from_mapping(
        {
            "serial": {"path": link},
            "publish": {"stats_interval_s": 0},
            "camera": CAMERA,
            "mavlink": {"url": f"udpin:{HOST}:0", "landing_target": profile, "rate_hz": 20.0},
        }
    )


class PadSource:
    """The board's view: the pad through the emulator's camera from the vehicle's true pose,
    its centre off by a detector's noise (``noise_px``, Gaussian, seeded)."""

    def __init__(self, vehicle: PrecLandVehicle, *, noise_px: float = 0.0, seed: int = 0) -> None:
        self._vehicle = vehicle
        self._noise = (noise_px * 2000 / WIDTH_PX, noise_px * 2000 / HEIGHT_PX)  # box units
        self._random = random.Random(seed)
        self._camera = Pinhole.from_table(
            WIDTH_PX, HEIGHT_PX, hfov_deg=HFOV_DEG, mount_rpy_deg=MOUNT_RPY_DEG
        )
        self.seen = self.unseen = 0

    def detections(self, capture_ns: int, t_s: float) -> Sequence[TargetInView]:
        truth = self._vehicle.truth(capture_ns)
        pose = camera_pose(self._camera, truth.position_ned_m, truth.quaternion_wxyz)
        pad = self._vehicle.pad_at(capture_ns)
        box = project_box(self._camera, pose, pad, PAD_HALF_EXTENT_M)
        if box is None:
            self.unseen += 1
            return ()
        self.seen += 1
        if self._noise[0] > 0:
            box = clamp_box(
                NormBox(
                    round(box.center_x + self._random.gauss(0.0, self._noise[0])),
                    round(box.center_y + self._random.gauss(0.0, self._noise[1])),
                    box.width,
                    box.height,
                )
            )
        return (TargetInView(PAD_NAME, box, 95),)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def stats(self) -> dict[str, Any]:
        return {"kind": "precland pad", "seen": self.seen, "unseen": self.unseen}


class PrecLandRig:
    """Builds every part on a :class:`Rig` (nothing bound until :meth:`start`): the host, the
    board seeing the pad, the autopilot stand-in and the vehicle's steps, which end the run
    once it has landed."""

    def __init__(self, settings: PrecLandSettings, workdir: Path) -> None:
        self.settings = settings
        self.rig = Rig(workdir)
        self.link = self.rig.link
        self.scheduler = LoopScheduler()
        self.vehicle = PrecLandVehicle(settings.vehicle, self.scheduler.now_ns())
        self.host = self.rig.add_host(Host.in_rig(host_config(self.link, settings.profile)))
        self.world = self.host.world
        emulate = load_settings(
            None, {"emulate": {"classes": {PAD_NAME: "PEDESTRIAN"}, "default_class": False}}
        )
        self.source = PadSource(self.vehicle, noise_px=settings.noise_px, seed=settings.seed)
        self.board = self.rig.add_board(emulate, settings.timeline, self.source)
        self.autopilot: StandinAutopilot | None = None
        self.verdict: Decision | None = None  # the host's latest world verdict
        self._hold_since_ns: int | None = None
        # Controller steps that descended while the world HOLDed for longer than the link can
        # tell the autopilot (its lag, a step): must be 0; and all such steps, for the record.
        self.descents_on_hold = 0
        self.descents_as_hold_began = 0
        # The world's PROCEED -> HOLD turns before touchdown, each by its reasons ("+"-joined)
        self.world_holds: Counter[str] = Counter()
        assert self.world is not None  # host_config sets [camera]
        self.world.add_listener(self._on_snapshot)
        self.rig.add_task("autopilot", self._autopilot)
        self.rig.add_task("landing", self._land, ends="run")

    async def _autopilot(self) -> None:
        """The stand-in autopilot, on the port the host's ``[mavlink]`` link opened."""
        link = self.host.mavlink
        assert link is not None  # host_config sets [mavlink]
        transport = link.transport
        if not await poll(self.scheduler, lambda: transport.local_port is not None, 5.0, 0.005):
            raise ServiceFailed("precland: the host's MAVLink port did not open")
        self.autopilot = StandinAutopilot(
            f"udpout:{HOST}:{link.transport.local_port}",
            self.vehicle.truth,
            skew_ppm=SKEW_PPM,
            lag_ms=LAG_MS,
            seed=self.settings.seed,
            on_landing_target=self.vehicle.on_target,
        )
        await self.autopilot.run()

    def _on_snapshot(self, snapshot: WorldSnapshot) -> None:
        if snapshot.verdict is Decision.HOLD and self.verdict is not Decision.HOLD:
            self._hold_since_ns = snapshot.host_ns
            if self.verdict is Decision.PROCEED and self.vehicle.landed_ns is None:
                self.world_holds["+".join(r.value for r in snapshot.reasons)] += 1
        elif snapshot.verdict is Decision.PROCEED:
            self._hold_since_ns = None
        self.verdict = snapshot.verdict

    async def _land(self) -> None:
        """The vehicle's steps on the scheduler until touchdown, then ``LANDED_GRACE_S``."""
        scheduler, step_ns = self.scheduler, round(self.vehicle.config.step_s * 1e9)
        due_ns = scheduler.now_ns()
        while True:
            await scheduler.sleep_until_ns(due_ns)
            now = scheduler.now_ns()
            descents = self.vehicle.counts["descent_steps"]
            self.vehicle.step(now)
            since = self._hold_since_ns
            if self.vehicle.counts["descent_steps"] > descents and since is not None:
                if now - since > HOLD_NEWS_NS:
                    self.descents_on_hold += 1
                else:
                    self.descents_as_hold_began += 1
            if self.vehicle.landed_ns is not None:
                await scheduler.sleep_until_ns(now + round(LANDED_GRACE_S * 1e9))
                return
            due_ns = max(due_ns + step_ns, now + 1)

    async def start(self) -> None:
        await self.rig.start()

    async def wait(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set or the vehicle has landed; a failed part raises
        :class:`RigFailed`."""
        await self.rig.wait(stop)

    async def stop(self) -> None:
        await self.rig.stop()

    def status(self) -> dict[str, Any]:
        """One line's worth: phase, height, the error now, what the host sent."""
        now = self.scheduler.now_ns()
        truth = self.vehicle.truth(now)
        pad = self.vehicle.pad_at(now)
        p = truth.position_ned_m
        link = self.host.mavlink
        sender = None if link is None else link.sender
        return {
            "t_s": round((now - self.vehicle.start_ns) / 1e9, 1),
            "phase": self.vehicle.phase.value,
            "height_m": round(self.vehicle.height_m(now), 2),
            "offset_m": round(((p[0] - pad[0]) ** 2 + (p[1] - pad[1]) ** 2) ** 0.5, 3),
            "targets_sent": 0 if sender is None else sender.sent,
            "clock": None if link is None else link.session.estimator.status.value,
        }

    def summary(self) -> dict[str, Any]:
        """The stand-in's verdict on the landing, and the host's side of it."""
        link = self.host.mavlink
        host: dict[str, Any] = {}
        if link is not None:
            host = link.stats()["mavlink"]
            host = {
                "landing_target": host.get("landing_target"),
                "timesync": host["timesync"],
                "pose": host["pose"],
            }
        autopilot = self.autopilot
        return {
            "type": "precland_summary",
            "profile": self.settings.profile,
            "faults": len(self.settings.timeline.faults),
            "seed": self.settings.seed,
            "pad_speed_m_s": round(math.hypot(*self.settings.vehicle.pad_velocity_ned_m_s), 3),
            **self.vehicle.summary(),
            "descents_on_hold": self.descents_on_hold,
            "descents_as_hold_began": self.descents_as_hold_began,
            "world_holds": dict(self.world_holds),
            "autopilot": None
            if autopilot is None
            else {
                "landing_targets": len(autopilot.landing_targets),
                "px4_timesync_offset_ms": None
                if autopilot.px4_offset_ns is None
                else round(autopilot.px4_offset_ns / 1e6, 3),
            },
            "host": host,
            "board": {"pad_seen": self.source.seen, "pad_unseen": self.source.unseen},
        }


async def run(
    settings: PrecLandSettings,
    duration_s: float | None,
    on_status: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """``gizmo-host demo --scenario precland``: one landing in a temporary directory (the
    pty), until touchdown, ``duration_s`` or SIGINT/SIGTERM; returns the summary."""
    stop = asyncio.Event()
    restore = add_stop_handlers(asyncio.get_running_loop(), stop.set)
    try:
        with tempfile.TemporaryDirectory(prefix="gizmo-precland-") as workdir:
            return await play(settings, Path(workdir), duration_s, stop, on_status)
    finally:
        restore()


async def play(
    settings: PrecLandSettings,
    workdir: Path,
    duration_s: float | None,
    stop: asyncio.Event,
    on_status: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run one landing until touchdown, ``duration_s`` or ``stop``; return the summary."""
    rig = PrecLandRig(settings, workdir)
    timer = None if duration_s is None else call_after(rig.scheduler, duration_s, stop.set)
    status: asyncio.Task[None] | None = None
    try:
        await rig.start()
        if on_status is not None:
            status = asyncio.create_task(_status(rig, on_status), name="precland status")
        await rig.wait(stop)
    finally:
        if status is not None:
            status.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await status
        await rig.stop()
        if timer is not None:
            timer.cancel()
    return rig.summary()


async def _status(rig: PrecLandRig, on_status: Callable[[dict[str, Any]], None]) -> None:
    while True:
        await rig.scheduler.sleep(1.0)
        on_status(rig.status())
