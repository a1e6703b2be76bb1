"""sd_notify: environment parsing, and READY/WATCHDOG/STOPPING from a real process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gizmo_host.deploy.sd_notify import MIN_WATCHDOG_PING_S, SdNotifier, watchdog_loop

CHILD = Path(__file__).with_name("notify_child.py")


def test_no_notify_socket_means_no_notifier():
    assert SdNotifier.from_environment({}) is None
    assert SdNotifier.from_environment({"NOTIFY_SOCKET": ""}) is None


def test_watchdog_interval_is_half_of_watchdog_usec():
    notifier = SdNotifier.from_environment(
        {"NOTIFY_SOCKET": "/run/systemd/notify", "WATCHDOG_USEC": "3000000"}
    )
    assert notifier is not None
    assert notifier.watchdog_interval_s == pytest.approx(1.5)


def test_watchdog_off_without_watchdog_usec():
    notifier = SdNotifier.from_environment({"NOTIFY_SOCKET": "/run/systemd/notify"})
    assert notifier is not None
    assert notifier.watchdog_interval_s is None


def test_watchdog_pid_of_this_process_enables_and_other_pid_disables():
    env = {"NOTIFY_SOCKET": "@sd", "WATCHDOG_USEC": "1000000"}
    mine = SdNotifier.from_environment({**env, "WATCHDOG_PID": str(os.getpid())})
    other = SdNotifier.from_environment({**env, "WATCHDOG_PID": str(os.getpid() + 1)})
    assert mine is not None and mine.watchdog_interval_s == pytest.approx(0.5)
    assert other is not None and other.watchdog_interval_s is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"NOTIFY_SOCKET": "relative/path"}, "NOTIFY_SOCKET"),
        ({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "soon"}, "WATCHDOG_USEC"),
        ({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "0"}, "WATCHDOG_USEC"),
        ({"NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "5", "WATCHDOG_PID": "me"}, "WATCHDOG_PID"),
    ],
)
def test_malformed_environment_names_the_variable(env, named):
    with pytest.raises(ValueError, match=named):
        SdNotifier.from_environment(env)


def test_messages_reach_an_abstract_socket(abstract_notify_receiver):
    notifier = SdNotifier.from_environment({"NOTIFY_SOCKET": abstract_notify_receiver.env_value})
    assert notifier is not None
    notifier.ready(status="up\nand running")
    assert abstract_notify_receiver.receive() == {"READY": "1", "STATUS": "up and running"}
    notifier.status("linked")
    assert abstract_notify_receiver.receive() == {"STATUS": "linked"}


def test_notify_rejects_a_line_that_would_inject_another_assignment(notify_receiver):
    notifier = SdNotifier(notify_receiver.env_value)
    with pytest.raises(ValueError, match="KEY=VALUE"):
        notifier.notify("STATUS=ok\nREADY=1")


def test_send_to_a_vanished_socket_raises_oserror(tmp_path):
    notifier = SdNotifier(os.fspath(tmp_path / "gone.sock"))
    with pytest.raises(OSError):
        notifier.watchdog()


def test_watchdog_loop_returns_at_once_when_watchdog_is_off(notify_receiver):
    asyncio.run(asyncio.wait_for(watchdog_loop(SdNotifier(notify_receiver.env_value)), 5))
    asyncio.run(asyncio.wait_for(watchdog_loop(None), 5))


def _spawn_child(receiver, watchdog_usec: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "NOTIFY_SOCKET": receiver.env_value,
        "WATCHDOG_USEC": str(watchdog_usec),
    }
    return subprocess.Popen(
        [sys.executable, os.fspath(CHILD)], env=env, stdin=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize("receiver_fixture", ["notify_receiver", "abstract_notify_receiver"])
def test_real_process_sends_ready_watchdog_and_stopping(receiver_fixture, request):
    receiver = request.getfixturevalue(receiver_fixture)
    child = _spawn_child(receiver, watchdog_usec=200_000)
    try:
        seen = receiver.receive_until("READY", "1")
        seen += receiver.receive_until("WATCHDOG", "1")
        seen += receiver.receive_until("WATCHDOG", "1")  # a second ping: it is periodic
        child.stdin.write("stop\n")
        child.stdin.flush()
        seen += receiver.receive_until("STOPPING", "1")
        assert child.wait(timeout=10) == 0
    finally:
        child.kill()
        child.wait()
    ready_index = next(i for i, m in enumerate(seen) if m.get("READY") == "1")
    assert seen[ready_index]["STATUS"] == "listening"
    assert seen[-1] == {"STOPPING": "1"}


@pytest.mark.realtime
def test_watchdog_pings_stop_while_the_event_loop_is_blocked(notify_receiver):
    """A hung loop must starve the watchdog, so systemd (WatchdogSec=) restarts the service."""
    interval_usec = 100_000  # pings every 50 ms
    child = _spawn_child(notify_receiver, watchdog_usec=interval_usec)
    try:
        notify_receiver.receive_until("WATCHDOG", "1")
        child.stdin.write("block\n")
        child.stdin.flush()
        notify_receiver.receive_until("STATUS", "blocking")
        # Negative check: listen for ten full watchdog periods while the loop is blocked. Any
        # datagram here would be a ping from a loop that is supposed to be stuck.
        with pytest.raises(TimeoutError):
            notify_receiver.receive(timeout_s=10 * interval_usec / 1e6)
        child.stdin.write("unblock\n")
        child.stdin.flush()
        assert notify_receiver.receive() == {"STATUS": "unblocked"}
        assert notify_receiver.receive() == {"WATCHDOG": "1"}  # pings resume with the loop
        child.stdin.write("stop\n")
        child.stdin.flush()
        notify_receiver.receive_until("STOPPING", "1")
        assert child.wait(timeout=10) == 0
    finally:
        child.kill()
        child.wait()


def test_a_tiny_watchdog_interval_never_spins_the_pings():
    """WATCHDOG_USEC=1 would mean a ping every 0.5 us: a busy loop. The floor is 10 ms."""
    notifier = SdNotifier.from_environment({"NOTIFY_SOCKET": "/run/notify", "WATCHDOG_USEC": "1"})
    assert notifier is not None and notifier.watchdog_interval_s == MIN_WATCHDOG_PING_S == 0.01
