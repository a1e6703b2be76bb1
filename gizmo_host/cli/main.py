"""``gizmo-host`` command line: one subcommand per module, each with ``add_arguments`` and ``run``.

Adding a command is one line in ``SUBCOMMANDS``; the modules stay independent of each other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from gizmo_host.cli import (
    certify,
    demo,
    doctor,
    emulate,
    fleet,
    foxglove_layout,
    record,
    replay,
    run,
    sim,
)
from gizmo_host.cli import rfly as rfly_cli
from gizmo_host.deploy import install, udev_rule, uninstall
from gizmo_host.live.stop_signals import install_interrupt_deadline

# name -> (module, one-line help). Each module defines add_arguments(parser) and run(args) -> int.
SUBCOMMANDS: dict[str, tuple[ModuleType, str]] = {
    "demo": (
        demo,
        "the whole loop live with no hardware: stand-in, emulated board, host, world model",
    ),
    "run": (run, "run the live serial link and publish JSON Lines"),
    "emulate": (emulate, "emulate the board on a pty or device, with faults"),
    "record": (record, "run the live link and record it all in an MCAP file"),
    "replay": (
        replay,
        "play an MCAP capture into a pty and UDP, or through the pipeline (--offline)",
    ),
    "install": (install, "install the udev rule, systemd unit and default config"),
    "uninstall": (uninstall, "remove what `gizmo-host install` installed"),
    "udev-rule": (udev_rule, "print the udev rule for one board (serial or UART)"),
    "rfly": (rfly_cli, "receive RflySim sensors, CopterSim and RflySim3D data as JSON Lines"),
    "fleet": (
        fleet,
        "every vehicle publishing on Zenoh: a live table, or JSON Lines (--json)",
    ),
    "foxglove-layout": (
        foxglove_layout,
        "print the Foxglove layout for the live view and captures (Import from file...)",
    ),
    "doctor": (
        doctor,
        "diagnose the board's link, the simulator, the autopilot and the service",
    ),
    "certify": (
        certify,
        "HIL certification: fault matrix x scenarios x seeds through the real host, a report",
    ),
    "sim": (sim, "a RflySim stand-in: a scripted scenario sent over UDP with its ground truth"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gizmo-host", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        sub_parser.set_defaults(_module=module)
        module.add_arguments(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    restore = install_interrupt_deadline()  # Ctrl-C ends every command within a second
    try:
        return int(args._module.run(args) or 0)
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
