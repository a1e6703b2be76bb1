"""A config mistake is one line on stderr and exit status 2, from a real process, whatever else
the config says: the red team's FAIL 6 was a ``[zenoh] config`` mistake in ``run`` that logged
``event loop: uvloop`` first (the file was read at start, after the log), and a setting that
does nothing printed its warning before ``record``'s own check failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

TIMEOUT_S = 20.0
IDLE = "[mavlink]\nenabled = false\ntarget_system = 1\n"  # a setting that does nothing


def zenoh_files(where: Path) -> dict[str, str]:
    (where / "bad.json5").write_text("{ this is not json5 ")
    (where / "unknown.json5").write_text('{ "no_such_key": 1 }')
    # A TLS file Zenoh reads only when it opens a link (red team, rt10: a client read as if the
    # router were down, exit 1; a host published nothing for good).
    (where / "tls.json5").write_text(
        '{ transport: { link: { tls: { root_ca_certificate: "%s" } } } }' % (where / "ca.pem")
    )
    return {
        "missing": str(where / "nope.json5"),
        "not json5": str(where / "bad.json5"),
        "unknown key": str(where / "unknown.json5"),
        "missing TLS file": str(where / "tls.json5"),
    }


def gizmo_host(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gizmo_host.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def one_line_exit_2(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, lines
    assert all(n in lines[0] for n in needles), lines


@pytest.mark.parametrize("command", ["run", "record"])
@pytest.mark.parametrize("mistake", ["missing", "not json5", "unknown key", "missing TLS file"])
def test_a_zenoh_config_file_mistake_is_the_only_line(tmp_path, command, mistake):
    path = zenoh_files(tmp_path)[mistake]
    config = tmp_path / "gizmo.toml"
    config.write_text(f'{IDLE}[zenoh]\nconfig = "{path}"\n')
    args = [] if command == "run" else ["-o", str(tmp_path / "x.mcap")]
    done = gizmo_host(command, "--serial", "/dev/null", "--config", str(config), *args)
    one_line_exit_2(done, f"gizmo-host {command}:", "zenoh.config: cannot use", path)


def test_a_record_option_mistake_is_the_only_line_even_with_an_idle_setting(tmp_path):
    config = tmp_path / "gizmo.toml"
    config.write_text(IDLE)
    out = str(tmp_path / "x.mcap")
    done = gizmo_host("record", "--serial", "/dev/null", "--config", str(config), "-o", out,
                      "--duration", "0")  # fmt: skip
    one_line_exit_2(done, "gizmo-host record: --duration: expected > 0")


@pytest.mark.parametrize("mistake", ["missing", "not json5", "unknown key", "missing TLS file"])
def test_a_fleet_zenoh_config_mistake_is_the_only_line(tmp_path, mistake):
    path = zenoh_files(tmp_path)[mistake]
    done = gizmo_host("fleet", "--zenoh-config", path, "--duration", "1")
    one_line_exit_2(done, "gizmo-host fleet: --zenoh-config: cannot use", path)


WITHOUT = (
    "import sys; sys.modules[sys.argv.pop(1)] = None  # as if the extra were not installed\n"
    "from gizmo_host.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize(
    ("module", "flag", "extra"),
    [("zenoh", "--zenoh", "zenoh"), ("rosbags", "--ros2=bridge", "ros2"),
     ("foxglove", "--foxglove", "foxglove")],
)  # fmt: skip
def test_a_missing_extra_for_run_is_the_only_line(tmp_path, module, flag, extra):
    config = tmp_path / "gizmo.toml"
    config.write_text(IDLE)
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, module, "run", "--serial", "/dev/null",
         "--config", str(config), flag],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    one_line_exit_2(done, "gizmo-host run:", f"needs the {extra} extra")
