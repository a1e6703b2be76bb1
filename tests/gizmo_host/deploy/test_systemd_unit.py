"""The systemd unit, checked by systemd's own tools and against the deployment requirements."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gizmo_host.deploy.install import default_executable, render_unit, shipped_file

UNIT_NAME = "gizmo-host@.service"
# 1.5 until sched_setattr came back from @resources (the reader's short slice): 1.6
MAX_EXPOSURE = 1.6

needs_systemd_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None,
    reason="systemd-analyze is not installed (CI: apt-get install -y systemd)",
)


def _directives(unit: str) -> dict[str, list[str]]:
    """``Section.Key`` -> every value, in order (systemd keys may repeat)."""
    found: dict[str, list[str]] = {}
    section = ""
    for raw in unit.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        found.setdefault(f"{section}.{key.strip()}", []).append(value.strip())
    return found


def _verify(directory: Path, unit_text: str) -> subprocess.CompletedProcess[str]:
    (directory / UNIT_NAME).write_text(unit_text)
    return subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(directory / "gizmo-host@gizmo0.service")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=directory,
    )


@needs_systemd_analyze
def test_systemd_analyze_verify_passes_without_a_warning(tmp_path):
    result = _verify(tmp_path, render_unit(default_executable()))
    assert result.returncode == 0, result.stderr
    assert result.stdout + result.stderr == ""


@needs_systemd_analyze
@pytest.mark.parametrize(
    ("breakage", "complaint"),
    [
        (lambda unit: unit + "Bogus=1\n", "Unknown key"),
        (lambda unit: unit.replace("ExecStart=/", "ExecStart=/nowhere/"), "not executable"),
    ],
)
def test_verify_check_would_catch_a_broken_unit(tmp_path, breakage, complaint):
    result = _verify(tmp_path, breakage(render_unit(default_executable())))
    assert complaint in result.stdout + result.stderr


@needs_systemd_analyze
def test_security_exposure_is_at_most_the_budget(tmp_path):
    unit = tmp_path / UNIT_NAME
    unit.write_text(render_unit(default_executable()))
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if "--offline" in result.stderr and "unrecognized" in result.stderr:
        pytest.skip("systemd-analyze is older than 250 (no --offline); cannot score a unit file")
    score = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert score, result.stdout + result.stderr
    assert float(score.group(1)) <= MAX_EXPOSURE, result.stdout


def test_unit_meets_the_deployment_requirements():
    unit = _directives(shipped_file(UNIT_NAME))
    expected_single = {
        "Service.Type": "notify",
        "Service.Restart": "on-failure",
        "Service.DynamicUser": "yes",
        "Service.User": "gizmo-host",
        "Service.Group": "gizmo-host",
        "Service.SupplementaryGroups": "dialout",
        "Service.ProtectSystem": "strict",
        "Service.ProtectHome": "yes",
        "Service.NoNewPrivileges": "yes",
        "Service.PrivateTmp": "yes",
        "Service.CapabilityBoundingSet": "",
        "Service.RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "Service.RuntimeDirectory": "gizmo-host/%i",
        "Unit.BindsTo": "dev-%i.device",
        "Unit.After": "dev-%i.device",
        "Install.WantedBy": "dev-%i.device",
    }
    for key, value in expected_single.items():
        assert unit.get(key) == [value], key
    assert float(unit["Service.WatchdogSec"][0].removesuffix("s")) > 0
    # Only the instance's own node (systemd resolves the udev symlink when it starts the
    # service): no driver class, which would admit every port of that driver and the VT
    # consoles (char-ttyS).
    assert unit["Service.DeviceAllow"] == ["/dev/%I rw"]
    assert unit["Service.DevicePolicy"] == ["closed"]
    assert unit["Service.PrivateDevices"] == ["no"]  # yes would hide /dev/%I itself
    assert "OPENBLAS_NUM_THREADS=1" in unit["Service.Environment"]
    # Of @resources only sched_setattr comes back (the reader's slice), with no realtime budget.
    assert unit["Service.SystemCallFilter"] == [
        "@system-service",
        "~@privileged @resources",
        "sched_setattr",
    ]
    assert unit["Service.LimitRTPRIO"] == ["0"]
    assert unit["Unit.StartLimitBurst"] and unit["Unit.StartLimitIntervalSec"]
    # The port and the socket follow the instance, as udev's SYSTEMD_WANTS names it.
    exec_start = unit["Service.ExecStart"][0]
    assert "--serial /dev/%I" in exec_start
    assert "/run/gizmo-host/%i/" in exec_start


def test_rendered_unit_only_changes_the_executable():
    shipped = shipped_file(UNIT_NAME)
    rendered = render_unit("/opt/gizmo-host/venv/bin/gizmo-host")
    assert rendered.replace("/opt/gizmo-host/venv/bin/gizmo-host", "/usr/local/bin/gizmo-host") == (
        shipped
    )
    with pytest.raises(ValueError, match="absolute path"):
        render_unit("gizmo-host")


def test_repository_copies_are_the_shipped_files():
    systemd_dir = Path(__file__).parents[3] / "systemd"
    for name in (UNIT_NAME, "gizmo-host.sysusers.conf"):
        assert (systemd_dir / name).read_text() == shipped_file(name)


def test_the_deploy_page_describes_the_units_restarts_and_devices():
    """docs/deploy.md's restart wording is the unit's own values, so the two cannot drift apart."""
    unit = _directives(shipped_file(UNIT_NAME))
    readme = " ".join((Path(__file__).parents[3] / "docs" / "deploy.md").read_text().split())
    burst = unit["Unit.StartLimitBurst"][0]
    interval = unit["Unit.StartLimitIntervalSec"][0]
    assert f"`Restart={unit['Service.Restart'][0]}`" in readme
    assert f"restarts it {unit['Service.RestartSec'][0].removesuffix('s')} s after" in readme
    assert f"`StartLimitBurst={burst}`" in readme
    assert f"`StartLimitIntervalSec={interval}`" in readme
    assert f"more than {burst} starts within {interval.removesuffix('s')} s" in readme
    assert f"misses the watchdog ({unit['Service.WatchdogSec'][0].removesuffix('s')} s)" in readme
    assert "`DeviceAllow=/dev/%I`" in readme
