"""``gizmo-host`` command line: one subcommand per module, each with ``add_arguments`` and ``run``.

Adding a command is a loader (its import, run when the command is parsed) and one line in
``SUBCOMMANDS``; the modules stay independent of each other.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from gizmo_core.native import stale_message, stale_modules
from gizmo_host.cli.flags import OneLineParser
from gizmo_host.live.stop_signals import install_interrupt_deadline

# Each command's module is imported by its loader when that command is parsed: ``run`` and
# ``replay`` never import the simulators that ``demo``, ``emulate``, ``sim`` and ``certify``
# are built on (about a third of the start-up). Each loader is a plain import statement.


def _demo() -> ModuleType:
    from gizmo_host.cli import demo  # noqa: PLC0415

    return demo


def _run() -> ModuleType:
    from gizmo_host.cli import run  # noqa: PLC0415

    return run


def _emulate() -> ModuleType:
    from gizmo_host.cli import emulate  # noqa: PLC0415

    return emulate


def _record() -> ModuleType:
    from gizmo_host.cli import record  # noqa: PLC0415

    return record


def _replay() -> ModuleType:
    from gizmo_host.cli import replay  # noqa: PLC0415

    return replay


def _install() -> ModuleType:
    from gizmo_host.deploy import install  # noqa: PLC0415

    return install


def _uninstall() -> ModuleType:
    from gizmo_host.deploy import uninstall  # noqa: PLC0415

    return uninstall


def _udev_rule() -> ModuleType:
    from gizmo_host.deploy import udev_rule  # noqa: PLC0415

    return udev_rule


def _rfly() -> ModuleType:
    from gizmo_host.cli import rfly  # noqa: PLC0415

    return rfly


def _fleet() -> ModuleType:
    from gizmo_host.cli import fleet  # noqa: PLC0415

    return fleet


def _foxglove_layout() -> ModuleType:
    from gizmo_host.cli import foxglove_layout  # noqa: PLC0415

    return foxglove_layout


def _doctor() -> ModuleType:
    from gizmo_host.cli import doctor  # noqa: PLC0415

    return doctor


def _certify() -> ModuleType:
    from gizmo_host.cli import certify  # noqa: PLC0415

    return certify


def _sim() -> ModuleType:
    from gizmo_host.cli import sim  # noqa: PLC0415

    return sim


# name -> (its module's loader, one-line help). Each module defines add_arguments(parser) and
# run(args) -> int.
SUBCOMMANDS: dict[str, tuple[Callable[[], ModuleType], str]] = {
    "demo": (
        _demo,
        "the whole loop live with no hardware: stand-in, emulated board, host, world model",
    ),
    "run": (_run, "run the live serial link and publish JSON Lines"),
    "emulate": (_emulate, "emulate the board on a pty or device, with faults"),
    "record": (_record, "run the live link and record it all in an MCAP file"),
    "replay": (
        _replay,
        "play an MCAP capture into a pty and UDP, or through the pipeline (--offline)",
    ),
    "install": (_install, "install the udev rule, systemd unit and default config"),
    "uninstall": (_uninstall, "remove what `gizmo-host install` installed"),
    "udev-rule": (_udev_rule, "print the udev rule for one board (serial or UART)"),
    "rfly": (_rfly, "receive RflySim sensors, CopterSim and RflySim3D data as JSON Lines"),
    "fleet": (
        _fleet,
        "every vehicle publishing on Zenoh: a live table, or JSON Lines (--json)",
    ),
    "foxglove-layout": (
        _foxglove_layout,
        "print the Foxglove layout for the live view and captures (Import from file...)",
    ),
    "doctor": (
        _doctor,
        "diagnose the board's link, the simulator, the autopilot and the service",
    ),
    "certify": (
        _certify,
        "HIL certification: fault matrix x scenarios x seeds through the real host, a report",
    ),
    "sim": (_sim, "a RflySim stand-in: a scripted scenario sent over UDP with its ground truth"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand with its arguments; ``command``: that one's arguments only (only its
    module is imported; any other name, or ``""``, gives the subcommands' names alone)."""
    parser = OneLineParser(prog="gizmo-host", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (load, help_text) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or command == name:
            module = load()
            sub_parser.set_defaults(_module=module)
            module.add_arguments(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    stale = stale_modules()
    if stale:  # a compiled module would run code its source no longer says
        print(f"gizmo-host: {stale_message(stale)}", file=sys.stderr)
        return 2
    # Read by OpenBLAS when numpy loads, which parsing does (the command's modules): the world
    # model's matrices are 7x7, where a BLAS worker thread never helps and spins between calls
    # (about 4 % more CPU a frame on two cores, docs/bench.md). A value already set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = build_parser(words[0] if words else "").parse_args(words)
    restore = install_interrupt_deadline()  # Ctrl-C ends every command within a second
    try:
        return int(args._module.run(args) or 0)
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
