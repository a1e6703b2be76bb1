"""READY, WATCHDOG and STOPPING from the real ``gizmo-host run`` on a test ``NOTIFY_SOCKET``."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(
        importlib.util.find_spec("gizmo_host.cli.run") is None,
        reason="`gizmo-host run` (gizmo_host/cli/run.py) is not in the tree yet",
    ),
]

GIZMO_HOST = Path(sys.executable).parent / "gizmo-host"


def test_run_notifies_ready_watchdog_and_stopping(notify_receiver, tmp_path):
    master, slave = os.openpty()
    env = {**os.environ, "NOTIFY_SOCKET": notify_receiver.env_value, "WATCHDOG_USEC": "400000"}
    service = subprocess.Popen(
        [os.fspath(GIZMO_HOST), "run", "--serial", os.ttyname(slave)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        notify_receiver.receive_until("READY", "1")
        notify_receiver.receive_until("WATCHDOG", "1")
        notify_receiver.receive_until("WATCHDOG", "1")
        service.send_signal(signal.SIGTERM)
        notify_receiver.receive_until("STOPPING", "1")
        assert service.wait(timeout=10) == 0, service.stderr.read()
    finally:
        service.kill()
        service.wait()
        service.stderr.close()
        os.close(slave)
        os.close(master)


def test_the_units_exec_start_runs_with_the_shipped_config(notify_receiver, tmp_path):
    """ExecStart= exactly as the unit has it (paths moved into tmp): flags and config agree."""
    import json
    import shlex
    import socket

    from gizmo_host.deploy.install import CONFIG_PATH, default_executable, render_unit, shipped_file

    (exec_start,) = [
        line.removeprefix("ExecStart=")
        for line in render_unit(default_executable()).splitlines()
        if line.startswith("ExecStart=")
    ]
    master, slave = os.openpty()
    config = tmp_path / "gizmo-host.toml"
    config.write_text(shipped_file(CONFIG_PATH.name))
    runtime_directory = tmp_path / "run"
    runtime_directory.mkdir()
    command = (
        exec_start.replace("/dev/%I", os.ttyname(slave))
        .replace("/" + os.fspath(CONFIG_PATH), os.fspath(config))
        .replace("/run/gizmo-host/%i", os.fspath(runtime_directory))
    )
    assert "%" not in command
    env = {**os.environ, "NOTIFY_SOCKET": notify_receiver.env_value, "WATCHDOG_USEC": "2000000"}
    service = subprocess.Popen(
        shlex.split(command), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        notify_receiver.receive_until("READY", "1")
        (socket_path,) = runtime_directory.iterdir()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(10)
            client.connect(os.fspath(socket_path))
            greeting = json.loads(client.makefile("rb").readline())
        assert greeting["type"] == "version"
        assert greeting["serial_path"] == os.ttyname(slave)
        service.send_signal(signal.SIGTERM)
        notify_receiver.receive_until("STOPPING", "1")
        assert service.wait(timeout=10) == 0, service.stderr.read()
        assert service.stdout.read() == ""  # the shipped config keeps JSON out of the journal
    finally:
        service.kill()
        service.wait()
        service.stdout.close()
        service.stderr.close()
        os.close(slave)
        os.close(master)
