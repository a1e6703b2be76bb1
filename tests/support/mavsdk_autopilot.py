"""MAVSDK (the ``mavsdk`` wheel, its C++ library inside) playing the autopilot: a real MAVLink
implementation no one here wrote.

It connects out to the host's port as an autopilot component, and streams ODOMETRY in the
local NED frame through its ``MavlinkDirectServer``, stamped on the clock its TIMESYNC answers
in (MAVSDK's autopilot time is the wall clock, in µs), with the vehicle of ``truth(wall_ns)``.
With ``timesync`` it enables its own TIMESYNC on the host once it discovers it: MAVSDK then
asks every 5 s and answers the host only after the host has answered one of its requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import mavsdk
from mavsdk.plugins.mavlink_direct_server import MavlinkDirectServer, MavlinkMessage

Truth = Callable[[int], tuple[tuple[float, float, float], tuple[float, float, float]]]
PERIOD_S = 0.02
FRAME_LOCAL_NED = 1


def hovering(wall_ns: int) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Drifting north at 0.5 m/s, 10 m up: (position NED m, velocity NED m/s)."""
    t = (wall_ns % 10**12) / 1e9
    return (0.5 * t, 3.0, -10.0), (0.5, 0.0, 0.0)


class MavsdkAutopilot:
    def __init__(self, port: int, truth: Truth = hovering, *, timesync: bool = True) -> None:
        config = mavsdk.Configuration.create_with_component_type(mavsdk.ComponentType.AUTOPILOT)
        self.mavsdk = mavsdk.Mavsdk(config)
        result = self.mavsdk.add_any_connection(f"udpout://127.0.0.1:{port}")
        assert int(result) == 0, result
        self.direct = MavlinkDirectServer(self.mavsdk.server_component())
        self.truth = truth
        self.timesync = timesync
        self.sent: list[int] = []  # time_usec of every ODOMETRY sent
        self.timesync_enabled = False

    def odometry(self) -> None:
        wall_ns = time.time_ns()
        usec = wall_ns // 1000
        (x, y, z), (vx, vy, vz) = self.truth(usec * 1000)
        fields: dict[str, Any] = {
            "time_usec": usec,
            "frame_id": FRAME_LOCAL_NED,
            "child_frame_id": FRAME_LOCAL_NED,
            "x": x, "y": y, "z": z,
            "q": [1.0, 0.0, 0.0, 0.0],
            "vx": vx, "vy": vy, "vz": vz,
            "rollspeed": 0.0, "pitchspeed": 0.0, "yawspeed": 0.0,
            "pose_covariance": [0.0] * 21, "velocity_covariance": [0.0] * 21,
            "reset_counter": 0, "estimator_type": 0, "quality": 100,
        }  # fmt: skip
        message = MavlinkMessage("ODOMETRY", 1, 1, 0, 0, json.dumps(fields))
        self.direct.send_message(message)
        self.sent.append(usec)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        i = 0
        while True:
            if self.timesync and not self.timesync_enabled and self.mavsdk.system_count():
                for system in self.mavsdk.get_systems():
                    system.enable_timesync()  # the host, discovered by its heartbeat
                self.timesync_enabled = True
            self.odometry()
            i += 1
            await asyncio.sleep(max(0.0, start + i * PERIOD_S - loop.time()))

    def close(self) -> None:
        self.direct.destroy()
        self.mavsdk.destroy()


@contextlib.asynccontextmanager
async def mavsdk_autopilot(port: int, **kw: Any) -> AsyncIterator[MavsdkAutopilot]:
    autopilot = MavsdkAutopilot(port, **kw)
    task = asyncio.ensure_future(autopilot.run())
    try:
        yield autopilot
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        autopilot.close()
