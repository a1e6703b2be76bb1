"""``gizmo-host run`` settings: a TOML file, then command-line flags that override it.

Precedence: built-in defaults < the TOML file < command-line flags. Every error names the key
(``section.key``), the file or flag it came from, and the value expected, e.g.
``serial.baudrate: expected an integer, got 'fast'``. Every number has a range (``LIMITS``):
no interval or period is shorter than ``MIN_PERIOD_S``, which keeps a typo from spinning the
CPU. Example file::

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

``[camera]``, ``[world]`` and ``[rflysim]`` (the world model) are described in
:mod:`gizmo_host.cli.world_config`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gizmo_host.cli.world_config import RflySimConfig, WorldSetup, resolve_world
from gizmo_host.errors import ConfigError
from gizmo_host.live import event_loop
from gizmo_host.stream.store import TargetSelector
from gizmo_host.wire.results import ResultType

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


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
    rflysim: RflySimConfig = field(default_factory=RflySimConfig)
    world: Mapping[str, Any] = field(default_factory=dict)  # checked by world_setup()
    camera: Mapping[str, Any] | None = None  # None: no [camera], no world model

    @property
    def selector(self) -> TargetSelector:
        return TargetSelector.parse(self.verdict.select)

    def world_setup(self) -> WorldSetup | None:
        """The world model's settings, resolved (Config.json read); None when it is off."""
        return resolve_world(self.camera, self.world, self.rflysim, self.store, self.selector)


# --- limits ----------------------------------------------------------------------------------
# Every number has a range. Below a period's minimum a timer fires so often that it spins the
# CPU (1e-9 s took a whole core); beyond a maximum a value no longer means anything (a TTL of
# a year) or overflows a timer. Paths are checked before anything opens or binds them.

MIN_PERIOD_S = 0.01  # the shortest timer period or interval any setting may ask for
MAX_PERIOD_S = 3600.0
MAX_FILE_BYTES = 64 * 1024  # a settings file is a few hundred bytes
MAX_LINE_CHARS = 4096  # tomllib's memory grows with the square of a dotted key's length
MAX_UNIX_PATH_BYTES = 107  # sun_path holds 108 bytes with the terminating NUL
MAX_DISPLAYED_CHARS = 60


@dataclass(frozen=True, slots=True)
class Limits:
    """The accepted range of one numeric setting; ``off`` also accepts 0, meaning "off"."""

    low: float
    high: float
    unit: str
    off: bool = False

    def accepts(self, value: float) -> bool:
        return self.low <= value <= self.high or (self.off and value == 0)

    def describe(self) -> str:
        text = f"{self.unit} from {_number(self.low)} to {_number(self.high)}"
        return f"0 (off) or {text}" if self.off else text


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


_SECONDS = "a number of seconds"
_MS = "a number of milliseconds"
_TTL = Limits(1.0, MAX_PERIOD_S * 1000, _MS)  # under 1 ms nothing read from a UART is fresh

LIMITS: dict[str, Limits] = {
    "serial.baudrate": Limits(50, 20_000_000, "an integer"),
    "serial.silent_after_s": Limits(MIN_PERIOD_S, MAX_PERIOD_S, _SECONDS),
    "serial.backoff_min_s": Limits(MIN_PERIOD_S, MAX_PERIOD_S, _SECONDS),
    "serial.backoff_max_s": Limits(MIN_PERIOD_S, MAX_PERIOD_S, _SECONDS),
    "serial.transport_delay_ms": Limits(0, 1000, _MS),
    "clock.max_skew_ppm": Limits(0, 10_000, "a number of ppm"),
    "clock.phase_error_threshold_ms": Limits(0.01, 1000, _MS),
    "store.ttl_ms": _TTL,
    "store.ttl_ms_by_type": _TTL,
    "store.reset_hold_ms": Limits(0, MAX_PERIOD_S * 1000, _MS),
    "verdict.interval_s": Limits(MIN_PERIOD_S, MAX_PERIOD_S, _SECONDS),
    "publish.unix_max_buffer_bytes": Limits(4096, 64 * 1024 * 1024, "a number of bytes"),
    "publish.stats_interval_s": Limits(MIN_PERIOD_S, 24 * MAX_PERIOD_S, _SECONDS, off=True),
    "rflysim.copter_id": Limits(1, 450, "a CopterID"),  # rfly_link.ports.MAX_COPTERS
    "rflysim.request_odometry_hz": Limits(1, 1000, "a rate in Hz", off=True),
    "rflysim.request_imu_hz": Limits(1, 1000, "a rate in Hz", off=True),
}
_TABLES = ("world", "camera")  # free-form tables, checked whole by world_setup()
_SELECTOR_LIMITS = {"source_id": (0, 255), "result_type": (0, 255), "id": (-32768, 32767)}


