"""``gizmo-host install`` / ``uninstall`` into a temporary root, through the real command line."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from gizmo_host.cli.main import main
from gizmo_host.deploy.install import (
    CONFIG_PATH,
    RULES_PATH,
    SYSUSERS_PATH,
    UNIT_PATH,
    default_executable,
    render_unit,
)
from gizmo_host.deploy.install import shipped_file as shipped
from gizmo_host.deploy.udev_rule import render_uart_rule, render_usb_rule

EXPECTED_FILES = {RULES_PATH, UNIT_PATH, SYSUSERS_PATH, CONFIG_PATH}


def _tree(root: Path) -> set[Path]:
    return {path.relative_to(root) for path in root.rglob("*") if path.is_file()}


def test_dry_run_lists_the_tree_and_writes_nothing(tmp_path, capsys):
    assert main(["install", "--root", os.fspath(tmp_path), "--dry-run", "--uart", "ttyS1"]) == 0
    out = capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    for relative in EXPECTED_FILES:
        assert f"would write   {tmp_path / relative} (" in out


def test_install_writes_the_expected_tree(tmp_path, capsys):
    assert main(["install", "--root", os.fspath(tmp_path), "--uart", "ttyS1", "--name", "cam"]) == 0
    assert _tree(tmp_path) == {Path(p) for p in EXPECTED_FILES}
    assert (tmp_path / RULES_PATH).read_text() == render_uart_rule("ttyS1", "cam")
    assert (tmp_path / UNIT_PATH).read_text() == render_unit(default_executable())
    assert (tmp_path / CONFIG_PATH).read_text() == shipped(CONFIG_PATH.name)
    for relative in EXPECTED_FILES:
        assert stat.S_IMODE((tmp_path / relative).stat().st_mode) == 0o644
    assert "gizmo-host@cam.service" in capsys.readouterr().out


def test_install_with_usb_serial_and_explicit_ids(tmp_path):
    argv = ["install", "--root", os.fspath(tmp_path), "--serial", "AB12CD"]
    assert main([*argv, "--vendor", "10C4", "--product", "EA60"]) == 0
    assert (tmp_path / RULES_PATH).read_text() == render_usb_rule("10c4", "ea60", "AB12CD")


def test_install_without_a_board_ships_the_inert_template_and_warns(tmp_path, capsys):
    assert main(["install", "--root", os.fspath(tmp_path)]) == 0
    assert (tmp_path / RULES_PATH).read_text() == shipped(RULES_PATH.name)
    assert "matches no device" in capsys.readouterr().out


def test_reinstall_keeps_an_edited_config(tmp_path, capsys):
    root = os.fspath(tmp_path)
    assert main(["install", "--root", root]) == 0
    edited = shipped(CONFIG_PATH.name).replace("115200", "921600")
    (tmp_path / CONFIG_PATH).write_text(edited)
    assert main(["install", "--root", root, "--uart", "ttyAMA0"]) == 0
    assert (tmp_path / CONFIG_PATH).read_text() == edited
    assert "not overwritten" in capsys.readouterr().out


def test_uninstall_removes_everything_install_wrote(tmp_path):
    root = os.fspath(tmp_path)
    assert main(["install", "--root", root, "--uart", "ttyS1"]) == 0
    assert main(["uninstall", "--root", root, "--dry-run"]) == 0
    assert _tree(tmp_path) == {Path(p) for p in EXPECTED_FILES}
    assert main(["uninstall", "--root", root]) == 0
    assert _tree(tmp_path) == set()
    assert not (tmp_path / CONFIG_PATH.parent).exists()


def test_uninstall_keeps_an_edited_config_unless_purged(tmp_path, capsys):
    root = os.fspath(tmp_path)
    assert main(["install", "--root", root]) == 0
    (tmp_path / CONFIG_PATH).write_text("[serial]\nbaud = 921600\n")
    assert main(["uninstall", "--root", root]) == 0
    assert _tree(tmp_path) == {Path(CONFIG_PATH)}
    assert "edited" in capsys.readouterr().out
    assert main(["uninstall", "--root", root, "--purge"]) == 0
    assert _tree(tmp_path) == set()


def test_install_refuses_a_bad_value_and_writes_nothing(tmp_path, capsys):
    assert main(["install", "--root", os.fspath(tmp_path), "--uart", "ttyUSB0"]) == 2
    assert "--uart must be" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_shipped_config_is_accepted_by_the_config_loader(tmp_path):
    from gizmo_host.app.host_config import load_config

    assert main(["install", "--root", os.fspath(tmp_path)]) == 0
    config = load_config(os.fspath(tmp_path / CONFIG_PATH))
    assert config.serial.path == "/dev/gizmo0"
    assert config.serial.baudrate == 115200
    assert config.publish.stdout is False


@pytest.mark.skipif(
    shutil.which("systemd-sysusers") is None,
    reason="systemd-sysusers is not installed (CI: apt-get install -y systemd)",
)
def test_installed_sysusers_entry_creates_the_user_and_group(tmp_path):
    assert main(["install", "--root", os.fspath(tmp_path)]) == 0
    result = subprocess.run(
        ["systemd-sysusers", f"--root={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    passwd = (tmp_path / "etc" / "passwd").read_text().splitlines()
    groups = (tmp_path / "etc" / "group").read_text().splitlines()
    assert any(line.startswith("gizmo-host:x:") and "/usr/sbin/nologin" in line for line in passwd)
    assert any(line.startswith("gizmo-host:x:") for line in groups)
