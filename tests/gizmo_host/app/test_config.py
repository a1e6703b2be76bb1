from __future__ import annotations

import dataclasses
import json
import random
import sys
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gizmo_core import ConfigError, Selector
from gizmo_host.app.host_config import (
    MAX_FILE_BYTES,
    MAX_LINE_CHARS,
    MIN_PERIOD_S,
    HostConfig,
    config_from_mapping,
    load_config,
)
from gizmo_host.app.settings import BY_KEY
from gizmo_host.live.service import GizmoService
from gizmo_host.wire.results import ResultType

FULL = """
[serial]
path = "/dev/gizmo0"
baudrate = 921600
silent_after_s = 0.5
transport_delay_ms = 0

[clock]
max_skew_ppm = 100

[store]
ttl_ms = 300
[store.ttl_ms_by_type]
LINE = 150
4 = 1000

[verdict]
select = "source=1,type=COLOR_BLOB,id=1"

[publish]
stdout = false
unix_socket = "/run/gizmo-host/gizmo0/results.sock"
udp = "127.0.0.1:9870"
"""


def test_defaults():
    config = load_config(None)
    assert config == HostConfig()
    assert config.serial.baudrate == 115200 and config.publish.stdout
    assert config.selector == Selector()


def test_file_then_flags_override_it(tmp_path):
    path = tmp_path / "gizmo.toml"
    path.write_text(FULL)
    config = load_config(
        str(path), {"serial": {"baudrate": 115200, "path": None}, "publish": {"stdout": True}}
    )
    assert config.serial.path == "/dev/gizmo0"  # a flag left unset does not override
    assert config.serial.baudrate == 115200  # a flag that is set does
    assert config.serial.silent_after_s == 0.5 and config.serial.transport_delay_ms == 0.0
    assert config.clock.max_skew_ppm == 100.0
    assert dict(config.store.ttl_ms_by_type) == {ResultType.LINE: 150.0, ResultType.QR_CODE: 1000.0}
    assert config.selector == Selector(1, ResultType.COLOR_BLOB, 1)
    assert config.publish.stdout and config.publish.udp == "127.0.0.1:9870"


def test_the_shipped_default_config_is_valid(tmp_path):
    shipped = resources.files("gizmo_host.deploy.data").joinpath("gizmo-host.toml")
    path = tmp_path / "shipped.toml"
    path.write_text(shipped.read_text())
    config = load_config(str(path))
    assert config.serial.path == "/dev/gizmo0"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"serial": {"baudrate": "fast"}}, "serial.baudrate: expected an integer, got 'fast'"),
        ({"serial": {"baudrate": 0}}, "serial.baudrate: expected an integer from 50 to 20000000"),
        ({"serial": {"baudrate": True}}, "serial.baudrate: expected an integer, got True"),
        ({"serial": {"baud": 9600}}, "serial.baud: unknown key; expected one of path, baudrate"),
        ({"serail": {}}, "serail: unknown section; expected one of serial"),
        ({"serial": 3}, "serial: expected a table"),
        ({"store": {"ttl_ms": -1}}, "store.ttl_ms: expected a number of milliseconds from 1 to"),
        (
            {"store": {"ttl_ms_by_type": {"LIN": 100}}},
            "store.ttl_ms_by_type.LIN: expected a result",
        ),
        (
            {"store": {"ttl_ms_by_type": {"LINE": 0}}},
            "store.ttl_ms_by_type.LINE: expected a number",
        ),
        ({"publish": {"stdout": "yes"}}, "publish.stdout: expected true or false, got 'yes'"),
        ({"publish": {"udp": "nowhere"}}, "publish.udp: expected HOST:PORT"),
        ({"verdict": {"select": "colour=red"}}, "verdict.select: selector: expected 'any'"),
        (
            {"serial": {"backoff_min_s": 5.0}},
            "serial.backoff_max_s: expected >= serial.backoff_min_s",
        ),
        ({"clock": {"max_skew_ppm": float("nan")}}, "clock.max_skew_ppm: expected a finite"),
        (
            {"runtime": {"event_loop": "trio"}},
            "runtime.event_loop: expected one of auto, asyncio, uvloop, got 'trio'",
        ),
    ],
)
def test_errors_name_the_key_and_the_expected_value(document, message):
    with pytest.raises(ConfigError) as exc:
        config_from_mapping(document)
    assert message in str(exc.value)


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[serial\n")
    with pytest.raises(ConfigError, match="expected valid TOML"):
        load_config(str(bad))


def test_event_loop_auto_falls_back_to_asyncio_and_uvloop_must_be_installed(monkeypatch):
    from gizmo_host.live import event_loop

    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the extra were not installed
    assert event_loop.resolve("auto") == "asyncio"
    assert config_from_mapping({"runtime": {"event_loop": "asyncio"}}).runtime.event_loop
    with pytest.raises(ConfigError, match=r"runtime.event_loop: .* needs the uvloop extra"):
        config_from_mapping({"runtime": {"event_loop": "uvloop"}})


def _document(key: str, value: object) -> dict:
    """A document setting ``key`` (the other backoff bound at its extreme: min <= max)."""
    section, name = key.split(".")
    if key == "store.ttl_ms_by_type":
        return {"store": {"ttl_ms_by_type": {"LINE": value}}}
    if name == "backoff_min_s":
        return {"serial": {"backoff_min_s": value, "backoff_max_s": LIMITS[key].high}}
    if name == "backoff_max_s":
        return {"serial": {"backoff_min_s": LIMITS[key].low, "backoff_max_s": value}}
    if section == "rflysim":  # the world model needs a camera; replies need a vehicle
        return {"rflysim": {"copter_id": 1, name: value}, "camera": _CAMERA}
    if section == "mavlink":  # [mavlink] without a url is an error of its own
        return {"mavlink": {"url": "udpin:0.0.0.0:14540", name: value}}
    return {section: {name: value}}


_CAMERA = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}
_INT_KEYS = {k for k, s in BY_KEY.items() if s.kind == "int"}


