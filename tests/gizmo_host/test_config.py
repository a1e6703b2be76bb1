from __future__ import annotations

import sys
from importlib import resources

import pytest

from gizmo_host.config import Config, ConfigError, config_from_mapping, load_config
from gizmo_host.results import ResultType
from gizmo_host.store import TargetSelector

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
    assert config == Config()
    assert config.serial.baudrate == 115200 and config.publish.stdout
    assert config.selector == TargetSelector()


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
    assert config.selector == TargetSelector(1, ResultType.COLOR_BLOB, 1)
    assert config.publish.stdout and config.publish.udp == "127.0.0.1:9870"


def test_the_shipped_default_config_is_valid(tmp_path):
    shipped = resources.files("gizmo_host.data").joinpath("gizmo-host.toml")
    path = tmp_path / "shipped.toml"
    path.write_text(shipped.read_text())
    config = load_config(str(path))
    assert config.serial.path == "/dev/gizmo0"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"serial": {"baudrate": "fast"}}, "serial.baudrate: expected an integer, got 'fast'"),
        ({"serial": {"baudrate": 0}}, "serial.baudrate: expected a positive integer, got 0"),
        ({"serial": {"baudrate": True}}, "serial.baudrate: expected an integer, got True"),
        ({"serial": {"baud": 9600}}, "serial.baud: unknown key; expected one of path, baudrate"),
        ({"serail": {}}, "serail: unknown section; expected one of serial"),
        ({"serial": 3}, "serial: expected a table"),
        ({"store": {"ttl_ms": -1}}, "store.ttl_ms: expected a number of milliseconds > 0"),
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
        ({"clock": {"max_skew_ppm": float("nan")}}, "clock.max_skew_ppm: expected a number"),
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
    from gizmo_host import event_loop

    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if the extra were not installed
    assert event_loop.resolve("auto") == "asyncio"
    assert config_from_mapping({"runtime": {"event_loop": "asyncio"}}).runtime.event_loop
    with pytest.raises(ConfigError, match=r"runtime.event_loop: uvloop is not installed"):
        config_from_mapping({"runtime": {"event_loop": "uvloop"}})
