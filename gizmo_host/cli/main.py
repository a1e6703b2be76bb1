"""``gizmo-host`` command line: one subcommand per module, each with ``add_arguments`` and ``run``.

Adding a command is one line in ``SUBCOMMANDS``; the modules stay independent of each other.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from gizmo_host.live.stop_signals import install_interrupt_deadline

# name -> (module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": (
        "gizmo_host.cli.demo",
        "the whole loop live with no hardware: stand-in, emulated board, host, world model",
    ),
    "run": ("gizmo_host.cli.run", "run the live serial link and publish JSON Lines"),
    "emulate": ("gizmo_host.cli.emulate", "emulate the board on a pty or device, with faults"),
    "record": ("gizmo_host.cli.record", "run the live link and record it all in an MCAP file"),
    "replay": (
        "gizmo_host.cli.replay",
        "play an MCAP capture into a pty and UDP, or through the pipeline (--offline)",
    ),
    "install": (
        "gizmo_host.deploy.install",
        "install the udev rule, systemd unit and default config",
    ),
    "uninstall": ("gizmo_host.deploy.uninstall", "remove what `gizmo-host install` installed"),
    "udev-rule": (
        "gizmo_host.deploy.udev_rule",
        "print the udev rule for one board (serial or UART)",
    ),
    "rfly": (
        "rfly_link.cli",
        "receive RflySim sensors, CopterSim and RflySim3D data as JSON Lines",
    ),
    "fleet": (
        "gizmo_host.cli.fleet",
        "every vehicle publishing on Zenoh: a live table, or JSON Lines (--json)",
    ),
    "foxglove-layout": (
        "gizmo_host.cli.foxglove_layout",
        "print the Foxglove layout for the live view and captures (Import from file...)",
    ),
    "doctor": (
        "gizmo_host.cli.doctor",
        "diagnose the board's link, the simulator, the autopilot and the service",
    ),
    "certify": (
        "gizmo_host.cli.certify",
        "HIL certification: fault matrix x scenarios x seeds through the real host, a report",
    ),
    "sim": (
        "gizmo_host.cli.sim",
        "a RflySim stand-in: a scripted scenario sent over UDP with its ground truth",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gizmo-host", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module_name)
        importlib.import_module(module_name).add_arguments(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    restore = install_interrupt_deadline()  # Ctrl-C ends every command within a second
    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
