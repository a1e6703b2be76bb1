"""The doctor's verdicts over facts (no I/O): every failure mode names its cause and its fix,
and the exit status follows the worst verdict."""

from __future__ import annotations

import dataclasses
import errno
from dataclasses import replace

import pytest

from gizmo_host.doctor.checks import Status, exit_code, run_checks
from gizmo_host.doctor.facts import Holder, SocketClients, SocketPeer
from tests.support.doctor_facts import broken, healthy

MM = Holder(812, "ModemManager", "flock")
FULL = SocketClients(
    refused=True, clients=2, max_clients=2, refused_total=7, evicted=1,
    peers=(SocketPeer(40, "socat", 0), SocketPeer(41, None, 12)),
)  # fmt: skip


def test_a_healthy_installation_passes_every_check():
    checks = run_checks(healthy())
    assert [c for c in checks if c.status is not Status.OK] == []
    assert exit_code(checks) == 0
    names = {c.name for c in checks}
    for name in ("device", "udev rule", "driver", "permissions", "unit DeviceAllow"):
        assert name in names
    driver = next(c for c in checks if c.name == "driver")
    assert "ftdi_sio" in driver.evidence and "0403:6001" in driver.evidence


# (part, changes, check, status, words in the evidence, words in the fix)
CASES = [
    ("device", {"exists": False, "is_link": True}, "device", Status.FAIL,
     "dangling udev link", "plug the board in"),
    ("device", {"rule_files": ()}, "udev rule", Status.WARN, "no gizmo-host udev rule",
     "gizmo-host install --serial"),
    ("device", {"rule_names_device": False}, "udev rule", Status.WARN, "A10K1234",
     "install --serial A10K1234"),
    ("device", {"open_errno": errno.EACCES, "mode": 0o20600}, "permissions", Status.FAIL,
     "cannot open it", "udev rule (group dialout, mode 0660)"),
    ("access", {"groups": ("pilot",), "group_members": ()}, None, None, None, None),
    ("access", {"device_allow": ("char-ttyS rw", "char-ttyUSB rw")}, "unit DeviceAllow",
     Status.WARN, "char-ttyS rw", "admits only /dev/%I"),
    ("access", {"unit_path": None}, "unit", Status.WARN, "not installed", "gizmo-host install"),
    ("holders", {"holders": (MM,)}, "port holders", Status.FAIL,
     "ModemManager (pid 812, flock)", "ID_MM_DEVICE_IGNORE"),
    ("holders", {"grabbers_running": (Holder(9, "brltty", "running"),)}, "port holders",
     Status.WARN, "brltty (pid 9)", "apt remove brltty"),
    ("stream", {"bytes_in": 0, "frames_ok": 0}, "stream", Status.FAIL, "no byte in 3.0 s",
     "TX->RX wire"),
    ("stream", {"frames_ok": 0, "rates_tried": {57600: 40, 9600: 0}}, "baud rate", Status.FAIL,
     "at 57600 baud 40 frames decode", "baudrate = 57600"),
    ("stream", {"frames_ok": 0, "rates_tried": {57600: 0}}, "stream", Status.FAIL,
     "no valid frame at any rate", "wiring"),
    ("stream", {"frames_ok": 6}, "stream", Status.WARN, "2.0 frames/s", "recognition rate"),
    ("stream", {"bytes_discarded": 1000, "crc_errors": 12}, "stream errors", Status.FAIL,
     "12 CRC errors", "noisy line"),
    ("stream", {"resets": 2}, "board sequence", Status.WARN, "2 resets", "power supply"),
    ("stream", {"lost": 10}, "board sequence", Status.WARN, "10 frames lost", "line"),
    ("stream", {"clock_status": "converging"}, "board clock", Status.WARN, "converging",
     "--seconds 10"),
    ("stream", {"latency_ms": (150.0,) * 10}, "board latency", Status.WARN, "p95 150 ms",
     "overloaded"),
    ("rfly", {"config_error": "Config.json: no such file"}, "rflysim config", Status.FAIL,
     "no such file", "[rflysim] config"),
    ("rfly", {"camera_issues": ("[camera] width_px = 640 but Config.json SeqID 1 has 1280",)},
     "rflysim config", Status.FAIL, "has 1280", "make [camera] match"),
    ("rfly", {"datagrams": {"sensor 2 (udp 9999)": 0, "state (udp 30101)": 40}},
     "rflysim datagrams", Status.FAIL, "nothing on sensor 2 (udp 9999)", "firewall"),
    ("rfly", {"odometry_answered": False}, "rflysim odometry", Status.FAIL, "not answered",
     "CopterSim must run"),
    ("mavlink", {"heartbeat": False}, "mavlink heartbeat", Status.FAIL, "no HEARTBEAT",
     "MAV_n_CONFIG"),
    ("mavlink", {"rtt_ms": None}, "mavlink timesync", Status.WARN, "no TIMESYNC answer",
     "enable TIMESYNC"),
    ("mavlink", {"rtt_ms": 8.0}, "mavlink timesync", Status.OK,
     "recommended PLND_LAG 0.016 s (board latency p50 12 ms + one way 4.0 ms)", ""),
    ("mavlink", {"target_system": 0}, "mavlink target", Status.WARN, "target_system = 0",
     "set [mavlink] target_system"),
    ("mavlink", {"rates_hz": {}}, "mavlink poses", Status.WARN, "no pose message",
     "stream rates"),
    ("service", {"systemctl": {"LoadState": "loaded", "ActiveState": "failed",
                               "Result": "watchdog", "ExecMainStatus": "6"}},
     "service", Status.FAIL, "last result watchdog", "journalctl -u gizmo-host@gizmo0"),
    ("service", {"socket_mode": 0o140666}, "socket", Status.WARN, "other users may connect",
     "UMask"),
    ("service", {"clients": FULL}, "socket clients", Status.WARN,
     "full, this probe refused: 2 of 2 client slots held: pid 40 (socat, 0 B unread), pid 41 "
     "(?, 12 B unread); 7 refused", "raise [publish] unix_max_clients (now 2)"),
    ("service", {"clients": replace(FULL, refused=False, clients=1, peers=FULL.peers[:1])},
     "socket clients", Status.WARN, "1 of 2 client slots held: pid 40 (socat, 0 B unread); 7 "
     "refused, 1 evicted, 0 dropped since start", "stop the clients that hold a slot"),
    ("service", {"clients": SocketClients(max_clients=16)}, "socket clients", Status.OK,
     "0 of 16 client slots held; 0 refused", ""),
    ("service", {"clients": SocketClients(error="cannot connect to x: Permission denied")},
     "socket clients", Status.SKIP, "Permission denied", ""),
]  # fmt: skip