# Every number of the host's own sections ([world], [tracking], [camera], [emulate]:
# test_settings_table).
LIMITS = {
    k: s
    for k, s in BY_KEY.items()
    if s.low is not None
    and s.section.split(".")[0] not in ("world", "tracking", "camera", "emulate")
}


def _typed(key: str, value: float) -> float:
    return int(value) if key in _INT_KEYS else value


@pytest.mark.parametrize("key", sorted(LIMITS))
def test_every_number_has_a_range_and_its_error_names_the_setting_and_the_bounds(key):
    limits = BY_KEY[key]
    for accepted in (limits.low, limits.high, *([0] if limits.off else [])):
        config_from_mapping(_document(key, _typed(key, accepted)))
    below = limits.low - 1 - limits.off if key in _INT_KEYS else limits.low / 2 or -1.0
    for rejected in (below, limits.high * 2):
        with pytest.raises(ConfigError) as exc:
            config_from_mapping(_document(key, _typed(key, rejected)))
        message = str(exc.value)
        assert message.startswith(key.replace("ttl_ms_by_type", "ttl_ms_by_type.LINE") + ":")
        assert limits.describe() in message and "from " in message


@pytest.mark.parametrize(
    "key",
    [
        "serial.silent_after_s",
        "serial.backoff_min_s",
        "serial.backoff_max_s",
        "verdict.interval_s",
        "publish.stats_interval_s",
    ],
)
def test_a_period_that_would_spin_the_cpu_is_rejected_naming_the_minimum(key):
    """Issue 10 item 11: 1e-9 s took a whole core (silent_after_s) or printed ~60k verdict
    lines a second (verdict.interval_s)."""
    with pytest.raises(ConfigError, match=rf"^{key}: expected .*from {MIN_PERIOD_S:g} to"):
        config_from_mapping(_document(key, 1e-9))


