"""What every ``gizmo-host`` command shares (as python-can's ``can/cli.py`` does for its tools):
the usage exit status, the logging set-up, and one check for an optional extra.

A mistake in a flag, a file or a setting is one line on stderr and :data:`EXIT_USAGE`; logs go
to stderr, so that stdout carries only JSON Lines (``gizmo_host.jsonl``).
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import stat
import sys

from gizmo_core import ConfigError, MissingExtra

EXIT_USAGE = 2  # a usage or configuration mistake (1: the command ran and failed)
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Each optional extra (pyproject.toml) by the module it installs.
EXTRAS = {
    "images": "cv2",
    "uvloop": "uvloop",
    "record": "mcap",
    "demo": "rich",
    "mavlink": "pymavlink",
    "foxglove": "foxglove",
    "zenoh": "zenoh",
    "ros2": "rosbags",
    "report": "matplotlib",
}


def add_log_level(parser: argparse.ArgumentParser, default: str = "WARNING") -> None:
    parser.add_argument(
        "--log-level", default=default, choices=LOG_LEVELS, help=f"stderr log level ({default})"
    )


def setup_logging(level: str) -> None:
    """The command's logs on stderr at ``level``, one line each."""
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)


def require_extra(name: str, what: str) -> None:
    """A :class:`~gizmo_core.MissingExtra` for ``what`` unless the extra ``name`` is
    installed (its module can be found; it is not imported here)."""
    if importlib.util.find_spec(EXTRAS[name]) is None:
        raise MissingExtra(name, what)


def file_to_read(flag: str, path: str) -> None:
    """``ConfigError`` unless ``path`` is a regular file: a missing one or a directory is a
    mistake in the command line, and a FIFO or a device would block the command."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise ConfigError(f"{flag}: {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{flag}: {path}: expected a regular file")


def file_to_write(flag: str, path: str) -> None:
    """``ConfigError`` unless ``path`` can be a file: its directory exists and it is not a
    directory itself (checked before the command's work, not found after it)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ConfigError(f"{flag}: {path}: no directory {parent}")
    if os.path.isdir(path):
        raise ConfigError(f"{flag}: {path}: is a directory")


def fail(command: str, error: object, status: int = EXIT_USAGE) -> int:
    """Print ``gizmo-host COMMAND: error`` on stderr; return ``status`` (the usage one)."""
    print(f"gizmo-host {command}: {error}", file=sys.stderr)
    return status
