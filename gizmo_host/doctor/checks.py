"""The doctor's verdicts: pure functions of :class:`~gizmo_host.doctor.facts.Facts`.

Each check gives ok, warn or fail (or skip, for what is not configured or could not be read
because an earlier check failed) with one line of evidence and one line of fix. No I/O here:
what the machine says was gathered before (:mod:`gizmo_host.doctor.gather`).
"""

from __future__ import annotations

import errno
import math
import stat
from collections.abc import Callable, Sequence
from enum import Enum
from typing import NamedTuple

from gizmo_host.doctor.facts import Facts, StreamFacts

GRABBER_FIXES = {
    "ModemManager": "the gizmo-host udev rule sets ID_MM_DEVICE_IGNORE=1 (install it, replug), "
    "or `sudo systemctl disable --now ModemManager`",
    "brltty": "`sudo apt remove brltty` (unless a braille display is in use)",
    "gizmo-host": "another gizmo-host reads this port: `systemctl status 'gizmo-host@*'`; "
    "stop the one you do not want",
    "agetty": "a login console runs on it: `sudo systemctl disable --now serial-getty@<port>`",
    "gpsd": "remove this port from gpsd's DEVICES",
}
MIN_FRAME_RATE_HZ = 5.0  # the board sends a frame per recognition cycle (30 Hz), found or not
DISCARDED_WARN = 0.01
DISCARDED_FAIL = 0.2
LOST_WARN = 0.02
SKEW_WARN_PPM = 200.0
LATENCY_WARN_MS = 100.0  # the board's processing age, p95


class Status(Enum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class Check(NamedTuple):
    name: str
    status: Status
    evidence: str
    fix: str = ""


def exit_code(checks: Sequence[Check]) -> int:
    """0 when all pass, 1 on a warning, 2 on a failure."""
    statuses = {c.status for c in checks}
    return 2 if Status.FAIL in statuses else 1 if Status.WARN in statuses else 0


def _ok(name: str, evidence: str) -> Check:
    return Check(name, Status.OK, evidence)


# -- the device ----------------------------------------------------------------------------


def device_checks(facts: Facts) -> list[Check]:
    d = facts.device
    out: list[Check] = []
    if not d.exists:
        dangling = " (a dangling udev link: the board was unplugged)" if d.is_link else ""
        out.append(
            Check(
                "device",
                Status.FAIL,
                f"{d.path} does not exist{dangling}",
                "plug the board in; check `ls -l /dev/gizmo* /dev/ttyUSB* /dev/ttyACM*` and "
                "that the udev rule matches it (`gizmo-host install --serial <SERIAL>`)",
            )
        )
    elif not d.is_char:
        out.append(
            Check("device", Status.FAIL, f"{d.path} is not a character device", "--serial PATH")
        )
    else:
        shown = f"{d.path} -> {d.target}" if d.is_link else d.path
        out.append(_ok("device", f"{shown}, char {d.rdev[0]}:{d.rdev[1]}" if d.rdev else shown))
    if d.driver == "pty":
        out.append(Check("udev rule", Status.SKIP, f"{d.path} is a pty: no udev rule applies"))
    elif not d.rule_files:
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                "no gizmo-host udev rule in /etc/udev/rules.d",
                "`sudo gizmo-host install --serial <SERIAL>` (a stable /dev/gizmo0, group "
                "dialout, ModemManager told to keep off)",
            )
        )
    elif d.rule_names_device is False:
        serial = d.usb.serial if d.usb else "?"
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                f"{', '.join(d.rule_files)} installed, but no rule names this adapter's serial "
                f"{serial}",
                f"`sudo gizmo-host install --serial {serial}` and replug",
            )
        )
    elif d.exists and not d.is_link and d.rule_files:
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                f"{', '.join(d.rule_files)} installed, but {d.path} is the kernel's name, not "
                "the rule's link",
                "use --serial /dev/gizmo0 (the rule's stable name)",
            )
        )
    else:
        out.append(_ok("udev rule", f"{', '.join(d.rule_files)}; {d.path} is its link"))
    if d.exists and d.is_char:
        ids = (
            f"USB {d.usb.vendor}:{d.usb.product} serial {d.usb.serial or '-'}"
            if d.usb
            else "not USB (an on-board UART or a pty)"
        )
        out.append(_ok("driver", f"driver {d.driver or 'unknown'}, {ids}"))
    return out


