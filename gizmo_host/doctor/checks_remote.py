"""The doctor's checks of what is around the board: RflySim, the autopilot over MAVLink, the
systemd service and its socket. Pure: facts in."""

from __future__ import annotations

import stat

from gizmo_host.doctor.facts import Facts, SocketClients
from gizmo_host.doctor.verdict import Check, Status, percentile
from gizmo_host.doctor.verdict import ok as _ok

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
    if m.target_system == 0:
        out.append(
            Check(
                "mavlink target",
                Status.WARN,
                "target_system = 0: any autopilot heard is taken, and a second one heard "
                "holds the world (pose_conflict)",
                "set [mavlink] target_system (and target_component) to the autopilot's ids",
            )
        )
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
        board_ms = percentile(facts.stream.latency_ms, 0.5)
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
    if v.clients is not None:
        out.append(socket_clients_check(v.clients))
    return out


def socket_clients_check(c: SocketClients) -> Check:
    """Who holds the socket's client slots, and whether anyone was turned away."""
    if c.error is not None:
        return Check("socket clients", Status.SKIP, c.error)
    names = ", ".join(
        f"pid {p.pid if p.pid is not None else '?'} ({p.name or '?'}, "
        f"{'?' if p.unread_bytes is None else p.unread_bytes} B unread)"
        for p in c.peers
    )
    held = f"{c.clients} of {c.max_clients} client slots held" + (f": {names}" if names else "")
    history = f"{c.refused_total} refused, {c.evicted} evicted, {c.dropped} dropped since start"
    fix = (
        f"raise [publish] unix_max_clients (now {c.max_clients}), or stop the clients that "
        "hold a slot and read nothing"
    )
    if c.refused:
        return Check(
            "socket clients", Status.WARN, f"full, this probe refused: {held}; {history}", fix
        )
    if c.refused_total:
        return Check("socket clients", Status.WARN, f"{held}; {history}", fix)
    return _ok("socket clients", f"{held}; {history}")