@pytest.mark.parametrize(("part", "changes", "name", "status", "evidence", "fix"), CASES)
def test_each_failure_mode_names_its_cause_and_fix(part, changes, name, status, evidence, fix):
    checks = run_checks(broken(part, **changes))
    if name is None:  # not in the device's group, but the device opened: nothing to say
        assert exit_code(checks) == 0
        return
    check = next(c for c in checks if c.name == name and c.status is status)
    assert evidence in check.evidence, check
    assert fix in check.fix, check
    assert exit_code(checks) == {Status.FAIL: 2, Status.WARN: 1}.get(status, 0)


def test_permission_advice_tells_a_new_member_to_log_in_again_and_others_to_join():
    refused = broken("device", open_errno=errno.EACCES)
    relog = dataclasses.replace(refused, access=replace(refused.access, groups=("pilot",)))
    check = next(c for c in run_checks(relog) if c.name == "permissions")
    assert check.status is Status.FAIL and "log out and in" in check.fix
    stranger = dataclasses.replace(relog, access=replace(relog.access, group_members=()))
    check = next(c for c in run_checks(stranger) if c.name == "permissions")
    assert "usermod -aG dialout pilot" in check.fix


def test_unconfigured_parts_and_a_ptys_deployment_are_skipped_not_failed():
    facts = broken("rfly", config=None)
    facts = dataclasses.replace(facts, mavlink=replace(facts.mavlink, url=None))
    pty = replace(facts.device, driver="pty", rule_files=(), is_link=False, usb=None)
    facts = dataclasses.replace(
        facts, device=pty, access=replace(facts.access, unit_path=None), service=replace(
            facts.service, systemctl={"LoadState": "not-found"}, socket_mode=None
        ),
    )  # fmt: skip
    statuses = {c.name: c.status for c in run_checks(facts)}
    for name in ("rflysim", "mavlink", "udev rule", "unit", "service"):
        assert statuses[name] is Status.SKIP, name
    assert exit_code(run_checks(facts)) == 0