# -- access --------------------------------------------------------------------------------


def access_checks(facts: Facts) -> list[Check]:
    d, a = facts.device, facts.access
    out: list[Check] = []
    if d.exists and d.is_char and d.mode is not None:
        mode = stat.S_IMODE(d.mode)
        node = f"{d.target or d.path} {d.owner}:{d.group} {mode:04o}"
        if d.open_errno is None:
            out.append(_ok("permissions", f"{node}; opened read-only as {a.user}"))
        elif d.open_errno in (errno.EACCES, errno.EPERM):
            in_group = d.group in a.groups
            listed = a.user in a.group_members
            if not mode & stat.S_IRGRP or not mode & stat.S_IWGRP:
                fix = "install the udev rule (group dialout, mode 0660) and replug"
            elif listed and not in_group:
                fix = f"{a.user} joined {d.group} after this session started: log out and in"
            else:
                fix = f"`sudo usermod -aG {d.group} {a.user}`, then log out and in"
            out.append(
                Check(
                    "permissions",
                    Status.FAIL,
                    f"{node}; {a.user} (groups {', '.join(a.groups) or '-'}) cannot open it",
                    fix,
                )
            )
        elif d.open_errno == errno.EBUSY:
            out.append(_ok("permissions", f"{node}; busy (see the next check), not refused"))
        else:
            out.append(
                Check("permissions", Status.WARN, f"{node}; open failed", d.open_error or "-")
            )
    if a.unit_path is None and d.driver == "pty":
        out.append(Check("unit", Status.SKIP, "a pty (the emulator): not a service's port"))
    elif a.unit_path is None:
        out.append(
            Check(
                "unit",
                Status.WARN,
                "gizmo-host@.service is not installed",
                "`sudo gizmo-host install --serial <SERIAL>` to run it as a service",
            )
        )
    else:
        classes = [v for v in a.device_allow if v.split()[0].startswith("char-")]
        if classes:
            out.append(
                Check(
                    "unit DeviceAllow",
                    Status.WARN,
                    f"{a.unit_path} allows whole driver classes: {', '.join(classes)}",
                    "reinstall (`sudo gizmo-host install`): the unit now admits only /dev/%I",
                )
            )
        elif not a.device_allow:
            out.append(
                Check(
                    "unit DeviceAllow",
                    Status.WARN,
                    f"{a.unit_path} has no DeviceAllow=: every device is refused",
                    "reinstall the unit (`sudo gizmo-host install`)",
                )
            )
        else:
            out.append(_ok("unit DeviceAllow", f"{a.unit_path}: {', '.join(a.device_allow)}"))
    return out


def holder_checks(facts: Facts) -> list[Check]:
    h = facts.holders
    if not facts.device.exists:
        return [Check("port holders", Status.SKIP, "no device to hold")]
    if h.holders:
        names = ", ".join(f"{x.name} (pid {x.pid}, {x.how})" for x in h.holders)
        fixes = [GRABBER_FIXES.get(x.name, f"stop pid {x.pid}") for x in h.holders]
        return [Check("port holders", Status.FAIL, f"held by {names}", "; ".join(fixes))]
    unseen = (
        f"; {h.unreadable} processes of other users not readable (root would see them)"
        if h.unreadable
        else ""
    )
    # brltty claims adapters whatever the rule says; ModemManager keeps off with the rule.
    risky = [
        x
        for x in h.grabbers_running
        if x.name == "brltty" or (x.name == "ModemManager" and not facts.device.rule_files)
    ]
    if risky:
        names = ", ".join(f"{x.name} (pid {x.pid})" for x in risky)
        return [
            Check(
                "port holders",
                Status.WARN,
                f"nobody holds it now{unseen}, but running: {names}",
                "; ".join(GRABBER_FIXES[x.name] for x in risky),
            )
        ]
    return [_ok("port holders", f"nobody else has it open or locked{unseen}")]


