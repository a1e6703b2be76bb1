"""``gizmo-host foxglove-layout [-o FILE]``: the shipped Foxglove layout, for the app's
"Import from file..." (it names only the topics the host publishes; see docs/foxglove.md)."""

from __future__ import annotations

import argparse
import sys

from gizmo_host.foxglove.layout import layout_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="write it here (default stdout)")


def run(args: argparse.Namespace) -> int:
    text = layout_text()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    except OSError as exc:
        print(f"gizmo-host foxglove-layout: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
