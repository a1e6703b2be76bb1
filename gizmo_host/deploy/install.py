"""``gizmo-host install``: put the udev rule, the systemd unit, its user and a config in place.

Everything goes under ``--root`` (default ``/``), so the same command fills a system image or a
test directory. ``--dry-run`` prints the plan and writes nothing. The config is never
overwritten (it is the one file people edit); ``gizmo-host uninstall`` removes what was installed
and keeps a config that was changed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

from gizmo_host.deploy import udev_rule

__all__ = [
    "CONFIG_PATH",
    "RULES_PATH",
    "SYSUSERS_PATH",
    "UNIT_PATH",
    "InstallFile",
    "add_arguments",
    "install_files",
    "plan_install",
    "run",
    "shipped_file",
]

RULES_PATH = PurePosixPath("etc/udev/rules.d") / udev_rule.RULES_FILE
UNIT_PATH = PurePosixPath("etc/systemd/system/gizmo-host@.service")
SYSUSERS_PATH = PurePosixPath("etc/sysusers.d/gizmo-host.conf")
CONFIG_PATH = PurePosixPath("etc/gizmo-host/gizmo-host.toml")
SYSUSERS_SHIPPED = "gizmo-host.sysusers.conf"
SHIPPED_EXECUTABLE = "/usr/local/bin/gizmo-host"

NEXT_STEPS = """\
Next steps:
  sudo systemd-sysusers
  sudo systemctl daemon-reload
  sudo udevadm control --reload
  sudo udevadm trigger --action=add --subsystem-match=tty
Then plug in the board: systemd starts gizmo-host@{name}.service (see `systemctl status`).
Members of group gizmo-host read JSON Lines from /run/gizmo-host/{name}/results.sock."""


@dataclass(frozen=True, slots=True)
class InstallFile:
    """One file to write: where (relative to the root), what, and whether an existing copy wins."""

    path: PurePosixPath
    content: str
    keep_existing: bool = False
    mode: int = 0o644


def shipped_file(name: str) -> str:
    """A file from ``gizmo_host/data`` (unit, rule templates, sysusers entry, default config)."""
    return resources.files("gizmo_host.deploy.data").joinpath(name).read_text(encoding="utf-8")


def render_unit(executable: str) -> str:
    """The unit with ``ExecStart=`` pointing at this installation's ``gizmo-host``."""
    unit = shipped_file(UNIT_PATH.name)
    if not os.path.isabs(executable):
        raise ValueError(f"--executable must be an absolute path, got {executable!r}")
    if SHIPPED_EXECUTABLE + " " not in unit:
        raise AssertionError(f"{UNIT_PATH.name} no longer runs {SHIPPED_EXECUTABLE}")
    return unit.replace(SHIPPED_EXECUTABLE + " ", executable + " ")


def default_executable() -> str:
    """This installation's ``gizmo-host`` script: next to the running Python, else on PATH."""
    beside_python = Path(sys.executable).parent / "gizmo-host"
    if beside_python.is_file():
        return os.fspath(beside_python.absolute())
    return shutil.which("gizmo-host") or SHIPPED_EXECUTABLE


def plan_install(rules: str, executable: str) -> list[InstallFile]:
    """The files ``install`` writes, in order."""
    return [
        InstallFile(RULES_PATH, rules),
        InstallFile(UNIT_PATH, render_unit(executable)),
        InstallFile(SYSUSERS_PATH, shipped_file(SYSUSERS_SHIPPED)),
        InstallFile(CONFIG_PATH, shipped_file(CONFIG_PATH.name), keep_existing=True),
    ]


def install_files(root: Path, files: list[InstallFile], *, dry_run: bool) -> list[str]:
    """Write ``files`` under ``root`` (atomically each); returns one report line per file."""
    report = []
    for item in files:
        target = root / item.path
        if item.keep_existing and target.exists():
            report.append(f"keep     {target} (already exists; not overwritten)")
            continue
        verb = "replace" if target.exists() else "write"
        if dry_run:
            report.append(f"would {verb:7} {target} ({len(item.content.encode())} bytes)")
            continue
        _write_atomically(target, item.content, item.mode)
        report.append(f"{verb:8} {target}")
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_root_arguments(parser)
    udev_rule.add_rule_arguments(parser, required=False)
    parser.add_argument(
        "--executable",
        default=None,
        metavar="PATH",
        help="gizmo-host path for ExecStart= (default: this installation's)",
    )
    parser.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)


def add_root_arguments(parser: argparse.ArgumentParser) -> None:
    """``--root`` and ``--dry-run``; shared with ``gizmo-host uninstall``."""
    parser.add_argument(
        "--root", type=Path, default=Path("/"), metavar="DIR", help="install under DIR (default /)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")


def run(args: argparse.Namespace) -> int:
    executable = args.executable or default_executable()
    try:
        rules = udev_rule.rule_from_args(args)
        files = plan_install(rules or shipped_file(udev_rule.RULES_FILE), executable)
        report = install_files(args.root, files, dry_run=args.dry_run)
    except (ValueError, LookupError, OSError) as exc:
        print(f"gizmo-host install: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report))
    if executable.startswith(("/home/", "/root/")):
        print(
            f"warning: {executable} is under a home directory, which the service cannot see "
            "(ProtectHome=yes); install gizmo-host system-wide, e.g. in /opt/gizmo-host/venv."
        )
    if rules is None:
        print(
            f"warning: no --serial or --uart given, so {RULES_PATH.name} matches no device "
            "yet; rerun with --serial SN (USB adapter) or --uart ttyAMA0 (on-board UART)."
        )
    if not args.dry_run:
        print(NEXT_STEPS.format(name=args.name))
    return 0


def _write_atomically(target: Path, content: str, mode: int) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(content)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
