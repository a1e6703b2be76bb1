"""udev rules: rendering and validation, and real ``udevadm test`` runs where possible.

``udevadm test`` (systemd 252 has no ``udevadm verify``) parses every rules file and applies the
rules to a real device from /sys. It also creates symlinks and a database under /dev and /run,
so it runs in a private mount namespace with tmpfs over /dev and /run and our rules bind-mounted
as the only rules: the host is untouched. That needs root, ``unshare`` and a ``ttyS*`` device.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gizmo_host.cli.main import main
from gizmo_host.deploy.udev_rule import (
    RULES_FILE,
    UART_RULES_FILE,
    find_usb_ids,
    render_uart_rule,
    render_usb_rule,
    shipped_rules,
)

SYSTEM_RULES_DIRS = ("/usr/lib/udev/rules.d", "/lib/udev/rules.d", "/usr/local/lib/udev/rules.d")
PROPERTY = re.compile(r"[A-Z][A-Z0-9_]*=")
NAMESPACE_SCRIPT = """
set -e
rules="$1"; empty="$2"; device="$3"; shift 3
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev
mount --bind "$rules" /etc/udev/rules.d
for system_dir in "$@"; do mount --bind "$empty" "$system_dir"; done
exec udevadm test --action=add "$device"
"""


def _serial_tty() -> str | None:
    ttys = sorted(Path("/sys/class/tty").glob("ttyS[0-9]*"))
    return os.fspath(ttys[0]) if ttys else None


def _udevadm_test_unavailable() -> str | None:
    if shutil.which("udevadm") is None:
        return "udevadm is not installed (CI: apt-get install -y udev)"
    if os.geteuid() != 0:
        return "udevadm test in a private mount namespace needs root"
    if shutil.which("unshare") is None or not Path("/etc/udev/rules.d").is_dir():
        return "unshare or /etc/udev/rules.d is missing"
    if _serial_tty() is None:
        return "no ttyS* device in /sys/class/tty to run the rules against"
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"cannot create a mount namespace: {probe.stderr.decode().strip()}"
    return None


needs_udevadm_test = pytest.mark.skipif(
    _udevadm_test_unavailable() is not None, reason=str(_udevadm_test_unavailable())
)


def _udevadm_test(tmp_path: Path, rules: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Properties udev gives the ttyS device, and the parse errors it logged for our files."""
    rules_dir = tmp_path / "rules"
    empty_dir = tmp_path / "empty"
    rules_dir.mkdir()
    empty_dir.mkdir()
    for name, text in rules.items():
        (rules_dir / name).write_text(text)
    system_dirs = []
    for directory in SYSTEM_RULES_DIRS:
        if Path(directory).is_dir() and Path(directory).resolve() not in {
            Path(d).resolve() for d in system_dirs
        }:
            system_dirs.append(directory)
    result = subprocess.run(
        [
            *("unshare", "--mount", "--propagation", "private", "sh", "-c", NAMESPACE_SCRIPT),
            *("sh", os.fspath(rules_dir), os.fspath(empty_dir), str(_serial_tty()), *system_dirs),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    properties = dict(
        line.strip().split("=", 1)
        for line in result.stdout.splitlines()
        if PROPERTY.match(line.strip())
    )
    # Parse errors start with the rules file's path; rule actions start with the device name.
    errors = [line for line in result.stderr.splitlines() if line.startswith("/etc/udev/rules.d/")]
    return properties, errors


@needs_udevadm_test
def test_uart_rule_applies_to_the_real_device(tmp_path):
    kernel = Path(str(_serial_tty())).name
    properties, errors = _udevadm_test(tmp_path, {RULES_FILE: render_uart_rule(kernel)})
    assert errors == []
    assert properties["DEVLINKS"].split() == ["/dev/gizmo0"]
    assert properties["SYSTEMD_WANTS"] == "gizmo-host@gizmo0.service"
    assert ":systemd:" in properties["TAGS"]
    assert properties["ID_MM_DEVICE_IGNORE"] == "1"


@needs_udevadm_test
def test_usb_rule_parses_and_leaves_other_serial_ports_alone(tmp_path):
    properties, errors = _udevadm_test(
        tmp_path, {RULES_FILE: render_usb_rule("0403", "6001", "AB12CD")}
    )
    assert errors == []
    assert "DEVLINKS" not in properties
    assert "SYSTEMD_WANTS" not in properties


@needs_udevadm_test
def test_shipped_templates_parse_and_match_nothing(tmp_path):
    properties, errors = _udevadm_test(
        tmp_path,
        {RULES_FILE: shipped_rules(RULES_FILE), UART_RULES_FILE: shipped_rules(UART_RULES_FILE)},
    )
    assert errors == []
    assert "DEVLINKS" not in properties
    assert "ID_MM_DEVICE_IGNORE" not in properties


@needs_udevadm_test
def test_udevadm_check_would_catch_a_broken_rule(tmp_path):
    broken = render_uart_rule("ttyS0").replace("SYMLINK+=", "SYMLNK+=")
    _, errors = _udevadm_test(tmp_path, {RULES_FILE: broken})
    assert errors, "udevadm test should report the misspelt key"


def _udevadm_verify_unavailable() -> str | None:
    if shutil.which("udevadm") is None:
        return "udevadm is not installed (CI: apt-get install -y udev)"
    probe = subprocess.run(["udevadm", "verify", "--help"], capture_output=True, check=False)
    if probe.returncode != 0:
        return "udevadm verify needs systemd >= 254; the udevadm test checks above cover 252"
    return None


@pytest.mark.skipif(
    _udevadm_verify_unavailable() is not None, reason=str(_udevadm_verify_unavailable())
)
def test_udevadm_verify_accepts_every_rule_variant(tmp_path):
    variants = {
        "usb.rules": render_usb_rule("0403", "6001", "AB12CD"),
        "uart.rules": render_uart_rule("ttyAMA0"),
        "usb-template.rules": shipped_rules(RULES_FILE),
        "uart-template.rules": shipped_rules(UART_RULES_FILE),
    }
    for name, text in variants.items():
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        ["udevadm", "verify", *sorted(str(tmp_path / name) for name in variants)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_usb_rule_matches_vendor_product_and_serial_on_one_line():
    rule = render_usb_rule("0403", "6001", "AB12CD", name="gizmo1")
    (match_line,) = [line for line in rule.splitlines() if "ATTRS{serial}" in line]
    for expected in (
        'ATTRS{idVendor}=="0403"',
        'ATTRS{idProduct}=="6001"',
        'ATTRS{serial}=="AB12CD"',
        'SYMLINK+="gizmo-AB12CD"',
        'SYMLINK+="gizmo1"',
        'ENV{ID_MM_DEVICE_IGNORE}="1"',
        'GROUP="dialout"',
        'MODE="0660"',
        'TAG+="systemd"',
        'ENV{SYSTEMD_WANTS}+="gizmo-host@gizmo1.service"',
    ):
        assert expected in match_line
    assert "@" not in rule.replace("gizmo-host@gizmo1", "")


def test_shipped_usb_template_never_matches_a_generic_adapter():
    template = shipped_rules(RULES_FILE)
    match_lines = [line for line in template.splitlines() if "ATTRS{" in line]
    assert match_lines
    for line in match_lines:
        assert 'ATTRS{serial}=="@SERIAL@"' in line
        assert 'ATTRS{idVendor}=="@VENDOR@"' in line


@pytest.mark.parametrize(
    ("call", "option"),
    [
        (lambda: render_usb_rule("0403", "6001", "*"), "--serial"),
        (lambda: render_usb_rule("0403", "6001", 'AB"12'), "--serial"),
        (lambda: render_usb_rule("403", "6001", "AB12"), "--vendor"),
        (lambda: render_usb_rule("0403", "60011", "AB12"), "--product"),
        (lambda: render_usb_rule("0403", "6001", "AB12", name="gizmo-0"), "--name"),
        (lambda: render_uart_rule("ttyUSB0"), "--uart"),
        (lambda: render_uart_rule("ttyS*"), "--uart"),
    ],
)
def test_values_that_would_change_a_rule_are_refused(call, option):
    with pytest.raises(ValueError, match=option):
        call()


@pytest.fixture
def fake_sysfs(tmp_path) -> Path:
    """A /sys/bus/usb/devices tree with one FTDI adapter (serial AB12CD) and a hub."""
    devices = tmp_path / "bus" / "usb" / "devices"
    for node, vendor, product, serial in (
        ("1-1.2", "0403", "6001", "AB12CD"),
        ("1-1", "1d6b", "0002", None),
    ):
        (devices / node).mkdir(parents=True)
        (devices / node / "idVendor").write_text(vendor + "\n")
        (devices / node / "idProduct").write_text(product + "\n")
        if serial:
            (devices / node / "serial").write_text(serial + "\n")
    return tmp_path


def test_vendor_and_product_are_read_from_the_plugged_in_board(fake_sysfs):
    assert find_usb_ids("AB12CD", os.fspath(fake_sysfs)) == ("0403", "6001")
    with pytest.raises(LookupError, match="--vendor and --product"):
        find_usb_ids("NOPE", os.fspath(fake_sysfs))


def test_udev_rule_command_prints_the_rule(fake_sysfs, capsys):
    assert main(["udev-rule", "--serial", "AB12CD", "--sysfs", os.fspath(fake_sysfs)]) == 0
    assert capsys.readouterr().out == render_usb_rule("0403", "6001", "AB12CD")
    assert main(["udev-rule", "--uart", "ttyAMA0", "--name", "cam"]) == 0
    assert capsys.readouterr().out == render_uart_rule("ttyAMA0", "cam")


def test_udev_rule_command_explains_a_bad_value(capsys):
    assert main(["udev-rule", "--serial", "AB*", "--vendor", "0403", "--product", "6001"]) == 2
    assert "--serial must be" in capsys.readouterr().err


def test_repository_copies_are_the_shipped_files():
    udev_dir = Path(__file__).parents[3] / "udev"
    for name in (RULES_FILE, UART_RULES_FILE):
        assert (udev_dir / name).read_text() == shipped_rules(name)
