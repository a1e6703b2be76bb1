"""The doctor's network and systemd probes: RflySim's UDP ports, the autopilot, the unit.

Each listens or asks for a bounded time and returns facts; none needs root. A port another
process has bound (the running service, typically) is reported as busy (-1 datagrams), not
taken from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.app.host_config import HostConfig
from gizmo_host.app.world_config import camera_defaults
from gizmo_host.doctor.facts import MavlinkFacts, RflyFacts
from gizmo_host.timing import LoopScheduler, poll
from rfly_link import ports
from rfly_link.config_json import load_config as load_rfly_config
from rfly_link.io.clients import CopterSimClient, UdpSender
from rfly_link.messages import TypeId

BUSY = -1
SERVICE_PROPERTIES = (
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "ExecMainStatus",
    "NRestarts",
    "WatchdogUSec",
)


def rfly_facts(config: HostConfig, camera: Mapping[str, Any] | None, seconds: float) -> RflyFacts:
    """Config.json against ``[camera]``, then ``seconds`` of listening on the host's ports
    (and one odometry request when the host would make it)."""
    path = config.rflysim.config
    if path is None:
        return RflyFacts(None)
    try:
        setup = config.world_setup()
        loaded = load_rfly_config(path)
    except ConfigError as exc:
        return RflyFacts(path, config_error=str(exc))
    except OSError as exc:
        return RflyFacts(path, config_error=f"{path}: {exc.strerror or exc}")
    issues = _camera_issues(camera or {}, loaded.sensors)
    rfly = None if setup is None else setup.rflysim
    if rfly is None:
        return RflyFacts(path, camera_issues=issues)
    listen = {"state": ports.coptersim_state_port(rfly.copter_id)}
    if rfly.request_odometry_hz:
        listen["replies"] = ports.coptersim_reply_port(rfly.copter_id)
    for sensor in rfly.range_sensors:
        listen[f"sensor {sensor.seq_id}"] = sensor.port
    counts = _listen(rfly.bind, listen, seconds, rfly if rfly.request_odometry_hz else None)
    answered = None
    if rfly.request_odometry_hz and counts.get("replies", BUSY) != BUSY:
        answered = counts["replies"] > 0
    return RflyFacts(
        path,
        camera_issues=issues,
        datagrams={f"{name} (udp {port})": counts[name] for name, port in listen.items()},
        odometry_answered=answered,
    )


def _camera_issues(camera: Mapping[str, Any], sensors: Any) -> tuple[str, ...]:
    """[camera] values that differ from the Config.json sensor it names (or, without
    ``rflysim_sensor``, from the TypeID 30 box sensor, the board's camera in simulation)."""
    seq = camera.get("rflysim_sensor")
    chosen = [s for s in sensors if (s.seq_id == seq if seq is not None else s.type_id == 30)]
    if not chosen:
        return () if seq is None else (f"[camera] rflysim_sensor = {seq}: no such SeqID",)
    sensor = chosen[0]
    issues = []
    for key, value in camera_defaults(sensor).items():
        compared = key in camera and key in ("width_px", "height_px", "hfov_deg")
        if compared and abs(float(camera[key]) - float(value)) > 1e-6:
            issues.append(
                f"[camera] {key} = {camera[key]} but Config.json SeqID {sensor.seq_id} has {value}"
            )
    cameras = (TypeId.BOX_TARGETS, TypeId.RGB, TypeId.DEPTH, TypeId.GRAY)
    if sensor.type_id not in cameras and seq is not None:
        issues.append(f"Config.json SeqID {seq} is TypeID {sensor.type_id}, not a camera")
    return tuple(issues)


def _listen(
    bind: str, listen: Mapping[str, int], seconds: float, request: Any | None
) -> dict[str, int]:
    socks: dict[str, socket.socket] = {}
    counts = dict.fromkeys(listen, 0)
    try:
        for name, port in listen.items():
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                sock.bind((bind, port))
            except OSError:
                sock.close()
                counts[name] = BUSY
                continue
            sock.setblocking(False)
            socks[name] = sock
        if request is not None and "replies" in socks:
            sender = UdpSender()
            try:
                client = CopterSimClient(request.copter_id, sender, sim_host=request.sim_host)
                reply_ip = "127.0.0.1" if bind in ("0.0.0.0", "127.0.0.1") else bind
                client.request_odometry(request.request_odometry_hz, reply_ip, listen["replies"])
            finally:
                sender.close()
        deadline = time.monotonic() + seconds
        by_fd = {sock.fileno(): name for name, sock in socks.items()}
        while socks and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(socks.values()), [], [], left)
            for sock in ready:
                with contextlib.suppress(BlockingIOError):
                    while True:
                        sock.recv(65536)
                        counts[by_fd[sock.fileno()]] += 1
    finally:
        for sock in socks.values():
            sock.close()
    return counts


