"""``gizmo-host uninstall``: remove what ``gizmo-host install`` put under ``--root``.

The user gizmo-host stays (systemd-sysusers never deletes users; ``userdel`` does, if wanted).

The config is removed only when it is still the shipped default (or with ``--purge``): a tuned
config is work someone did, and reinstalling should find it again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gizmo_host.deploy.install import (
    CONFIG_PATH,
    RULES_PATH,
    SYSUSERS_PATH,
    UNIT_PATH,
    add_root_arguments,
    shipped_file,
)

__all__ = ["add_arguments", "run", "uninstall_files"]


def uninstall_files(root: Path, *, dry_run: bool, purge: bool = False) -> list[str]:
    """Remove the installed files under ``root``; returns one report line per file."""
    report = []
    for relative in (RULES_PATH, UNIT_PATH, SYSUSERS_PATH, CONFIG_PATH):
        target = root / relative
        if not target.exists():
            report.append(f"absent   {target}")
            continue
        if relative == CONFIG_PATH and not purge and _edited(target):
            report.append(f"keep     {target} (edited; --purge removes it)")
            continue
        if dry_run:
            report.append(f"would remove {target}")
            continue
        target.unlink()
        report.append(f"remove   {target}")
    config_dir = root / CONFIG_PATH.parent
    if not dry_run and config_dir.is_dir() and not any(config_dir.iterdir()):
        config_dir.rmdir()
        report.append(f"remove   {config_dir}/")
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_root_arguments(parser)
    parser.add_argument("--purge", action="store_true", help="also remove an edited config")


def run(args: argparse.Namespace) -> int:
    try:
        report = uninstall_files(args.root, dry_run=args.dry_run, purge=args.purge)
    except OSError as exc:
        print(f"gizmo-host uninstall: {exc}", file=sys.stderr)
        return 2
    print("\n".join(report))
    if not args.dry_run:
        print("Then: sudo systemctl daemon-reload && sudo udevadm control --reload")
    return 0


def _edited(config: Path) -> bool:
    return config.read_text(encoding="utf-8") != shipped_file(CONFIG_PATH.name)