# -- the stream and the board ----------------------------------------------------------------


def _rate(s: StreamFacts) -> float:
    return s.frames_ok / s.seconds if s.seconds > 0 else 0.0


def stream_checks(facts: Facts) -> list[Check]:
    s = facts.stream
    if s.skipped is not None:
        return [Check("stream", Status.SKIP, f"not read: {s.skipped}")]
    counts = f"{s.bytes_in} bytes, {s.frames_ok} frames in {s.seconds:.1f} s at {s.baudrate} baud"
    if s.bytes_in == 0:
        return [
            Check(
                "stream",
                Status.FAIL,
                f"no byte in {s.seconds:.1f} s",
                "the board sends nothing: check its power, the TX->RX wire and the ground, and "
                "that the board's firmware runs",
            )
        ]
    out: list[Check] = []
    if s.frames_ok == 0:
        decoding = [rate for rate, frames in sorted(s.rates_tried.items()) if frames > 0]
        if decoding:
            out.append(
                Check(
                    "baud rate",
                    Status.FAIL,
                    f"{counts}: bytes but no valid frame; at {decoding[0]} baud "
                    f"{s.rates_tried[decoding[0]]} frames decode",
                    f"set [serial] baudrate = {decoding[0]} (or the board's rate to {s.baudrate})",
                )
            )
        else:
            tried = ", ".join(str(r) for r in sorted(s.rates_tried)) or "none"
            out.append(
                Check(
                    "stream",
                    Status.FAIL,
                    f"{counts}: bytes but no valid frame at any rate tried ({tried})",
                    "not a Gizmo board's VISION_RESULT stream: check the wiring (TX to RX), "
                    "the port, and the board's protocol version",
                )
            )
        return out
    rate = _rate(s)
    if rate < MIN_FRAME_RATE_HZ:
        out.append(
            Check(
                "stream",
                Status.WARN,
                f"{counts}: {rate:.1f} frames/s",
                f"the board should send >= {MIN_FRAME_RATE_HZ:.0f}/s; check its load and "
                "its recognition rate",
            )
        )
    else:
        out.append(_ok("stream", f"{counts}: {rate:.1f} frames/s"))
    ratio = s.bytes_discarded / s.bytes_in
    errors = (
        f"{s.crc_errors} CRC errors, {s.header_errors} header errors, "
        f"{100 * ratio:.2f}% of bytes discarded"
    )
    if ratio > DISCARDED_FAIL:
        out.append(
            Check(
                "stream errors",
                Status.FAIL,
                errors,
                "a noisy line: shorter or shielded cable, common ground, lower baud rate",
            )
        )
    elif ratio > DISCARDED_WARN or s.crc_errors:
        out.append(Check("stream errors", Status.WARN, errors, "check the cable and the ground"))
    else:
        out.append(_ok("stream errors", errors))
    return out


