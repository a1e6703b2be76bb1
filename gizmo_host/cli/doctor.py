"""``gizmo-host doctor``: diagnose an installation; exit 0 all ok, 1 a warning, 2 a failure
(also a usage or config mistake, in one line). The work is in :mod:`gizmo_host.doctor`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gizmo_core import ConfigError
from gizmo_host.cli.common import EXIT_USAGE
from gizmo_host.doctor.diagnose import DEFAULT_SECONDS, Options, diagnose, render_json, render_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serial",
        metavar="PATH",
        help="the board's port (default: the config's, else /dev/gizmo0)",
    )
    parser.add_argument("--config", metavar="FILE", help="the host's settings (gizmo-host.toml)")
    parser.add_argument(
        "--seconds",
        metavar="N",
        default=str(DEFAULT_SECONDS),
        help="read the stream N seconds (default 3)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object for scripts")
    parser.add_argument("--root", type=Path, default=Path("/"), help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    try:
        seconds = float(args.seconds)
        if not 0.1 <= seconds <= 60:
            raise ValueError
    except ValueError:
        print(
            f"gizmo-host doctor: --seconds: expected 0.1..60, got {args.seconds!r}", file=sys.stderr
        )
        return EXIT_USAGE
    options = Options(args.serial, args.config, seconds, args.root)
    try:
        facts, checks, code = diagnose(options)
    except ConfigError as exc:
        print(f"gizmo-host doctor: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(render_json(facts, checks, code) if args.json else render_text(checks, code))
    return code
