"""The host's settings (``HostConfig``): a TOML file, then command-line flags that override it.

Precedence: built-in defaults < the TOML file < command-line flags. Every error names the key
(``section.key``), the file or flag it came from, and the value expected, e.g.
``serial.baudrate: expected an integer, got 'fast'``. Every key, its default and its range
come from the settings table (``gizmo_host.app.settings``): no interval or period is shorter
than ``MIN_PERIOD_S``, which keeps a typo from spinning the CPU. Example file::

    [serial]
    path = "/dev/gizmo0"
    baudrate = 115200
    silent_after_s = 1.0

    [clock]
    max_skew_ppm = 200
    phase_error_threshold_ms = 5

    [store]
    ttl_ms = 250
    reset_hold_ms = 0
    [store.ttl_ms_by_type]
    LINE = 150

    [verdict]
    select = "type=DETECTOR,id=11"
    interval_s = 1.0

    [publish]
    stdout = true
    unix_socket = "/run/gizmo-host/results.sock"
    udp = "127.0.0.1:9870"
    stats_interval_s = 10

    [runtime]
    event_loop = "auto"  # uvloop when installed, else asyncio; or "asyncio" / "uvloop"

``[camera]``, ``[world]`` and ``[rflysim]`` (the world model) are described in
:mod:`gizmo_host.app.world_config`. The sections themselves, as frozen values, are
:mod:`gizmo_host.app.host_sections` (re-exported here); this module reads a file and flags
into them and checks the whole.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from typing import Any

from gizmo_core import ConfigError, MissingExtra
from gizmo_host.app.host_sections import (
    ClockConfig,
    FoxgloveConfig,
    HostConfig,
    MavlinkConfig,
    PublishConfig,
    RuntimeConfig,
    SerialConfig,
    StoreConfig,
    VerdictConfig,
)
from gizmo_host.app.settings import (
    BY_KEY,
    LANDING_PROFILES,
    MAX_PERIOD_S,
    MAX_UNIX_PATH_BYTES,
    MIN_PERIOD_S,
    RULES,
    flag_names,
    overrides_from,
)
from gizmo_host.live import event_loop
from gizmo_host.setting import check_rules
from gizmo_host.setting import check_type as _check_type
from gizmo_host.setting import fail as _fail
from gizmo_host.tomlfile import MAX_FILE_BYTES, MAX_LINE_CHARS, display_name, read_toml
from gizmo_host.wire.results import ResultType

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LINE_CHARS",
    "MAX_PERIOD_S",
    "MIN_PERIOD_S",
    "ClockConfig",
    "ConfigError",
    "FoxgloveConfig",
    "HostConfig",
    "MavlinkConfig",
    "PublishConfig",
    "RuntimeConfig",
    "SerialConfig",
    "StoreConfig",
    "VerdictConfig",
    "config_from_args",
    "config_from_mapping",
    "load_config",
    "parse_host_port",
]


_TABLES = ("world", "camera", "tracking")  # free-form tables, checked whole by world_setup()
# Sections whose presence turns them on (``enabled`` true) unless they say ``enabled = false``.
SWITCHED = ("zenoh", "foxglove")
_SELECTOR_LIMITS = {"source_id": (0, 255), "result_type": (0, 255), "id": (-32768, 32767)}
_PATHS = {"serial.path", "publish.unix_socket", "rflysim.config"}
_name = display_name


def _check_path(key: str, value: str, what: str) -> None:
    if not value or "\0" in value:
        raise _fail(key, f"a non-empty {what} without NUL characters", value)
    if key == "publish.unix_socket" and len(os.fsencode(value)) > MAX_UNIX_PATH_BYTES:
        raise _fail(key, f"a socket path of at most {MAX_UNIX_PATH_BYTES} bytes", value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_value(key: str, value: Any) -> None:
    if value is None:
        return
    setting = BY_KEY[key]
    if key in _PATHS:
        _check_path(key, value, (setting.what or "path").removeprefix("a "))
    elif _is_number(value) and not setting.accepts(value):
        raise _fail(key, setting.describe(), value)


def _result_type(key: str, name: str) -> int:
    if name.upper() in ResultType.__members__:
        return int(ResultType[name.upper()])
    if name.isascii() and name.isdigit() and len(name) <= 3 and int(name) <= 255:
        return int(name)
    raise ConfigError(
        f"{key}: expected a result type name ({', '.join(ResultType.__members__)}) "
        "or a number 0..255",
        key,
    )


def _ttl_by_type(key: str, value: Any) -> dict[int, float]:
    if not isinstance(value, Mapping):
        raise _fail(key, "a table of RESULT_TYPE = milliseconds", value)
    out: dict[int, float] = {}
    for name, raw_ttl in value.items():
        item_key = f"{key}.{_name(str(name))}"
        result_type = _result_type(item_key, str(name))
        ttl = _check_type(item_key, raw_ttl, "float")
        setting = BY_KEY["store.ttl_ms_by_type"]
        if not setting.accepts(ttl):
            raise _fail(item_key, setting.describe(), raw_ttl)
        out[result_type] = ttl
    return out


def _build_section(name: str, cls: type, values: Mapping[str, Any], base: Any) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = f"{name}.{_name(raw_key)}"
        if raw_key not in fields:
            raise ConfigError(f"{key}: unknown key; expected one of {', '.join(fields)}", key)
        if raw_key == "ttl_ms_by_type":
            changes[raw_key] = _ttl_by_type(key, value)
            continue
        checked = _check_type(key, value, str(fields[raw_key].type))
        _check_value(key, checked)
        changes[raw_key] = checked
    return dataclasses.replace(base, **changes)


def config_from_mapping(data: Mapping[str, Any], base: HostConfig | None = None) -> HostConfig:
    """Validate a parsed TOML document (or CLI overrides in the same shape) over ``base``."""
    config = base or HostConfig()
    sections = {f.name: f for f in dataclasses.fields(HostConfig)}
    changes: dict[str, Any] = {}
    for name, values in data.items():
        if name not in sections:
            raise ConfigError(
                f"{_name(name)}: unknown section; expected one of {', '.join(sections)}", name
            )
        if not isinstance(values, Mapping):
            raise _fail(name, "a table", values)
        if name in _TABLES:
            changes[name] = {**(getattr(config, name) or {}), **values}
            continue
        given = dict(values)
        if name in SWITCHED:
            given.setdefault("enabled", True)  # present: on (the one rule: gizmo_host.app.idle)
        section_cls = type(getattr(config, name))
        changes[name] = _build_section(name, section_cls, given, getattr(config, name))
    result = dataclasses.replace(config, **changes)
    _check_whole(result)
    return result


def _check_whole(config: HostConfig) -> None:
    for section in dataclasses.fields(config):
        value = getattr(config, section.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):  # not [world]
            check_rules(RULES, section.name, dataclasses.asdict(value))
    try:
        selector = config.selector
    except ValueError as exc:
        raise ConfigError(f"verdict.select: {exc}", "verdict.select") from None
    for name, (low, high) in _SELECTOR_LIMITS.items():
        number = getattr(selector, name)
        if number is not None and not low <= number <= high:
            raise ConfigError(
                f"verdict.select: {name}: expected {low}..{high}, got {number}", "verdict.select"
            )
    if config.publish.udp is not None:
        try:
            parse_host_port(config.publish.udp)
        except ValueError as exc:
            raise ConfigError(f"publish.udp: {exc}", "publish.udp") from None
    try:
        parse_host_port(config.foxglove.listen, allow_any_port=True)
    except ValueError as exc:
        raise ConfigError(f"foxglove.listen: {exc}", "foxglove.listen") from None
    try:
        event_loop.resolve(config.runtime.event_loop)
    except ValueError as exc:
        raise ConfigError(f"runtime.event_loop: {exc}", "runtime.event_loop") from None
    _check_mavlink(config.mavlink)
    _check_outputs(config)
    if not config.mavlink.on:
        pass  # its landing_target does nothing: reported by gizmo_host.app.idle
    elif config.mavlink.landing_target != "off" and config.camera is None:
        key = "mavlink.landing_target"
        raise ConfigError(f"{key}: expected a [camera] table: the target comes from the world", key)
    setup = config.world_setup()  # [camera], [world], [rflysim]: a ConfigError naming the key
    if (
        config.mavlink.on
        and config.mavlink.landing_target == "px4"
        and (setup is None or setup.pose_source != "mavlink")
    ):
        key = "mavlink.landing_target"
        raise ConfigError(
            f'{key}: "px4" expected the world\'s pose from the autopilot ([world] pose_source '
            '= "mavlink"): its positions must be in the autopilot\'s local frame',
            key,
        )


def _check_mavlink(mavlink: MavlinkConfig) -> None:
    """The url (and send_to) parse, the profile is one we know; ``[mavlink]`` without a url
    is an error rather than a link that silently never opens."""
    if mavlink.landing_target not in LANDING_PROFILES:
        key = "mavlink.landing_target"
        raise _fail(key, " or ".join(repr(p) for p in LANDING_PROFILES), mavlink.landing_target)
    if not mavlink.enabled:
        return  # off on purpose: its other keys are reported as doing nothing
    if mavlink.url is None:
        if mavlink != MavlinkConfig():
            key = "mavlink.url"
            raise ConfigError(f"{key}: expected the autopilot's connection string", key)
        return
    try:
        from gizmo_host.mavlink.urls import parse_url  # noqa: PLC0415 (the extra, when used)
    except ImportError:
        raise MissingExtra("mavlink", "mavlink.url", "mavlink.url") from None
    try:
        parse_url(mavlink.url, mavlink.send_to)
    except ValueError as exc:
        key = "mavlink.send_to" if "send_to" in str(exc) else "mavlink.url"
        raise ConfigError(str(exc).replace("mavlink ", "mavlink.", 1), key) from None
    if mavlink.signing_key_file is not None:
        from gizmo_host.mavlink.signing import read_key_file  # noqa: PLC0415 (the extra)

        try:
            read_key_file(mavlink.signing_key_file)
        except ValueError as exc:
            raise ConfigError(str(exc), "mavlink.signing_key_file") from None


def _check_outputs(config: HostConfig) -> None:
    """The outputs turned on have their extras, and ``[zenoh] config`` is a file Zenoh takes:
    checked now, before anything is logged or opened, so a mistake is one line rather than a
    log line and then the error at start."""
    zenoh = config.zenoh
    if zenoh.enabled:
        try:
            from gizmo_host.zenoh.session import load_file  # noqa: PLC0415 (the extra)
        except ImportError:
            raise MissingExtra("zenoh", "zenoh.enabled", "zenoh.enabled") from None
        if zenoh.ros2 != "off":
            try:
                from gizmo_host.ros2 import publication  # noqa: F401, PLC0415 (the extra)
            except ImportError:
                raise MissingExtra("ros2", "zenoh.ros2", "zenoh.ros2") from None
        if zenoh.config is not None:
            load_file(zenoh.config)  # a ConfigError naming zenoh.config
    if config.foxglove.enabled:
        try:
            from gizmo_host.foxglove import server  # noqa: F401, PLC0415 (the extra)
        except ImportError:
            raise MissingExtra("foxglove", "--foxglove", "foxglove.enabled") from None


def load_config(
    path: str | None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    flags: Mapping[str, str] | None = None,
) -> HostConfig:
    """Defaults, then the TOML file at ``path`` (if any), then ``overrides``.

    An error names the file it comes from, or the flag (``flags``: ``section.key`` -> flag)
    that set the value at fault."""
    config = HostConfig()
    document: Mapping[str, Any] = {}
    if path is not None:
        document = read_toml(path)
        try:
            config = config_from_mapping(document, config)
        except ConfigError as exc:
            raise ConfigError(f"config file {_name(path)}: {exc}", exc.key) from None
    if overrides:
        cleaned = {
            section: {k: v for k, v in values.items() if v is not None}
            for section, values in overrides.items()
        }
        for section in SWITCHED:  # a flag of a section the file turned off leaves it off
            given = document.get(section)
            if cleaned.get(section) and isinstance(given, Mapping) and "enabled" in given:
                cleaned[section].setdefault("enabled", getattr(config, section).enabled)
        try:
            config = config_from_mapping({k: v for k, v in cleaned.items() if v}, config)
        except ConfigError as exc:
            section, _, name = (exc.key or "").partition(".")
            flag = (flags or {}).get(exc.key or "")
            if flag is None or name not in cleaned.get(section, {}):
                raise
            raise ConfigError(f"{flag}: {exc}", exc.key) from None
    return config


def config_from_args(args: argparse.Namespace, *, serial_required: bool = True) -> HostConfig:
    """The checked settings: ``--config``'s file, with the flags of the settings table that
    were given over it (``settings.add_flags``)."""
    config = load_config(getattr(args, "config", None), overrides_from(args), flag_names())
    if serial_required:
        config.link()  # raises the ConfigError naming serial.path
    return config


def parse_host_port(text: str, *, allow_any_port: bool = False) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) -> (host, port); ``allow_any_port``: a server's
    port 0 (the kernel picks one) is accepted."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    low = 0 if allow_any_port else 1
    if not sep or not host or not port_text.isdigit() or not low <= int(port_text) < 65536:
        raise ValueError(f"expected HOST:PORT with a port in {low}..65535, got {text!r}")
    if host.replace(".", "").isdigit():  # an IPv4 address, or a mistake (a name has letters)
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"expected an IPv4 address or a name, got {host!r}") from None
    return host, int(port_text)
