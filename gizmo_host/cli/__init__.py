"""The ``gizmo-host`` command line: subcommands, settings and the demo."""

from gizmo_host.cli.main import main

__all__ = ["main"]
