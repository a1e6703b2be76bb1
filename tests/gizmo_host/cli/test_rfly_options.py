"""``gizmo-host rfly`` option mistakes: one line on stderr naming the flag, exit status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gizmo_host.cli.main import main
from tests.support.rfly_process import sensor_json, write_config


@pytest.mark.subprocess
def test_a_copter_id_beyond_the_port_range_is_one_line_and_exit_2() -> None:
    # The command, as a real process: it used to end in an OverflowError traceback.
    proc = subprocess.run(
        [sys.executable, "-m", "gizmo_host.cli", "rfly", "--copter", "40000", "--duration", "1"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["rfly: --copter: expected an integer 1..450, got 40000"]
    assert proc.stdout == ""


@pytest.mark.parametrize(
    ("argv", "flag", "value"),
    [
        # 451: its state port 30100 + 2N - 1 would be 31001, CopterID 2's reply port.
        (["--copter", "451"], "--copter", "451"),
        (["--copter", "17718"], "--copter", "17718"),  # the old limit: ports up to 65535
        (["--copter", "0"], "--copter", "0"),
        (["--copter", "-3"], "--copter", "-3"),
        (["--copter", "abc"], "--copter", "'abc'"),
        (["--rflysim3d", "--duration", "-1"], "--duration", "'-1'"),
        (["--rflysim3d", "--duration", "nan"], "--duration", "'nan'"),
        (["--rflysim3d", "--duration", "inf"], "--duration", "'inf'"),
        (["--rflysim3d", "--duration", "soon"], "--duration", "'soon'"),
        (["--rflysim3d", "--count", "-1"], "--count", "-1"),
        (["--rflysim3d", "--count", "1.5"], "--count", "'1.5'"),
        (["--rflysim3d", "--allow", "1.2.3"], "--allow", "'1.2.3'"),
        (
            ["--rflysim3d", "--multicast", "--multicast-interface", "999.1.1.1"],
            "--multicast-interface",
            "'999.1.1.1'",
        ),
    ],
)
def test_bad_numbers_and_addresses_are_one_line_naming_the_flag(
    argv: list[str], flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["rfly", *argv]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(f"rfly: {flag}: expected ") and line.endswith(f"got {value}")
    assert captured.out == ""


def test_a_port_out_of_range_from_a_config_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "Config.json", sensor_json(70000))
    assert main(["rfly", "--config", str(config)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("rfly: ") and "70000" in line and "Traceback" not in line


def test_good_values_are_accepted() -> None:
    import argparse

    from gizmo_host.cli import rfly as cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    options = cli.parse_options(
        parser.parse_args(
            ["--copter", "450", "--count", "3", "--duration", "0.5", "--allow", "10.0.0.7"]
        )
    )
    assert options.copter_ids == (450,) and options.count == 3 and options.duration_s == 0.5
    assert options.allowed_senders == ("10.0.0.7",)
    # The last CopterID's state port stays below the reply series at 31000.
    assert [r.port for r in cli.build_receivers(options)] == [30999, 31449, 20999, 40999, 20005]


def test_a_receiver_refuses_a_port_bind_cannot_take() -> None:
    from rfly_link import io as rio

    with pytest.raises(ValueError, match=r"port: expected 0\.\.65535, got 65536"):
        rio.UdpReceiver(rio.MessagePipeline(20006), port=65536)
    with pytest.raises(ValueError, match=r"copter_id: expected 1\.\.450, got 451"):
        rio.coptersim_receivers(451)
