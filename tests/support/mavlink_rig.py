"""A host session and a stand-in autopilot over loopback UDP, for the MAVLink tests."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence

from fusion import PoseSample
from fusion.geometry import quat_from_euler_zyx
from gizmo_host.mavlink import AutopilotSession, MavlinkPoseSource, MavlinkTransport, parse_url
from gizmo_host.mavlink.session import DEFAULT_STREAMS
from gizmo_host.rigs.autopilot.standin import StandinAutopilot, VehicleTruth
from gizmo_host.timing import LoopScheduler

DEADLINE_S = 10.0


def circling(t_ns: int) -> VehicleTruth:
    """10 m up, a 2 m circle at 0.5 rad/s, yawing and rocking a few degrees."""
    s = t_ns / 1e9
    w = 0.5
    position = (2.0 * math.cos(w * s), 2.0 * math.sin(w * s), -10.0)
    velocity = (-2.0 * w * math.sin(w * s), 2.0 * w * math.cos(w * s), 0.0)
    q = quat_from_euler_zyx(0.08 * math.sin(1.3 * s), 0.06 * math.cos(0.9 * s), 0.4 * s)
    return VehicleTruth(position, velocity, q)


async def until(predicate: Callable[[], bool], timeout: float = DEADLINE_S) -> None:
    """Wait for ``predicate`` with a deadline (checked every few ms of the loop's time)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached before the deadline")
        await asyncio.sleep(0.005)


class Rig:
    def __init__(self, session, transport, pose_source, standin, poses) -> None:
        self.session: AutopilotSession = session
        self.transport: MavlinkTransport = transport
        self.pose_source: MavlinkPoseSource = pose_source
        self.standin: StandinAutopilot = standin
        self.poses: list[PoseSample] = poses


@contextlib.asynccontextmanager
async def rig(
    vehicle: Callable[[int], VehicleTruth] = circling,
    *,
    streams: Sequence[int] = DEFAULT_STREAMS,
    on_pose: Callable[[PoseSample], None] | None = None,
    **standin: object,
) -> AsyncIterator[Rig]:
    scheduler = LoopScheduler()
    holder: list[MavlinkTransport] = []
    session = AutopilotSession(
        lambda data, to: bool(holder[0].send(data, to)), scheduler, streams=streams
    )
    poses: list[PoseSample] = []

    def pose(p: PoseSample) -> None:
        poses.append(p)
        if on_pose is not None:
            on_pose(p)

    source = MavlinkPoseSource(session, pose)
    transport = MavlinkTransport(parse_url("udpin:127.0.0.1:0"), session.feed)
    holder.append(transport)
    tasks = [asyncio.ensure_future(transport.run())]
    try:
        await until(lambda: transport.local_port is not None)
        autopilot = StandinAutopilot(
            f"udpout:127.0.0.1:{transport.local_port}",
            vehicle,
            **standin,  # type: ignore[arg-type]
        )
        tasks.append(asyncio.ensure_future(autopilot.run()))
        session.start()
        yield Rig(session, transport, source, autopilot, poses)
    finally:
        session.stop()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
