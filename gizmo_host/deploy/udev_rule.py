"""``gizmo-host udev-rule``: the udev rule for ONE board, by USB serial number or on-board UART.

The shipped rule files (``gizmo_host/deploy/data/70-gizmo-host*.rules``, also in ``udev/``) are the
single source: they carry ``@VENDOR@``-style placeholders that match no real device, and this
module fills them in. Values are validated first, because they end up inside udev match
patterns, device symlink names and a systemd unit name, where ``*``, ``-`` or a quote would
change the meaning.
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import resources
from pathlib import Path

__all__ = [
    "DEFAULT_NAME",
    "RULES_FILE",
    "add_arguments",
    "find_usb_ids",
    "render_uart_rule",
    "render_usb_rule",
    "run",
    "shipped_rules",
]

DEFAULT_NAME = "gizmo0"
RULES_FILE = "70-gizmo-host.rules"
UART_RULES_FILE = "70-gizmo-host-uart.rules"

_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SERIAL = re.compile(r"[A-Za-z0-9._-]{1,64}")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
_UART = re.compile(r"(ttyAMA|ttyS|ttyTHS)[0-9]{1,3}")


def shipped_rules(file_name: str = RULES_FILE) -> str:
    """The rule template as shipped (placeholders unfilled: it matches no device)."""
    return resources.files("gizmo_host.deploy.data").joinpath(file_name).read_text(encoding="utf-8")


def render_usb_rule(vendor: str, product: str, serial: str, name: str = DEFAULT_NAME) -> str:
    """Rule for the USB-serial adapter with exactly this vendor, product and serial number."""
    values = {
        "VENDOR": _checked("--vendor", vendor, _HEX4, "4 hex digits, e.g. 0403").lower(),
        "PRODUCT": _checked("--product", product, _HEX4, "4 hex digits, e.g. 6001").lower(),
        "SERIAL": _checked("--serial", serial, _SERIAL, "1-64 of A-Z a-z 0-9 . _ -"),
        "NAME": _checked_name(name),
    }
    header = f"USB-serial adapter {values['VENDOR']}:{values['PRODUCT']} serial {serial}"
    return _render(RULES_FILE, values, header)


def render_uart_rule(kernel: str, name: str = DEFAULT_NAME) -> str:
    """Rule for an on-board UART (``ttyAMA0``, ``ttyS1``, ``ttyTHS1``, ...)."""
    values = {
        "KERNEL": _checked("--uart", kernel, _UART, "ttyAMA<n>, ttyS<n> or ttyTHS<n>"),
        "NAME": _checked_name(name),
    }
    return _render(UART_RULES_FILE, values, f"on-board UART {kernel}")


def find_usb_ids(serial: str, sysfs_root: str = "/sys") -> tuple[str, str]:
    """(vendor, product) of the plugged-in USB device with this serial number.

    Raises :class:`LookupError` when none or several distinct devices carry it.
    """
    found = set()
    for serial_file in Path(sysfs_root, "bus", "usb", "devices").glob("*/serial"):
        try:
            if serial_file.read_text().strip() != serial:
                continue
            vendor = (serial_file.parent / "idVendor").read_text().strip()
            product = (serial_file.parent / "idProduct").read_text().strip()
        except OSError:
            continue
        found.add((vendor, product))
    if len(found) == 1:
        return found.pop()
    if not found:
        raise LookupError(
            f"no plugged-in USB device has serial {serial!r}; plug the board in, or pass "
            f"--vendor and --product (see `udevadm info -a /dev/ttyUSB0`). Adapters without a "
            f"serial number (most CH340) cannot be told apart: use --uart or another adapter."
        )
    listed = ", ".join(f"{v}:{p}" for v, p in sorted(found))
    raise LookupError(
        f"several USB devices have serial {serial!r} ({listed}); pass --vendor/--product"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rule_arguments(parser, required=True)
    parser.add_argument(
        "--sysfs", default="/sys", help=argparse.SUPPRESS
    )  # tests point it at a fake tree


def add_rule_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """The options choosing the board; shared with ``gizmo-host install``."""
    which = parser.add_mutually_exclusive_group(required=required)
    which.add_argument("--serial", metavar="SN", help="USB-serial adapter's serial number")
    which.add_argument("--uart", metavar="TTY", help="on-board UART instead, e.g. ttyAMA0")
    parser.add_argument(
        "--vendor", metavar="VID", help="USB vendor id (default: read from the plugged-in board)"
    )
    parser.add_argument(
        "--product", metavar="PID", help="USB product id (default: read from the plugged-in board)"
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_NAME,
        help=f"/dev/NAME symlink and gizmo-host@NAME.service instance (default {DEFAULT_NAME})",
    )


def rule_from_args(args: argparse.Namespace) -> str | None:
    """The rendered rule the options ask for, or ``None`` when no board was chosen."""
    if args.uart is not None:
        return render_uart_rule(args.uart, args.name)
    if args.serial is None:
        return None
    vendor, product = args.vendor, args.product
    if vendor is None or product is None:
        found_vendor, found_product = find_usb_ids(args.serial, getattr(args, "sysfs", "/sys"))
        vendor = vendor or found_vendor
        product = product or found_product
    return render_usb_rule(vendor, product, args.serial, args.name)


def run(args: argparse.Namespace) -> int:
    try:
        rule = rule_from_args(args)
    except (ValueError, LookupError) as exc:
        print(f"gizmo-host udev-rule: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(rule or "")
    return 0


def _render(file_name: str, values: dict[str, str], header: str) -> str:
    rules = [line for line in shipped_rules(file_name).splitlines() if not line.startswith("#")]
    text = "\n".join(rules)
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    leftover = re.search(r"@[A-Z]+@", text)
    if leftover:
        raise AssertionError(f"{file_name}: placeholder {leftover.group()} has no value")
    return f"# gizmo-host: {header}. Generated by `gizmo-host udev-rule`.\n{text}\n"


def _checked(option: str, value: str, pattern: re.Pattern[str], expected: str) -> str:
    if not pattern.fullmatch(value):
        raise ValueError(f"{option} must be {expected}, got {value!r}")
    return value


def _checked_name(name: str) -> str:
    return _checked("--name", name, _NAME, "a letter then up to 31 of A-Z a-z 0-9 _")
