"""``gizmo-host demo``: the whole loop with no hardware, and the world model it produces, live.

One process, one asyncio loop (:mod:`gizmo_host.rigs.demo.scene_rig`, run by
:mod:`gizmo_host.rigs.demo.play`): the RflySim stand-in flies a
scenario and sends its TypeID 30 boxes, the emulated board turns them into VISION_RESULT frames
on a pty, and the host reads the pty and fuses the frames with the stand-in's odometry into
``world`` snapshots. The terminal shows the newest one (:mod:`gizmo_host.cli.demo_table`, or a
plain line without rich); ``--json`` prints every snapshot as JSON Lines instead, exactly as
``gizmo-host run`` does. ``--faults`` plays the built-in fault timeline (``--faults FILE``: a
``gizmo-host emulate --faults`` timeline). It runs for ``--duration`` seconds or until
Ctrl-C/SIGTERM, then prints a summary (stderr, one JSON line, with ``--json``) and exits 0.
A bad option is one line on stderr and exit status 2. ``--protocol`` runs the older
walkthrough of the frame codec instead (:mod:`gizmo_host.rigs.demo.codec_walkthrough`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.app.foxglove_view import add_foxglove_flag, check_listen
from gizmo_host.app.settings import default
from gizmo_host.cli.common import EXIT_USAGE, add_log_level, require_extra, setup_logging
from gizmo_host.cli.flags import UsageError, integer, number
from gizmo_host.errors import ServiceFailed
from gizmo_host.jsonl import json_text
from gizmo_host.live import event_loop
from gizmo_host.live.stop_signals import add_stop_handlers
from gizmo_host.publish.sinks import stdout_sink
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.demo import codec_walkthrough as demo_protocol
from gizmo_host.rigs.demo.play import BUILTIN, play, timeline_for
from gizmo_host.rigs.demo.scene_rig import DemoSettings
from gizmo_host.rigs.demo.view import PlainView, View
from gizmo_host.rigs.rflysim.scenario import SCENARIOS
from gizmo_host.rigs.rig import RigFailed
from gizmo_host.timing import LoopScheduler, call_after

LOGGER = logging.getLogger("gizmo_host.demo")
PRECLAND = "precland"  # the MAVLink precision landing (gizmo_host.rigs.demo.precland)
_SCENARIOS = (*SCENARIOS, PRECLAND)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Values stay text and are checked by parse_options(): one line naming the flag.
    parser.add_argument("--duration", metavar="S", help="stop after S seconds (default: Ctrl-C)")
    parser.add_argument(
        "--faults",
        nargs="?",
        const=BUILTIN,
        metavar="FILE",
        help="inject faults: the built-in timeline, or a TOML timeline as for emulate --faults",
    )
    parser.add_argument("--seed", metavar="N", help="the faults' seed (--protocol: the stream's)")
    parser.add_argument(
        "--scenario", default="orbit", help=f"{' | '.join(_SCENARIOS)} (default orbit)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print world snapshots as JSON Lines, not the table"
    )
    parser.add_argument(
        "--protocol", action="store_true", help="decode the spec's frame and a noisy stream"
    )
    add_foxglove_flag(parser)
    parser.add_argument("--frames", metavar="N", help="--protocol: frames in the noisy stream")
    parser.add_argument(
        "--zenoh",
        action="store_true",
        help="the vehicles on Zenoh, through a router, and a fleet view",
    )
    parser.add_argument("--vehicles", metavar="N", help="--zenoh: how many (default 3)")
    parser.add_argument(
        "--pad-speed", metavar="M_S", help="--scenario precland: the pad drives at M_S m/s"
    )
    add_log_level(parser)


@dataclass(frozen=True, slots=True)
class Options:
    duration_s: float | None
    faults: str | None  # BUILTIN, a file, or None
    seed: int | None
    scenario: str
    json: bool
    protocol: bool
    frames: int | None
    vehicles: int | None = None  # --zenoh: the fleet demo
    foxglove: str | None = None  # HOST:PORT of the Foxglove view
    pad_speed_m_s: float = 0.0  # --scenario precland: a moving pad


def parse_options(args: argparse.Namespace) -> Options:
    """Check every value of ``args``; raises :class:`UsageError` for the first bad one."""
    duration = None
    if args.duration is not None:
        try:
            duration = float(args.duration)
        except ValueError:
            duration = math.nan
        if not (math.isfinite(duration) and 0 < duration <= 1e7):
            raise UsageError(f"--duration: expected seconds > 0, got {args.duration!r}")
    if args.scenario not in _SCENARIOS:
        raise UsageError(
            f"--scenario: expected one of {', '.join(_SCENARIOS)}, got {args.scenario!r}"
        )
    seed = None if args.seed is None else integer("--seed", args.seed, 0, 2**63 - 1)
    frames = None if args.frames is None else integer("--frames", args.frames, 1, 100_000)
    if not args.protocol:
        if frames is not None:
            raise UsageError("--frames: only with --protocol")
    elif args.faults is not None or args.duration is not None or args.scenario != "orbit":
        raise UsageError("--protocol: takes only --frames, --seed and --json")
    vehicles = None
    if args.zenoh:
        vehicles = 3 if args.vehicles is None else integer("--vehicles", args.vehicles, 1, 20)
    elif args.vehicles is not None:
        raise UsageError("--vehicles: only with --zenoh")
    pad_speed = 0.0
    if getattr(args, "pad_speed", None) is not None:
        if args.scenario != PRECLAND:
            raise UsageError("--pad-speed: only with --scenario precland")
        pad_speed = number("--pad-speed", args.pad_speed, what="a speed in m/s")
        if pad_speed > 10.0:
            raise UsageError(f"--pad-speed: expected at most 10 m/s, got {args.pad_speed!r}")
    foxglove = None
    if getattr(args, "foxglove__enabled", None):
        foxglove = getattr(args, "foxglove__listen", None) or default("foxglove.listen")
        try:
            check_listen(foxglove)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    return Options(
        duration,
        args.faults,
        seed,
        args.scenario,
        args.json,
        args.protocol,
        frames,
        vehicles,
        foxglove,
        pad_speed,
    )


def run(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args)
    except UsageError as exc:
        print(f"gizmo-host demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.protocol:
        return demo_protocol.run(
            options.frames or demo_protocol.DEFAULT_FRAMES,
            demo_protocol.DEFAULT_SEED if options.seed is None else options.seed,
            options.json,
        )
    try:
        timeline = timeline_for(options.faults, options.duration_s, options.seed)
    except ConfigError as exc:
        print(f"gizmo-host demo: --faults: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if options.vehicles is not None:
        return _fleet(options, timeline, args.log_level)
    view = None if options.json else _table_view(timeline)
    setup_logging(args.log_level)
    if options.scenario == PRECLAND:
        return _precland(options, timeline)
    settings = DemoSettings(options.scenario, timeline, options.foxglove)
    try:
        with tempfile.TemporaryDirectory(prefix="gizmo-demo-") as workdir:
            loop = event_loop.resolve("auto")
            faults = "none" if options.faults is None else (options.faults or "built-in")
            running = play(
                settings, Path(workdir), view, duration_s=options.duration_s, faults=faults
            )
            data = event_loop.run(running, loop)
    except OSError as exc:  # a port taken between the pick and the bind, a pty refused
        print(f"gizmo-host demo: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RigFailed, ServiceFailed) as exc:  # ServiceFailed: the Foxglove port is taken
        print(f"gizmo-host demo: failed: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # --foxglove without the extra
        print(f"gizmo-host demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if view is None:
        print(json_text(data), file=sys.stderr, flush=True)
    else:
        view.final(data)
    return 0


def _fleet(options: Options, timeline: FaultTimeline, log_level: str) -> int:
    """``--zenoh``: the vehicles on Zenoh and the fleet view
    (``gizmo_host.rigs.demo.fleet_rigs``)."""
    try:
        require_extra("zenoh", "--zenoh")
    except ConfigError as exc:
        print(f"gizmo-host demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from gizmo_host.cli.fleet_table import FleetTable  # noqa: PLC0415
    from gizmo_host.rigs.demo.fleet_rigs import play_fleet  # noqa: PLC0415 - the zenoh extra

    setup_logging(log_level)
    table = None if options.json else FleetTable()

    async def main(workdir: Path) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        restore = add_stop_handlers(loop, stop.set)
        if options.duration_s is not None:
            call_after(LoopScheduler(), options.duration_s, stop.set)
        out = None if table is not None else stdout_sink()

        def report(rows: list[Any]) -> None:
            if table is not None:
                table.update(rows)
            elif out is not None:
                for row in rows:
                    out.send(row.to_json_line())

        settings = DemoSettings(options.scenario, timeline)
        try:
            with table or contextlib.nullcontext():
                assert options.vehicles is not None
                return await play_fleet(options.vehicles, settings, workdir, stop, report)
        finally:
            if out is not None:
                await out.close()
            restore()

    try:
        with tempfile.TemporaryDirectory(prefix="gizmo-demo-") as workdir:
            data = event_loop.run(main(Path(workdir)), event_loop.resolve("auto"))
    except OSError as exc:
        print(f"gizmo-host demo: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except RigFailed as exc:
        print(f"gizmo-host demo: failed: {exc}", file=sys.stderr)
        return 1
    print(json_text(data), file=sys.stderr, flush=True)
    return 0


def _table_view(timeline: FaultTimeline) -> View:
    try:
        require_extra("demo", "the live table")
    except ConfigError as exc:
        print(f"gizmo-host demo: {exc}; a plain status line every second instead", file=sys.stderr)
        return PlainView(sys.stdout)
    from gizmo_host.cli.demo_table import RichView  # noqa: PLC0415 - the demo extra

    return RichView(scheduled=frozenset(f.kind.value for f in timeline.faults))


def _precland(options: Options, timeline: FaultTimeline) -> int:
    """The precision landing (:mod:`gizmo_host.rigs.demo.precland`): a status line a second on
    stdout (none with --json), then the summary (stdout; stderr with --json)."""
    from gizmo_host.rigs.demo import precland  # noqa: PLC0415 - the mavlink extra

    settings = precland.settings_for_seed(
        timeline, options.seed or 0, pad_speed_m_s=options.pad_speed_m_s
    )
    status = None if options.json else (lambda line: print(json_text(line), flush=True))
    try:
        data = event_loop.run(
            precland.run(settings, options.duration_s, status), event_loop.resolve("auto")
        )
    except OSError as exc:
        print(f"gizmo-host demo: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RigFailed, ServiceFailed) as exc:
        print(f"gizmo-host demo: failed: {exc}", file=sys.stderr)
        return 1
    print(json_text(data), file=sys.stderr if options.json else sys.stdout, flush=True)
    return 0
