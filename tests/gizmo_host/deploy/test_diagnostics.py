"""Startup diagnostics for real ptys: wrong permissions, a port held by another process, missing.

Root bypasses file permissions, so the permission tests open the port from a child process that
drops to ``nobody``; they are skipped (with the reason) when not run as root.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import grp
import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import serialx

from gizmo_host.deploy.diagnostics import explain_open_error, find_port_holders, tty_driver_name

HERE = Path(__file__).parent
OPEN_PORT_CHILD = HERE / "open_port_child.py"
FLOCK_HOLDER = HERE / "flock_holder.py"


def _cannot_drop_to_nobody() -> str | None:
    """Why the tests cannot open ports as ``nobody`` (root bypasses permissions), if they can't."""
    if os.geteuid() != 0:
        return "dropping to another user and chown of a pty need root"
    try:
        pwd.getpwnam("nobody")
        grp.getgrnam("dialout")
    except KeyError as exc:
        return f"this system has no {exc} user or group"
    try:
        probe = subprocess.run(
            [sys.executable, "-c", "import serialx, gizmo_host.deploy.diagnostics"],
            user="nobody",
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except OSError as exc:  # e.g. the interpreter lives under a directory nobody cannot enter
        return f"user nobody cannot run {sys.executable}: {exc}"
    if probe.returncode != 0:
        return f"user nobody cannot import gizmo_host from this checkout: {probe.stderr[-200:]}"
    return None


_DROP_PROBLEM = _cannot_drop_to_nobody()
needs_root = pytest.mark.skipif(_DROP_PROBLEM is not None, reason=str(_DROP_PROBLEM))


@pytest.fixture
def pty_path() -> Iterator[str]:
    master, slave = os.openpty()
    try:
        yield os.ttyname(slave)
    finally:
        os.close(slave)
        os.close(master)


def _open_error(path: str) -> OSError:
    async def attempt() -> OSError:
        try:
            transport, _ = await serialx.create_serial_connection(
                asyncio.get_running_loop(), asyncio.Protocol, path, 115200
            )
        except OSError as exc:
            return exc
        transport.close()
        raise AssertionError(f"{path} opened, but the test expected it to fail")

    return asyncio.run(attempt())


def _open_as(path: str, user: str, extra_groups: list[int]) -> subprocess.CompletedProcess[str]:
    account = pwd.getpwnam(user)
    return subprocess.run(
        [sys.executable, os.fspath(OPEN_PORT_CHILD), path],
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=extra_groups,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        cwd="/",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@needs_root
def test_permission_denied_names_the_group_to_join(pty_path):
    dialout = grp.getgrnam("dialout").gr_gid
    os.chown(pty_path, 0, dialout)
    os.chmod(pty_path, 0o660)
    denied = _open_as(pty_path, "nobody", extra_groups=[])
    assert denied.returncode == 1, denied.stderr
    assert "permission denied" in denied.stdout
    assert "root:dialout with mode 0660" in denied.stdout
    assert "user nobody is not in group dialout" in denied.stdout
    assert "usermod -aG dialout nobody" in denied.stdout
    # The advice works: the same user with the group joined opens the port.
    allowed = _open_as(pty_path, "nobody", extra_groups=[dialout])
    assert allowed.stdout.strip() == "opened", allowed.stderr


@needs_root
def test_permission_denied_on_an_owner_only_node_points_to_the_udev_rule(pty_path):
    os.chown(pty_path, 0, 0)
    os.chmod(pty_path, 0o600)
    denied = _open_as(pty_path, "nobody", extra_groups=[])
    assert denied.returncode == 1, denied.stderr
    assert "only root may use it" in denied.stdout
    assert "udev rule" in denied.stdout
    assert "0660" in denied.stdout


@contextlib.contextmanager
def _held_by_modem_manager(path: str, how: str, directory: Path) -> Iterator[subprocess.Popen[str]]:
    """A real process named ``ModemManager`` holding ``path`` open and locked (``how``)."""
    impostor = directory / "ModemManager"
    impostor.symlink_to(os.path.realpath(sys.executable))
    holder = subprocess.Popen(
        [os.fspath(impostor), "-I", os.fspath(FLOCK_HOLDER), path, how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()


@pytest.fixture
def modem_manager_holding(pty_path, tmp_path) -> Iterator[subprocess.Popen[str]]:
    with _held_by_modem_manager(pty_path, "flock", tmp_path) as holder:
        yield holder


def test_busy_port_names_the_holding_process(pty_path, modem_manager_holding):
    exc = _open_error(pty_path)
    assert exc.errno == errno.EBUSY
    message = explain_open_error(pty_path, exc)
    assert f"ModemManager (pid {modem_manager_holding.pid}, flock)" in message
    assert "ID_MM_DEVICE_IGNORE=1" in message


def test_find_port_holders_sees_the_holder_but_not_ourselves(pty_path, modem_manager_holding):
    fd = os.open(pty_path, os.O_RDWR | os.O_NOCTTY)
    try:
        holders = find_port_holders(pty_path)
    finally:
        os.close(fd)
    assert [(h.pid, h.name) for h in holders] == [(modem_manager_holding.pid, "ModemManager")]


@needs_root
def test_busy_port_holder_is_named_to_an_unprivileged_user(pty_path, modem_manager_holding):
    """The holder runs as root, so its /proc/PID/fd is hidden; /proc/locks still names it."""
    os.chmod(pty_path, 0o666)
    result = _open_as(pty_path, "nobody", extra_groups=[])
    assert result.returncode == 1, result.stderr
    assert f"ModemManager (pid {modem_manager_holding.pid}, flock)" in result.stdout


@needs_root
def test_busy_port_with_hidden_holder_names_the_running_suspects(pty_path, tmp_path):
    """TIOCEXCL leaves no lock entry and root's fds are hidden: name who is running instead."""
    os.chmod(pty_path, 0o666)
    with _held_by_modem_manager(pty_path, "excl", tmp_path) as holder:
        result = _open_as(pty_path, "nobody", extra_groups=[])
    assert result.returncode == 1, result.stderr
    assert "this user cannot see which" in result.stdout
    assert f"sudo fuser -v {pty_path}" in result.stdout
    # Another test run on the machine may hold a port by a "ModemManager" of its own: this
    # one's holder must be among those named, not necessarily the only one.
    suspects = result.stdout.split("known to grab serial ports: ", 1)[1]
    assert f"ModemManager (pid {holder.pid})" in suspects


def test_eperm_on_a_tty_suggests_admitting_the_node_alone(pty_path):
    """EPERM is what the device cgroup returns; the fix admits that node and nothing else.

    The error itself is constructed (this test cannot enter a device cgroup); the driver comes
    from the real /proc/tty/drivers for the real pty."""
    message = explain_open_error(pty_path, PermissionError(errno.EPERM, "Operation not permitted"))
    node = os.stat(pty_path).st_rdev
    assert "admits only its own instance's node" in message
    assert f"char {os.major(node)}:{os.minor(node)} (tty driver pty_slave)" in message
    assert message.endswith(f"DeviceAllow={os.path.realpath(pty_path)} rw")
    assert "char-" not in message  # a driver class admits every port of the driver


# The kernel lists the VT master before the serial driver on major 4; /proc/devices names
# "/dev/vc/0" first for major 4, which an earlier version took for every major-4 node.
PROC_TTY_DRIVERS = """\
/dev/tty             /dev/tty        5       0 system:/dev/tty
/dev/console         /dev/console    5       1 system:console
/dev/ptmx            /dev/ptmx       5       2 system
/dev/vc/0            /dev/vc/0       4       0 system:vtmaster
usbserial            /dev/ttyUSB   188 0-511 serial
serial               /dev/ttyS       4 64-111 serial
pty_slave            /dev/pts      136 0-1048575 pty:slave
unknown              /dev/tty        4 1-63 console
"""


@pytest.mark.parametrize(
    ("major", "minor", "driver"),
    [(4, 64, "serial"), (4, 111, "serial"), (4, 0, "/dev/vc/0"), (4, 1, "unknown"),
     (4, 63, "unknown"), (188, 0, "usbserial"), (4, 112, None), (204, 64, None)],
)  # fmt: skip
def test_the_tty_driver_is_found_by_major_and_minor(tmp_path, major, minor, driver):
    (tmp_path / "tty").mkdir()
    (tmp_path / "tty" / "drivers").write_text(PROC_TTY_DRIVERS)
    assert tty_driver_name(tmp_path, major, minor) == driver


def test_no_proc_tty_drivers_names_no_driver(tmp_path):
    assert tty_driver_name(tmp_path, 4, 64) is None


def test_missing_device_says_it_keeps_retrying(tmp_path):
    path = os.fspath(tmp_path / "gizmo0")
    message = explain_open_error(path, _open_error(path))
    assert "does not exist" in message
    assert "keeps retrying" in message


def test_dangling_symlink_says_unplugged_and_retrying(tmp_path):
    link = tmp_path / "gizmo0"
    link.symlink_to(tmp_path / "ttyUSB0")
    message = explain_open_error(os.fspath(link), _open_error(os.fspath(link)))
    assert "dangling link" in message
    assert "keeps retrying" in message


def test_not_a_tty_is_named(tmp_path):
    regular = tmp_path / "not-a-port"
    regular.write_bytes(b"")
    message = explain_open_error(os.fspath(regular), _open_error(os.fspath(regular)))
    assert "not a serial port" in message
