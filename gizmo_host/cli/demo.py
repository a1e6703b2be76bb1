"""``gizmo-host demo``: the whole loop with no hardware, and the world model it produces, live.

One process, one asyncio loop (:mod:`gizmo_host.app.demo_rig`, run by
:mod:`gizmo_host.app.demo_play`): the RflySim stand-in flies a
scenario and sends its TypeID 30 boxes, the emulated board turns them into VISION_RESULT frames
on a pty, and the host reads the pty and fuses the frames with the stand-in's odometry into
``world`` snapshots. The terminal shows the newest one (:mod:`gizmo_host.cli.demo_table`, or a
plain line without rich); ``--json`` prints every snapshot as JSON Lines instead, exactly as
``gizmo-host run`` does. ``--faults`` plays the built-in fault timeline (``--faults FILE``: a
``gizmo-host emulate --faults`` timeline). It runs for ``--duration`` seconds or until
Ctrl-C/SIGTERM, then prints a summary (stderr, one JSON line, with ``--json``) and exits 0.
A bad option is one line on stderr and exit status 2. ``--protocol`` runs the older
walkthrough of the frame codec instead (:mod:`gizmo_host.app.demo_protocol`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gizmo_host.app import demo_protocol
from gizmo_host.app.demo_play import BUILTIN, play, timeline_for
from gizmo_host.app.demo_rig import DemoFailed, DemoSettings
from gizmo_host.app.demo_view import PlainView, View
from gizmo_host.emulator.faults import FaultTimeline
from gizmo_host.errors import ConfigError
from gizmo_host.live import event_loop
from gizmo_host.standin.scenario import SCENARIOS
from rfly_link.flags import UsageError, integer

EXIT_USAGE = 2
LOGGER = logging.getLogger("gizmo_host.demo")


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
        "--scenario", default="orbit", help=f"{' | '.join(SCENARIOS)} (default orbit)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print world snapshots as JSON Lines, not the table"
    )
    parser.add_argument(
        "--protocol", action="store_true", help="decode the spec's frame and a noisy stream"
    )
    parser.add_argument("--frames", metavar="N", help="--protocol: frames in the noisy stream")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )


@dataclass(frozen=True, slots=True)
class Options:
    duration_s: float | None
    faults: str | None  # BUILTIN, a file, or None
    seed: int | None
    scenario: str
    json: bool
    protocol: bool
    frames: int | None


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
    if args.scenario not in SCENARIOS:
        raise UsageError(
            f"--scenario: expected one of {', '.join(SCENARIOS)}, got {args.scenario!r}"
        )
    seed = None if args.seed is None else integer("--seed", args.seed, 0, 2**63 - 1)
    frames = None if args.frames is None else integer("--frames", args.frames, 1, 100_000)
    if not args.protocol:
        if frames is not None:
            raise UsageError("--frames: only with --protocol")
    elif args.faults is not None or args.duration is not None or args.scenario != "orbit":
        raise UsageError("--protocol: takes only --frames, --seed and --json")
    return Options(duration, args.faults, seed, args.scenario, args.json, args.protocol, frames)


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
    view = None if options.json else _table_view(timeline)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    settings = DemoSettings(options.scenario, timeline)
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
    except DemoFailed as exc:
        print(f"gizmo-host demo: failed: {exc}", file=sys.stderr)
        return 1
    if view is None:
        print(json.dumps(data, sort_keys=False), file=sys.stderr, flush=True)
    else:
        view.final(data)
    return 0


def _table_view(timeline: FaultTimeline) -> View:
    try:
        from gizmo_host.cli.demo_table import RichView  # noqa: PLC0415 - optional extra
    except ImportError:
        print(
            "gizmo-host demo: rich is not installed (pip install 'gizmo-host[demo]'): "
            "a plain status line every second instead of the table",
            file=sys.stderr,
        )
        return PlainView(sys.stdout)
    return RichView(scheduled=frozenset(f.kind.value for f in timeline.faults))