def board_checks(facts: Facts) -> list[Check]:
    s = facts.stream
    if s.skipped is not None or s.frames_ok == 0:
        return [Check("board", Status.SKIP, "no frame to judge it by")]
    out: list[Check] = []
    lost_ratio = s.lost / (s.frames_ok + s.lost)
    seq = f"{s.lost} frames lost in sequence gaps ({100 * lost_ratio:.1f}%), {s.resets} resets"
    if s.resets:
        out.append(
            Check(
                "board sequence",
                Status.WARN,
                seq,
                "the board restarted while read: check its power supply (brown-outs)",
            )
        )
    elif lost_ratio > LOST_WARN:
        out.append(Check("board sequence", Status.WARN, seq, "check the line (see stream errors)"))
    else:
        out.append(_ok("board sequence", seq))
    skew = "-" if s.skew_ppm is None or not math.isfinite(s.skew_ppm) else f"{s.skew_ppm:+.0f}"
    clock = f"device clock {s.clock_status or 'unknown'}, skew {skew} ppm"
    if s.clock_status != "locked":
        out.append(
            Check(
                "board clock",
                Status.WARN,
                clock,
                "not locked within the sample: read longer (--seconds 10); a board whose "
                "timestamp_ms does not advance with its frames never locks",
            )
        )
    elif s.skew_ppm is not None and abs(s.skew_ppm) > SKEW_WARN_PPM:
        out.append(Check("board clock", Status.WARN, clock, "the board's oscillator is off"))
    else:
        out.append(_ok("board clock", clock))
    p50, p95 = _percentile(s.latency_ms, 0.5), _percentile(s.latency_ms, 0.95)
    if p50 is not None and p95 is not None:
        most = max(s.latency_ms)
        text = f"board latency (age_ms) p50 {p50:.0f} ms, p95 {p95:.0f} ms, max {most:.0f}"
        if p95 > LATENCY_WARN_MS:
            out.append(
                Check("board latency", Status.WARN, text, "the board is overloaded or throttled")
            )
        else:
            out.append(_ok("board latency", text))
    return out


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# -- RflySim and MAVLink -------------------------------------------------------------------


def rfly_checks(facts: Facts) -> list[Check]:
    r = facts.rfly
    if r.config is None:
        return [Check("rflysim", Status.SKIP, "not configured ([rflysim] config)")]
    if r.config_error is not None:
        return [
            Check(
                "rflysim config",
                Status.FAIL,
                r.config_error,
                "point [rflysim] config at the Config.json RflySim uses",
            )
        ]
    out: list[Check] = []
    if r.camera_issues:
        out.append(
            Check(
                "rflysim config",
                Status.FAIL,
                "; ".join(r.camera_issues),
                "make [camera] match the Config.json sensor (or set [camera] rflysim_sensor "
                "and drop the copied values)",
            )
        )
    else:
        out.append(_ok("rflysim config", f"{r.config} found; [camera] agrees with it"))
    silent = [name for name, count in r.datagrams.items() if count == 0]
    heard = ", ".join(f"{name}: {count}" for name, count in r.datagrams.items())
    if silent:
        out.append(
            Check(
                "rflysim datagrams",
                Status.FAIL,
                f"nothing on {', '.join(silent)} (heard: {heard})",
                "is RflySim running and sending to this machine? a firewall (ufw, Windows "
                "Defender on the RflySim PC) may drop the UDP ports; check the IP in Config.json",
            )
        )
    elif r.datagrams:
        out.append(_ok("rflysim datagrams", heard))
    if r.odometry_answered is False:
        out.append(
            Check(
                "rflysim odometry",
                Status.FAIL,
                "the odometry request was not answered",
                "CopterSim must run for [rflysim] copter_id, and reach this machine",
            )
        )
    elif r.odometry_answered:
        out.append(_ok("rflysim odometry", "the odometry request was answered"))
    return out


def mavlink_checks(facts: Facts) -> list[Check]:
    m = facts.mavlink
    if m.url is None:
        return [Check("mavlink", Status.SKIP, "not configured ([mavlink] url)")]
    if m.error is not None:
        return [Check("mavlink", Status.FAIL, f"{m.url}: {m.error}", "check [mavlink] url")]
    if not m.heartbeat:
        return [
            Check(
                "mavlink heartbeat",
                Status.FAIL,
                f"no HEARTBEAT on {m.url}",
                "is the autopilot's MAVLink output on that port/baud (MAV_n_CONFIG, "
                "SERIALn_PROTOCOL) and is its system id the one expected?",
            )
        ]
    out = [_ok("mavlink heartbeat", f"{m.autopilot or 'an autopilot'} on {m.url}")]
    if m.rtt_ms is None:
        out.append(
            Check(
                "mavlink timesync",
                Status.WARN,
                "no TIMESYNC answer",
                "enable TIMESYNC on the autopilot (PX4: MAV_n_CONFIG; ArduPilot answers)",
            )
        )
    else:
        board_ms = _percentile(facts.stream.latency_ms, 0.5)
        one_way_ms = max(0.0, m.rtt_ms / 2)
        if board_ms is None:
            lag = f"PLND_LAG >= {one_way_ms / 1000:.3f} s plus the board's latency (not read)"
        else:
            lag = (
                f"recommended PLND_LAG {(board_ms + one_way_ms) / 1000:.3f} s (board latency "
                f"p50 {board_ms:.0f} ms + one way {one_way_ms:.1f} ms)"
            )
        out.append(
            _ok(
                "mavlink timesync",
                f"round trip {m.rtt_ms:.1f} ms, offset {m.offset_ms or 0:.1f} ms; {lag}",
            )
        )
    rates = ", ".join(f"{k} {v:.0f} Hz" for k, v in sorted(m.rates_hz.items()))
    if not m.rates_hz:
        out.append(
            Check(
                "mavlink poses",
                Status.WARN,
                "no pose message (ATTITUDE_QUATERNION, LOCAL_POSITION_NED, ODOMETRY)",
                "the autopilot ignored SET_MESSAGE_INTERVAL: set its stream rates",
            )
        )
    else:
        out.append(_ok("mavlink poses", rates))
    return out


