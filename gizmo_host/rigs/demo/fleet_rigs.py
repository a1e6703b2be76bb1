"""``gizmo-host demo --vehicles N --zenoh``: N demo rigs (each its own stand-in, emulated board
and host) publishing on Zenoh through one in-process router, and one fleet view.

Everything runs on one loop in one process to stay light, but every hop is a real Zenoh
session over loopback TCP: each host's ``ZenohOutput`` is a client of the router, and so is
the fleet view. The router listens on a free port; ``gizmo-host fleet --connect`` reaches it
from another terminal while the demo runs (its endpoint is logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gizmo_host.live.event_loop import first_done
from gizmo_host.rigs.demo.scene_rig import DemoRig, DemoSettings, start_rig
from gizmo_host.rigs.free_ports import free_ports
from gizmo_host.zenoh.config import ZenohConfig
from gizmo_host.zenoh.fleet import FleetRow, FleetView
from gizmo_host.zenoh.session import open_router, open_session
from gizmo_host.zenoh.sink import ZenohOutput
from gizmo_host.zenoh.watch import FleetWatch

LOGGER = logging.getLogger(__name__)
MAX_VEHICLES = 20  # each rig is a stand-in, a board and a host on the one loop


async def play_fleet(
    count: int,
    settings: DemoSettings,
    workdir: Path,
    stop: asyncio.Event,
    report: Callable[[list[FleetRow]], None],
    ttl_ms: float = 250.0,
) -> dict[str, Any]:
    """Run ``count`` rigs and the fleet view until ``stop``; return each vehicle's counters."""
    loop = asyncio.get_running_loop()
    endpoint = f"tcp/127.0.0.1:{free_ports(1, 'tcp')[0]}"
    router = await loop.run_in_executor(None, open_router, endpoint)
    LOGGER.warning("demo fleet: router on %s (gizmo-host fleet --connect %s)", endpoint, endpoint)
    rigs: list[DemoRig] = []
    outputs: dict[str, ZenohOutput] = {}  # by vehicle: a rig built again replaces its own
    client = ZenohConfig(enabled=True, mode="client", connect=(endpoint,))
    viewer = await loop.run_in_executor(None, open_session, client)
    watch = FleetWatch(FleetView(round(ttl_ms * 1e6)), report)
    try:
        watch.start(viewer)
        for index in range(1, count + 1):
            folder = workdir / f"uav{index}"
            folder.mkdir()

            def build(folder: Path = folder) -> DemoRig:
                """A rig publishing on a Zenoh output of its own (its stop closes it)."""
                rig = DemoRig(settings, folder)
                output = ZenohOutput(
                    ZenohConfig(
                        enabled=True, mode="client", connect=(endpoint,), vehicle=folder.name
                    )
                )
                rig.host.add_output(output)
                outputs[folder.name] = output
                return rig

            rigs.append(await start_rig(build))
        waits = [asyncio.create_task(rig.wait(stop), name=f"rig {i}") for i, rig in enumerate(rigs)]
        for task in await first_done(waits):
            error = None if task.cancelled() else task.exception()
            if error is not None:
                raise error
    finally:
        watch.stop()
        for rig in rigs:
            with contextlib.suppress(Exception):
                await rig.stop()  # the host's stop closes its Zenoh output
        await loop.run_in_executor(None, viewer.close)
        await loop.run_in_executor(None, router.close)
    return {
        "router": endpoint,
        "fleet": watch.stats(),
        "vehicles": {vehicle: o.stats() for vehicle, o in outputs.items()},
        "worlds_published": [r.world.published for r in rigs],
    }
