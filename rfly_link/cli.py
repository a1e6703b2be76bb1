"""``gizmo-host rfly``: receive RflySim data and print one JSON object per line.

Receivers come from the options: every UDP sensor of a ``Config.json``, the CopterSim ports of
each ``--copter`` ID, and RflySim3D's port 20006. Events go to stdout as JSON Lines (point
clouds and images are summarised); receiver statistics, with drops by cause, go to stderr at
the end. Registered in ``gizmo_host.cli.SUBCOMMANDS`` as ``"rfly"``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import TextIO

from rfly_link import endpoints
from rfly_link.config import load_config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="RflySim Config.json: one receiver per UDP sensor")
    parser.add_argument(
        "--copter", type=int, action="append", default=[], help="CopterSim CopterID (repeatable)"
    )
    parser.add_argument("--rflysim3d", action="store_true", help="listen on port 20006")
    parser.add_argument("--multicast", action="store_true", help="also join 224.0.0.10 on 20006")
    parser.add_argument("--bind", default="127.0.0.1", help="local address (default 127.0.0.1)")
    parser.add_argument(
        "--allow", action="append", default=None, help="accept only this sender IP (repeatable)"
    )
    parser.add_argument("--count", type=int, default=0, help="stop after N events (0: never)")
    parser.add_argument("--duration", type=float, default=0.0, help="stop after S seconds")


def build_receivers(args: argparse.Namespace) -> list[endpoints.UdpReceiver]:
    common = {"host": args.bind, "allowed_senders": args.allow}
    receivers: list[endpoints.UdpReceiver] = []
    if args.config:
        receivers += endpoints.vision_sensor_receivers(load_config(args.config), **common)
    for copter_id in args.copter:
        receivers += endpoints.coptersim_receivers(copter_id, **common)
    if args.rflysim3d:
        receivers.append(endpoints.rflysim3d_receiver(multicast=args.multicast, **common))
    return receivers


async def listen(
    receivers: list[endpoints.UdpReceiver],
    *,
    count: int = 0,
    duration_s: float = 0.0,
    out: TextIO = sys.stdout,
) -> int:
    """Print events until ``count`` events or ``duration_s`` seconds; returns events printed."""
    events: asyncio.Queue[endpoints.Event] = asyncio.Queue(maxsize=1024)

    async def pump(receiver: endpoints.UdpReceiver) -> None:
        async for event in receiver:
            await events.put(event)

    printed = 0

    async def consume() -> None:
        nonlocal printed
        while not count or printed < count:
            event = await events.get()
            out.write(json.dumps(event.to_dict()) + "\n")
            out.flush()
            printed += 1

    for receiver in receivers:
        await receiver.start()
    tasks = [asyncio.create_task(pump(r), name=f"pump-{r.name}") for r in receivers]
    try:
        await asyncio.wait_for(consume(), duration_s or None)
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        pass
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for receiver in receivers:
            await receiver.close()
    return printed


def run(args: argparse.Namespace) -> int:
    receivers = build_receivers(args)
    if not receivers:
        print("rfly: nothing to listen to (use --config, --copter or --rflysim3d)", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends listening; stats still print
        asyncio.run(listen(receivers, count=args.count, duration_s=args.duration))
    for receiver in receivers:
        stats = receiver.stats._asdict()
        print(json.dumps({"receiver": receiver.name, **stats}), file=sys.stderr)
    return 0