# -- the service ---------------------------------------------------------------------------


def service_checks(facts: Facts) -> list[Check]:
    v = facts.service
    if facts.device.driver == "pty" and (
        v.systemctl is None or v.systemctl.get("LoadState") == "not-found"
    ):
        return [Check("service", Status.SKIP, f"{facts.device.path} is a pty: no service")]
    if v.systemctl is None:
        out = [Check("service", Status.SKIP, "no systemd here (systemctl not reachable)")]
    else:
        props = v.systemctl
        state = f"{props.get('ActiveState', '?')}/{props.get('SubState', '?')}"
        result = props.get("Result", "?")
        status = props.get("ExecMainStatus", "?")
        watchdog = props.get("WatchdogUSec", "0")
        evidence = (
            f"{v.unit} {state}, last result {result}, exit status {status}, watchdog {watchdog}"
        )
        if props.get("LoadState") == "not-found":
            out = [
                Check(
                    "service",
                    Status.WARN,
                    f"{v.unit} is not installed",
                    "`sudo gizmo-host install --serial <SERIAL>`",
                )
            ]
        elif props.get("ActiveState") == "failed" or result not in ("success", "?"):
            out = [
                Check(
                    "service",
                    Status.FAIL,
                    evidence,
                    f"`journalctl -u {v.unit} -n 50` says why; "
                    f"`sudo systemctl reset-failed {v.unit}` after fixing it",
                )
            ]
        elif props.get("ActiveState") != "active":
            out = [
                Check(
                    "service",
                    Status.WARN,
                    evidence,
                    "it starts when the board is plugged in (udev); "
                    f"`sudo systemctl start {v.unit}`",
                )
            ]
        elif watchdog in ("0", "infinity", ""):
            out = [Check("service", Status.WARN, evidence, "the unit lost its WatchdogSec=")]
        else:
            out = [_ok("service", evidence)]
    if v.socket_mode is None:
        out.append(
            Check(
                "socket",
                Status.SKIP if v.systemctl is None else Status.WARN,
                f"no socket at {v.socket_path}",
                "the service makes it when it runs",
            )
        )
    else:
        mode = stat.S_IMODE(v.socket_mode)
        evidence = f"{v.socket_path} {v.socket_group}:{mode:04o}"
        if mode & 0o007:
            out.append(
                Check(
                    "socket",
                    Status.WARN,
                    evidence + ": other users may connect",
                    "the unit's UMask=0077",
                )
            )
        else:
            out.append(_ok("socket", evidence + f"; members of {v.socket_group} read it"))
    return out


CHECKS: tuple[Callable[[Facts], list[Check]], ...] = (
    device_checks,
    access_checks,
    holder_checks,
    stream_checks,
    board_checks,
    rfly_checks,
    mavlink_checks,
    service_checks,
)


def run_checks(facts: Facts) -> list[Check]:
    return [check for group in CHECKS for check in group(facts)]
