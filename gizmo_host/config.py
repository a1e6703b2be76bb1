"""``gizmo-host run`` settings: a TOML file, then command-line flags that override it.

Precedence: built-in defaults < the TOML file < command-line flags. Every error names the key
(``section.key``) and the value expected, e.g.
``serial.baudrate: expected a positive integer, got 'fast'``. Example file::

    [serial]
    path = "/dev/gizmo0"
    baudrate = 115200
    silent_after_s = 1.0

    [clock]
    max_skew_ppm = 200
    phase_error_threshold_ms = 5

    [store]
    ttl_ms = 250
    reset_hold_ms = 2000
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
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import event_loop
from .errors import GizmoError
from .publish import parse_host_port
from .results import ResultType
from .store import TargetSelector

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


class ConfigError(GizmoError, ValueError):
    """A setting is missing, unknown or out of range; the message names the key."""


@dataclass(frozen=True, slots=True)
class SerialConfig:
    path: str | None = None
    baudrate: int = 115200
    silent_after_s: float = 1.0
    backoff_min_s: float = 0.1
    backoff_max_s: float = 2.0
    transport_delay_ms: float | None = None  # default: 35 bytes at the baud rate


@dataclass(frozen=True, slots=True)
class ClockConfig:
    max_skew_ppm: float = 200.0
    phase_error_threshold_ms: float = 5.0


@dataclass(frozen=True, slots=True)
class StoreConfig:
    ttl_ms: float = 250.0
    reset_hold_ms: float = 2000.0
    ttl_ms_by_type: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VerdictConfig:
    select: str = "any"
    interval_s: float = 1.0


@dataclass(frozen=True, slots=True)
class PublishConfig:
    stdout: bool = True
    unix_socket: str | None = None
    unix_max_buffer_bytes: int = 256 * 1024
    udp: str | None = None
    stats_interval_s: float = 10.0


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    event_loop: str = "auto"


@dataclass(frozen=True, slots=True)
class Config:
    serial: SerialConfig = field(default_factory=SerialConfig)
    clock: ClockConfig = field(default_factory=ClockConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)
    publish: PublishConfig = field(default_factory=PublishConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)

    @property
    def selector(self) -> TargetSelector:
        return TargetSelector.parse(self.verdict.select)


def _positive(value: float) -> bool:
    return value > 0


def _non_negative(value: float) -> bool:
    return value >= 0


# key -> (predicate, description of the expected value)
_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "serial.path": (bool, "a non-empty device path"),
    "serial.baudrate": (_positive, "a positive integer"),
    "serial.silent_after_s": (_positive, "a number of seconds > 0"),
    "serial.backoff_min_s": (_positive, "a number of seconds > 0"),
    "serial.backoff_max_s": (_positive, "a number of seconds > 0"),
    "serial.transport_delay_ms": (_non_negative, "a number of milliseconds >= 0"),
    "clock.max_skew_ppm": (_non_negative, "a number of ppm >= 0"),
    "clock.phase_error_threshold_ms": (_positive, "a number of milliseconds > 0"),
    "store.ttl_ms": (_positive, "a number of milliseconds > 0"),
    "store.reset_hold_ms": (_non_negative, "a number of milliseconds >= 0"),
    "verdict.interval_s": (_positive, "a number of seconds > 0"),
    "publish.unix_socket": (bool, "a non-empty socket path"),
    "publish.unix_max_buffer_bytes": (_positive, "a positive integer"),
    "publish.stats_interval_s": (_non_negative, "a number of seconds >= 0 (0: off)"),
}


def _check_type(key: str, value: Any, annotation: str) -> Any:
    if value is None and "None" in annotation:
        return None
    if annotation.startswith("bool"):
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if annotation.startswith("int"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected an integer, got {value!r}")
    if annotation.startswith("float"):
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if annotation.startswith("str"):
        if isinstance(value, str):
            return value
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    return value


def _ttl_by_type(key: str, value: Any) -> dict[int, float]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a table of RESULT_TYPE = milliseconds, got {value!r}")
    out: dict[int, float] = {}
    for name, raw_ttl in value.items():
        item_key = f"{key}.{name}"
        if str(name).upper() in ResultType.__members__:
            result_type = int(ResultType[str(name).upper()])
        elif str(name).isdigit():
            result_type = int(name)
        else:
            raise ConfigError(
                f"{item_key}: expected a result type name "
                f"({', '.join(ResultType.__members__)}) or number"
            )
        ttl = _check_type(item_key, raw_ttl, "float")
        if ttl <= 0:
            raise ConfigError(f"{item_key}: expected a number of milliseconds > 0, got {ttl!r}")
        out[result_type] = ttl
    return out


def _build_section(name: str, cls: type, values: Mapping[str, Any], base: Any) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    changes: dict[str, Any] = {}
    for raw_key, value in values.items():
        key = f"{name}.{raw_key}"
        if raw_key not in fields:
            raise ConfigError(f"{key}: unknown key; expected one of {', '.join(fields)}")
        if raw_key == "ttl_ms_by_type":
            changes[raw_key] = _ttl_by_type(key, value)
            continue
        checked = _check_type(key, value, str(fields[raw_key].type))
        rule = _RULES.get(key)
        if checked is not None and rule is not None and not rule[0](checked):
            raise ConfigError(f"{key}: expected {rule[1]}, got {value!r}")
        changes[raw_key] = checked
    return dataclasses.replace(base, **changes)


def config_from_mapping(data: Mapping[str, Any], base: Config | None = None) -> Config:
    """Validate a parsed TOML document (or CLI overrides in the same shape) over ``base``."""
    config = base or Config()
    sections = {f.name: f for f in dataclasses.fields(Config)}
    changes: dict[str, Any] = {}
    for name, values in data.items():
        if name not in sections:
            raise ConfigError(f"{name}: unknown section; expected one of {', '.join(sections)}")
        if not isinstance(values, Mapping):
            raise ConfigError(f"{name}: expected a table, got {values!r}")
        section_cls = type(getattr(config, name))
        changes[name] = _build_section(name, section_cls, values, getattr(config, name))
    result = dataclasses.replace(config, **changes)
    _check_whole(result)
    return result


def _check_whole(config: Config) -> None:
    if config.serial.backoff_min_s > config.serial.backoff_max_s:
        raise ConfigError(
            f"serial.backoff_max_s: expected >= serial.backoff_min_s "
            f"({config.serial.backoff_min_s}), got {config.serial.backoff_max_s}"
        )
    try:
        config.selector  # noqa: B018 - parse to validate
    except ValueError as exc:
        raise ConfigError(f"verdict.select: {exc}") from None
    if config.publish.udp is not None:
        try:
            parse_host_port(config.publish.udp)
        except ValueError as exc:
            raise ConfigError(f"publish.udp: {exc}") from None
    try:
        event_loop.resolve(config.runtime.event_loop)
    except ValueError as exc:
        raise ConfigError(f"runtime.event_loop: {exc}") from None


def load_config(
    path: str | None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Defaults, then the TOML file at ``path`` (if any), then ``overrides``."""
    config = Config()
    if path is not None:
        try:
            with open(path, "rb") as file:
                document = tomllib.load(file)
        except OSError as exc:
            raise ConfigError(f"config file {path}: cannot read: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path}: expected valid TOML: {exc}") from None
        config = config_from_mapping(document, config)
    if overrides:
        cleaned = {
            section: {k: v for k, v in values.items() if v is not None}
            for section, values in overrides.items()
        }
        config = config_from_mapping({k: v for k, v in cleaned.items() if v}, config)
    return config