RANDOM_BYTES = random.Random(10).randbytes(300)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (  # issue 10 item 10: ValueError: invalid literal for int()
            '[store.ttl_ms_by_type]\n"²" = 5\n'.encode(),
            "store.ttl_ms_by_type.²: expected a result type name",
        ),
        (b"[store.ttl_ms_by_type]\n256 = 5\n", "ttl_ms_by_type.256: expected a result type"),
        (RANDOM_BYTES, "expected UTF-8 text, got byte 0x"),  # issue 10: UnicodeDecodeError
        (b"a = " + b"[\n" * 10_000 + b"]\n" * 10_000, "expected valid TOML: nested too deeply"),
        (b"a = " + b"{b = " * 3000 + b"1" + b"}" * 3000, "line 1: expected at most"),
        (b"a." * 3000 + b"b = 1", f"line 1: expected at most {MAX_LINE_CHARS} characters"),
        # rt59: U+0085 ends a line for str.splitlines, not for TOML: 709 MB in tomllib
        ('"\x85".'.encode() * 13000 + b"b = 1", "line 1: expected at most"),
        (b"#\n" * MAX_FILE_BYTES, f"expected at most {MAX_FILE_BYTES} bytes"),
        (b"[serial]\nbaudrate = " + b"9" * 4000, "serial.baudrate: expected an integer from"),
        (b"[store]\nttl_ms = " + b"9" * 400, "store.ttl_ms: expected a finite number"),
        (b"[store]\nttl_ms = inf", "store.ttl_ms: expected a finite number, got inf"),
        (b'[serial]\npath = "/dev/a\\u0000b"', "serial.path: expected a non-empty device path"),
        (b'[publish]\nunix_socket = "/run/' + b"x" * 200 + b'"', "at most 107 bytes"),
        (b'[verdict]\nselect = "id=0xBEEF"', "verdict.select: id: expected -32768..32767"),
        (b"[clock]\nmax_skew_ppm = 20000", "clock.max_skew_ppm: expected a number of ppm"),
    ],
)
def test_a_bad_file_is_one_config_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "gizmo.toml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as exc:
        load_config(str(path))
    assert str(exc.value).startswith(f"config file {path}: ")
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_an_error_in_a_flag_names_the_flag_and_the_setting(tmp_path):
    flags = {"serial.silent_after_s": "--silent-after-s"}
    with pytest.raises(ConfigError, match=r"^--silent-after-s: serial.silent_after_s: expected"):
        load_config(None, {"serial": {"silent_after_s": 1e-9}}, flags)
    path = tmp_path / "gizmo.toml"
    path.write_text("[serial]\nsilent_after_s = 1e-9\n")
    with pytest.raises(ConfigError, match=r"^config file .*: serial.silent_after_s: expected"):
        load_config(str(path), {"serial": {"silent_after_s": None}}, flags)  # flag not given


# --- random input: a Config or a ConfigError, nothing else ---------------------------------

_SECTIONS = {
    name: [f.name for f in dataclasses.fields(getattr(HostConfig(), name))]
    for name in (f.name for f in dataclasses.fields(HostConfig))
    if dataclasses.is_dataclass(getattr(HostConfig(), name))  # [world], [camera]: test_world_config
}
_text = st.text(max_size=12)
_scalars = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats().map(lambda x: {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(x), repr(x))),
    st.floats(0.001, 5000).map(repr),
    st.sampled_from(["true", "false", '"any"', '"type=LINE,id=3"', '"/tmp/s"', "0", "1", "0.5"]),
    _text.map(lambda t: json.dumps(t, ensure_ascii=False)),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: f"[{', '.join(items)}]"),
        st.dictionaries(_text.map(json.dumps), inner, max_size=2).map(
            lambda table: "{" + ", ".join(f"{k} = {v}" for k, v in table.items()) + "}"
        ),
    ),
    max_leaves=6,
)
_TTL_KEYS = ["LINE", "qr_code", "4", "256", "²", "LIN", "-1"]


@st.composite
def toml_documents(draw: st.DrawFn) -> str:
    lines = []
    for section in draw(st.lists(st.sampled_from([*_SECTIONS, "serail"]) | _text, max_size=4)):
        lines.append(f"[{json.dumps(section, ensure_ascii=False)}]")
        keys = [*_SECTIONS.get(section, []), "bogus"]
        for key in draw(st.lists(st.sampled_from(keys) | _text, max_size=4, unique=True)):
            lines.append(f"{json.dumps(key, ensure_ascii=False)} = {draw(_values)}")
    if draw(st.booleans()):
        lines.append("[store.ttl_ms_by_type]")
        for key in draw(st.lists(st.sampled_from(_TTL_KEYS) | _text, max_size=3, unique=True)):
            lines.append(f"{json.dumps(key, ensure_ascii=False)} = {draw(_values)}")
    return "\n".join(lines) + "\n"


