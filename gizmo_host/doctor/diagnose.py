"""``gizmo-host doctor``'s composition: read the settings, gather the facts, judge them.

The settings file is read as ``gizmo-host run`` reads it; a ``[mavlink]`` table the host cannot
take (a bad url, the extra missing) is set aside for the mavlink probe to report (it uses the
table's ``url``, ``target_system`` and ``signing_key_file``). Settings that would do nothing
are a check of their own (``gizmo_host.app.idle``).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gizmo_core import ConfigError
from gizmo_host.app.host_config import HostConfig, config_from_mapping
from gizmo_host.app.idle import idle_settings
from gizmo_host.doctor import gather, probes
from gizmo_host.doctor.checks import Check, Status, exit_code, run_checks
from gizmo_host.doctor.facts import Facts, StreamFacts
from gizmo_host.doctor.stream import sample_stream
from gizmo_host.jsonl import json_text
from gizmo_host.tomlfile import read_toml

DEFAULT_SERIAL = "/dev/gizmo0"
DEFAULT_SECONDS = 3.0
MAX_PROBE_S = 2.0  # RflySim and MAVLink listen at most this long each


@dataclass(frozen=True, slots=True)
class Options:
    serial: str | None = None
    config: str | None = None
    seconds: float = DEFAULT_SECONDS
    root: Path = Path("/")


def load(options: Options) -> tuple[HostConfig, dict[str, Any] | None, dict[str, Any]]:
    """The host's settings, its raw ``[camera]`` table and raw ``[mavlink]`` table; a
    mistake in the file is a ConfigError naming it."""
    if options.config is None:
        return HostConfig(), None, {}
    document = dict(read_toml(options.config))
    mavlink = document.get("mavlink")
    try:
        config = config_from_mapping(document)
    except ConfigError as exc:
        if not (exc.key or "").startswith("mavlink."):
            raise ConfigError(f"config file {options.config}: {exc}", exc.key) from None
        # The mavlink probe reports a bad url (or a missing extra) itself.
        try:
            config = config_from_mapping({k: v for k, v in document.items() if k != "mavlink"})
        except ConfigError as exc:
            raise ConfigError(f"config file {options.config}: {exc}", exc.key) from None
    camera = document.get("camera")
    return (
        config,
        camera if isinstance(camera, dict) else None,
        mavlink if isinstance(mavlink, dict) else {},
    )


def gather_facts(options: Options) -> Facts:
    config, camera, mavlink = load(options)
    url, target = mavlink.get("url"), mavlink.get("target_system", 0)
    url = url if isinstance(url, str) and mavlink.get("enabled") is not False else None
    target = target if isinstance(target, int) and 0 <= target <= 255 else 0
    key_file = mavlink.get("signing_key_file")
    key_file = key_file if isinstance(key_file, str) else None
    root = gather.Root(options.root)
    path = options.serial or config.serial.path or DEFAULT_SERIAL
    device = gather.device_facts(path, root)
    holders = gather.holder_facts(path, root)
    baudrate = config.serial.baudrate
    if not device.exists or not device.is_char:
        stream = StreamFacts(baudrate, 0.0, skipped="no device")
    elif holders.holders:
        stream = StreamFacts(baudrate, 0.0, skipped="another process holds the port")
    elif device.open_errno is not None:
        stream = StreamFacts(baudrate, 0.0, skipped="cannot open it")
    else:
        stream = sample_stream(path, baudrate, options.seconds)
    probe_s = min(MAX_PROBE_S, options.seconds)
    instance = os.path.basename(path)
    socket_path = config.publish.unix_socket or f"/run/gizmo-host/{instance}/results.sock"
    unit = f"gizmo-host@{instance}.service"
    return Facts(
        settings=None if options.config is None else tuple(idle_settings(config)),
        device=device,
        access=gather.access_facts(device, root),
        holders=holders,
        stream=stream,
        rfly=probes.rfly_facts(config, camera, probe_s),
        mavlink=probes.mavlink_facts(url, probe_s, target, key_file),
        service=gather.service_facts(
            instance,
            probes.systemctl_show(unit),
            socket_path,
            root,
            lambda path: probes.socket_greeting(path, probe_s),
        ),
    )


def diagnose(options: Options) -> tuple[Facts, list[Check], int]:
    facts = gather_facts(options)
    checks = run_checks(facts)
    return facts, checks, exit_code(checks)


def render_text(checks: list[Check], code: int) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for check in checks:
        lines.append(f"{check.status.value:4}  {check.name:{width}}  {check.evidence}")
        if check.fix and check.status in (Status.WARN, Status.FAIL):
            lines.append(f"{'':4}  {'':{width}}  fix: {check.fix}")
    counts = {s: sum(c.status is s for c in checks) for s in Status}
    verdict = {0: "all checks pass", 1: "warnings", 2: "failures"}[code]
    lines.append(
        f"{verdict}: {counts[Status.OK]} ok, {counts[Status.WARN]} warn, "
        f"{counts[Status.FAIL]} fail, {counts[Status.SKIP]} skipped"
    )
    return "\n".join(lines)


def render_json(facts: Facts, checks: list[Check], code: int) -> str:
    return json_text(
        {
            "type": "doctor",
            "exit": code,
            "checks": [{**c._asdict(), "status": c.status.value} for c in checks],
            "facts": asdict(facts),
        }
    )