def mavlink_facts(
    url: str | None, seconds: float, target_system: int = 0, key_file: str | None = None
) -> MavlinkFacts:
    """``seconds`` of an autopilot session on ``url``: heartbeat, TIMESYNC, pose rates
    (signed with the key in ``key_file``, as the host would)."""
    if url is None:
        return MavlinkFacts(None)
    try:
        # The optional extra, loaded only when [mavlink] url is set: no command imports
        # pymavlink otherwise.
        from gizmo_host.mavlink import (  # noqa: PLC0415
            AutopilotSession,
            MavlinkTransport,
            parse_url,
        )
        from gizmo_host.mavlink.signing import Signer, read_key_file  # noqa: PLC0415

        endpoint = parse_url(url)
        signer = None if key_file is None else Signer(read_key_file(key_file))
    except ImportError:
        return MavlinkFacts(url, target_system, error="the mavlink extra is not installed")
    except ValueError as exc:
        return MavlinkFacts(url, target_system, error=str(exc))

    async def probe() -> MavlinkFacts:
        scheduler = LoopScheduler()
        holder: list[Any] = []
        session = AutopilotSession(
            lambda data, to: bool(holder[0].send(data, to)),
            scheduler,
            target_system=target_system,
            signer=signer,
        )
        transport = MavlinkTransport(endpoint, session.feed)
        holder.append(transport)
        task = asyncio.ensure_future(transport.run())
        session.start()
        try:

            def answered() -> bool:
                stats = session.stats(scheduler.now_ns())
                return stats["timesync"]["rtt_ms"] is not None and bool(session.rates_hz)

            await poll(scheduler, answered, seconds, 0.05)
            stats = session.stats(scheduler.now_ns())
        finally:
            session.stop()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        error = None if transport.opens else transport.last_error
        autopilot = stats["autopilot"]
        return MavlinkFacts(
            url,
            target_system,
            error=error,
            heartbeat=autopilot is not None,
            autopilot=None if autopilot is None else f"system {autopilot[0]}/{autopilot[1]}",
            rtt_ms=stats["timesync"]["rtt_ms"],
            offset_ms=stats["timesync"]["offset_ms"],
            rates_hz={k: v for k, v in stats["rates_hz"].items() if v > 0},
        )

    return asyncio.run(probe())


def systemctl_show(unit: str) -> dict[str, str] | None:
    """``systemctl show`` of ``unit`` (no root needed); None when systemd is not reachable."""
    if shutil.which("systemctl") is None:
        return None
    try:
        done = subprocess.run(
            ["systemctl", "show", unit, "--no-pager", "-p", ",".join(SERVICE_PROPERTIES)],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    props = dict(line.partition("=")[::2] for line in done.stdout.splitlines() if "=" in line)
    return props or None


MAX_GREETING_BYTES = 1 << 20  # a greeting names at most 256 clients: far less than this


def socket_greeting(path: str, timeout_s: float) -> dict[str, Any] | str:
    """The first line the host's Unix socket sends a new client (its ``version`` greeting, or
    the refusal when every slot is taken), parsed; or why it could not be read."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    data = b""
    try:
        sock.connect(path)
        while not data.endswith(b"\n") and len(data) < MAX_GREETING_BYTES:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError as exc:
        return f"cannot connect to {path}: {exc.strerror or exc}"
    finally:
        sock.close()
    try:
        message = json.loads(data.split(b"\n", 1)[0])
    except ValueError:
        return f"{path} answered something else than a JSON line ({len(data)} bytes)"
    if not isinstance(message, dict):
        return f"{path} answered something else than a JSON object"
    return message