_PLAUSIBLE_STRINGS = {
    "serial.path": st.just('"/dev/gizmo0"'),
    "verdict.select": st.sampled_from(['"any"', '"type=LINE,id=3"', '"id=99999"', '"colour"']),
    "publish.unix_socket": st.just('"/run/gizmo-host/results.sock"'),
    "publish.udp": st.sampled_from(['"127.0.0.1:9870"', '"[::1]:9"', '"host:0"']),
    "runtime.event_loop": st.sampled_from(['"auto"', '"asyncio"', '"trio"']),
    "rflysim.config": st.sampled_from(['"/nonexistent/Config.json"', '""']),
    "rflysim.bind": st.sampled_from(['"127.0.0.1"', '"0.0.0.0"', '"::1"']),
    "rflysim.sim_host": st.sampled_from(['"127.0.0.1"', '"sim"']),
    "mavlink.url": st.sampled_from(['"udpin:0.0.0.0:14540"', '"/dev/ttyAMA1:921600"', '"udp:x"']),
    "mavlink.send_to": st.sampled_from(['"127.0.0.1:20100"', '"nowhere"']),
    "mavlink.landing_target": st.sampled_from(['"ardupilot"', '"px4"', '"off"', '"apm"']),
    "mavlink.signing_key_file": st.sampled_from(['"/nonexistent/key"', '""']),
    "zenoh.mode": st.sampled_from(['"peer"', '"client"', '"router"']),
    "zenoh.connect": st.sampled_from(["[]", '["tcp/127.0.0.1:7447"]', '["nowhere"]', '"x"']),
    "zenoh.listen": st.sampled_from(["[]", '["tcp/0.0.0.0:7447"]', "[1]"]),
    "zenoh.vehicle": st.sampled_from(['"uav-1"', '"a/b"', '""', '"*"']),
    "zenoh.ros2": st.sampled_from(['"off"', '"bridge"', '"rmw_zenoh"', '"ros1"']),
    "zenoh.config": st.sampled_from(['"/etc/gizmo/zenoh.json5"', '""', "7"]),
    "foxglove.listen": st.sampled_from(['"127.0.0.1:8765"', '"0.0.0.0:0"', '"localhost"']),
}


def _plausible(key: str) -> st.SearchStrategy[str]:
    """Values near the accepted range of ``key``: mostly accepted, sometimes just outside."""
    if key in _PLAUSIBLE_STRINGS:
        return _PLAUSIBLE_STRINGS[key]
    if BY_KEY[key].kind == "bool":
        return st.sampled_from(["true", "false"])
    limits = BY_KEY[key]
    if key in _INT_KEYS:
        return st.integers(int(limits.low) - 1, int(limits.high) + 1).map(str)
    return st.floats(limits.low * 0.9 - 0.001, limits.high * 1.1).map(repr)


@st.composite
def plausible_documents(draw: st.DrawFn) -> str:
    lines = []
    for section, keys in _SECTIONS.items():
        lines.append(f"[{section}]")
        for key in draw(st.lists(st.sampled_from(keys), unique=True)):
            if key != "ttl_ms_by_type":
                lines.append(f"{key} = {draw(_plausible(f'{section}.{key}'))}")
    lines.append("[store.ttl_ms_by_type]")
    for key in draw(st.lists(st.sampled_from(_TTL_KEYS[:3]), unique=True)):
        lines.append(f"{key} = {draw(_plausible('store.ttl_ms_by_type'))}")
    return "\n".join(lines) + "\n"


def _load_or_config_error(path) -> HostConfig | None:
    try:
        config = load_config(str(path))
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return None
    # Whatever the loader accepts, the service accepts too: no ValueError at start-up.
    config = dataclasses.replace(config, serial=dataclasses.replace(config.serial, path="x"))
    GizmoService(config.link(), config.pipeline())
    return config


_FILE_SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@_FILE_SETTINGS
@given(content=st.binary(max_size=400))
def test_random_bytes_give_a_config_or_a_config_error(tmp_path, content):
    path = tmp_path / "random.toml"
    path.write_bytes(content)
    _load_or_config_error(path)


@_FILE_SETTINGS
@given(document=toml_documents())
def test_random_toml_documents_give_a_config_or_a_config_error(tmp_path, document):
    path = tmp_path / "random.toml"
    path.write_text(document)
    _load_or_config_error(path)


@_FILE_SETTINGS
@given(document=plausible_documents())
def test_values_the_loader_accepts_are_accepted_by_the_service(tmp_path, document):
    path = tmp_path / "plausible.toml"
    path.write_text(document)
    _load_or_config_error(path)
