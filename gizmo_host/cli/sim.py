"""``gizmo-host sim``: a RflySim stand-in on loopback UDP, following a scripted scenario.

It sends what CopterSim and RflySim3D send, on their ports (:mod:`rfly_link.ports`): the ego's
and the other vehicles' 168-byte states, each vehicle's heartbeat (20005), the gimbal status
(20006) and the Config.json sensors it simulates (distance, TypeID 30 boxes, LiDAR), and it
answers odometry and IMU requests on each vehicle's control port. ``--truth`` writes the ground
truth as JSON Lines (stdout with ``-``). ``--mirror-offset N`` also sends every vehicle state to
its port + N, so ``gizmo-host emulate --ego ... --port-offset N`` hears them beside ``gizmo-host
run``, which binds the ego's state port. ``--mavlink`` also plays the ego's PX4 over MAVLink
(:mod:`gizmo_host.rigs.autopilot.beside_sim`). It runs for ``--duration`` seconds or until Ctrl-C,
then prints its counters on stderr as one JSON line and exits 0; a bad option, file or bind is
one line on stderr and exit status 2. Registered in ``gizmo_host.cli.SUBCOMMANDS`` as ``sim``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

from gizmo_host.cli.common import EXIT_USAGE
from gizmo_host.cli.flags import UsageError
from gizmo_host.cli.sim_options import (
    RATE_NAMES,
    banner,
    parse_options,
    stats_line,
    truth_writer,
)
from gizmo_host.jsonl import json_text
from gizmo_host.rigs.rflysim.core import StandIn
from gizmo_host.rigs.rflysim.scenario import SCENARIOS, build_scenario
from gizmo_host.rigs.rflysim.sensorset import builtin_config_text
from gizmo_host.rigs.rflysim.sim_runner import SimRunner


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Values stay text and are checked by parse_options(): one line naming the flag, no usage.
    parser.add_argument(
        "--scenario", default="orbit", help=f"{' | '.join(SCENARIOS)} (default orbit)"
    )
    parser.add_argument("--duration", default="0", metavar="S", help="seconds (0: until Ctrl-C)")
    parser.add_argument(
        "--host", default="127.0.0.1", metavar="IPV4", help="send to (default 127.0.0.1)"
    )
    parser.add_argument(
        "--bind",
        default=None,
        metavar="IPV4",
        help="listen for requests on (default: --host if loopback, else 0.0.0.0)",
    )
    parser.add_argument("--copter", default="1", metavar="ID", help="the ego's CopterID (1)")
    parser.add_argument(
        "--config", default=None, metavar="PATH", help="RflySim Config.json (default: built-in)"
    )
    parser.add_argument(
        "--write-config",
        default=None,
        metavar="PATH",
        help="write the built-in Config.json (for gizmo-host rfly --config) and run",
    )
    parser.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="NAME=HZ",
        help=f"a stream's rate, 0 for off (repeatable): {', '.join(RATE_NAMES)}",
    )
    parser.add_argument("--sim-start", default="0", metavar="S", help="simulation time at start")
    parser.add_argument(
        "--target-speed", default=None, metavar="M_S", help="--scenario track: its speed (3)"
    )
    parser.add_argument(
        "--target-turn-rate",
        default=None,
        metavar="DEG_S",
        help="--scenario track: its turn rate, + clockwise seen from above (8.6; 0: straight)",
    )
    parser.add_argument(
        "--time-jump",
        default=None,
        metavar="AT:BY",
        help="simulation time jumps BY seconds at scenario time AT (odometry flags it)",
    )
    parser.add_argument(
        "--camera", default=None, metavar="TOML", help="a file with a [camera] table: bearings"
    )
    parser.add_argument(
        "--mirror-offset",
        default="0",
        metavar="N",
        help="also send each vehicle state to its port + N, for gizmo-host emulate "
        "--port-offset N beside gizmo-host run (default 0: off)",
    )
    parser.add_argument(
        "--mavlink",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="also play the ego's autopilot over MAVLink (the mavlink extra), as CopterSim "
        "relays PX4: listen on 20100+2N-2, send to --host:20100+2N-1 (or URL)",
    )
    parser.add_argument(
        "--truth",
        nargs="?",
        const="-",
        default=None,
        metavar="PATH",
        help="ground truth as JSON Lines to PATH (stdout without one, or with -)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args)
    except UsageError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.write_config is not None:
        try:
            Path(options.write_config).write_text(builtin_config_text(options.host, options.ego_id))
        except OSError as exc:
            print(f"sim: --write-config: {exc.strerror}: {options.write_config}", file=sys.stderr)
            return EXIT_USAGE
    scenario = build_scenario(
        options.scenario, ego_id=options.ego_id, time=options.time, target=options.target
    )
    try:
        stand_in = StandIn(
            scenario,
            host=options.host,
            config=options.config,
            rates=options.rates,
            camera=options.camera,
            mirror_offset=options.mirror_offset,
        )
    except ValueError as exc:  # the mirrored ports leave the port range
        print(f"sim: --mirror-offset: {str(exc).removeprefix('mirror_offset: ')}", file=sys.stderr)
        return EXIT_USAGE
    print(json_text(banner(options, stand_in)), file=sys.stderr, flush=True)
    with contextlib.ExitStack() as stack:
        sink = None
        if options.truth is not None:
            try:
                out = (
                    sys.stdout
                    if options.truth == "-"
                    else stack.enter_context(open(options.truth, "w", encoding="utf-8"))
                )
            except OSError as exc:
                print(f"sim: --truth: {exc.strerror}: {options.truth}", file=sys.stderr)
                return EXIT_USAGE
            sink = truth_writer(out)
        runner = SimRunner(stand_in, bind_host=options.bind, on_truth=sink)
        try:
            main = runner.run(options.duration_s or None)
            if options.mavlink is not None:
                from gizmo_host.rigs.autopilot.beside_sim import with_autopilot  # noqa: PLC0415 - extra

                main = with_autopilot(main, runner, options.mavlink, options.host, options.bind)
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the run; stats still print
                asyncio.run(main)
        except (OSError, ValueError) as exc:
            print(f"sim: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return EXIT_USAGE
    print(stats_line(runner), file=sys.stderr)
    return 0