def _show(value: Any) -> str:
    """``repr`` cut to a readable length (a config value can be a whole table)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond sys.get_int_max_str_digits()
        text = f"an integer of {value.bit_length()} bits"
    if len(text) > MAX_DISPLAYED_CHARS:
        text = text[: MAX_DISPLAYED_CHARS - 3] + "..."
    return text


def _name(text: str) -> str:
    """A key or path as typed, or quoted when it would break the one-line message."""
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def _fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {expected}, got {_show(value)}", key)


def _check_type(key: str, value: Any, annotation: str) -> Any:
    if value is None and "None" in annotation:
        return None
    if annotation.startswith("bool"):
        if isinstance(value, bool):
            return value
        raise _fail(key, "true or false", value)
    if annotation.startswith("int"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _fail(key, "an integer", value)
    if annotation.startswith("float"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an int too large for a float
                number = math.inf
            if math.isfinite(number):
                return number
        raise _fail(key, "a finite number", value)
    if annotation.startswith("str"):
        if isinstance(value, str):
            return value
        raise _fail(key, "a string", value)
    return value


def _check_path(key: str, value: str, what: str) -> None:
    if not value or "\0" in value:
        raise _fail(key, f"a non-empty {what} without NUL characters", value)
    if key == "publish.unix_socket" and len(os.fsencode(value)) > MAX_UNIX_PATH_BYTES:
        raise _fail(key, f"a socket path of at most {MAX_UNIX_PATH_BYTES} bytes", value)


def _check_value(key: str, value: Any) -> None:
    if value is None:
        return
    if key == "serial.path":
        _check_path(key, value, "device path")
    elif key == "publish.unix_socket":
        _check_path(key, value, "socket path")
    elif key == "rflysim.config":
        _check_path(key, value, "file path")
    elif key in LIMITS and not LIMITS[key].accepts(value):
        raise _fail(key, LIMITS[key].describe(), value)


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
        if not _TTL.accepts(ttl):
            raise _fail(item_key, _TTL.describe(), raw_ttl)
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


def config_from_mapping(data: Mapping[str, Any], base: Config | None = None) -> Config:
    """Validate a parsed TOML document (or CLI overrides in the same shape) over ``base``."""
    config = base or Config()
    sections = {f.name: f for f in dataclasses.fields(Config)}
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
        section_cls = type(getattr(config, name))
        changes[name] = _build_section(name, section_cls, values, getattr(config, name))
    result = dataclasses.replace(config, **changes)
    _check_whole(result)
    return result


def _check_whole(config: Config) -> None:
    if config.serial.backoff_min_s > config.serial.backoff_max_s:
        raise ConfigError(
            f"serial.backoff_max_s: expected >= serial.backoff_min_s "
            f"({config.serial.backoff_min_s:g}), got {config.serial.backoff_max_s:g}",
            "serial.backoff_max_s",
        )
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
        event_loop.resolve(config.runtime.event_loop)
    except ValueError as exc:
        raise ConfigError(f"runtime.event_loop: {exc}", "runtime.event_loop") from None
    config.world_setup()  # [camera], [world], [rflysim]: raises a ConfigError naming the key


def read_document(path: str) -> dict[str, Any]:
    """The TOML document at ``path``; anything but a small UTF-8 TOML file is a ConfigError."""
    where = f"config file {_name(path)}"
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{where}: expected at most {MAX_FILE_BYTES} bytes of settings")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: expected UTF-8 text, got byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE_CHARS:
            raise ConfigError(
                f"{where}: line {number}: expected at most {MAX_LINE_CHARS} characters"
            )
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: expected valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: expected valid TOML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer beyond sys.get_int_max_str_digits()
        raise ConfigError(f"{where}: expected valid TOML: {exc}") from None


def load_config(
    path: str | None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    flags: Mapping[str, str] | None = None,
) -> Config:
    """Defaults, then the TOML file at ``path`` (if any), then ``overrides``.

    An error names the file it comes from, or the flag (``flags``: ``section.key`` -> flag)
    that set the value at fault."""
    config = Config()
    if path is not None:
        document = read_document(path)
        try:
            config = config_from_mapping(document, config)
        except ConfigError as exc:
            raise ConfigError(f"config file {_name(path)}: {exc}", exc.key) from None
    if overrides:
        cleaned = {
            section: {k: v for k, v in values.items() if v is not None}
            for section, values in overrides.items()
        }
        try:
            config = config_from_mapping({k: v for k, v in cleaned.items() if v}, config)
        except ConfigError as exc:
            section, _, name = (exc.key or "").partition(".")
            flag = (flags or {}).get(exc.key or "")
            if flag is None or name not in cleaned.get(section, {}):
                raise
            raise ConfigError(f"{flag}: {exc}", exc.key) from None
    return config


def parse_host_port(text: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` for IPv6) -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"expected HOST:PORT with a port in 1..65535, got {text!r}")
    return host, int(port_text)
