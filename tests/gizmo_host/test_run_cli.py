"""``gizmo-host run`` as a real process on a real pty: JSON Lines validated against the schemas."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys

import jsonschema
import pytest

from gizmo_host.cli import main
from gizmo_host.emulator import BoardModel, PtyBoard, play
from gizmo_host.schemas import MESSAGE_TYPES, load_schema

TIMEOUT_S = 10.0


def validate(message: dict) -> None:
    assert message["type"] in MESSAGE_TYPES
    jsonschema.validate(message, load_schema(message["type"]))


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_run_prints_schema_valid_json_lines_and_talks_to_systemd(link_path, tmp_path, event_loop):
    if event_loop == "uvloop":
        pytest.importorskip("uvloop", reason="the uvloop extra is not installed")
    notify_path = str(tmp_path / "notify")
    socket_path = str(tmp_path / "results.sock")
    config = tmp_path / "gizmo.toml"
    config.write_text(
        '[verdict]\nselect = "type=DETECTOR,id=11"\ninterval_s = 0.3\n[store]\nttl_ms = 200\n'
    )

    async def main_async():
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.setblocking(False)
        loop = asyncio.get_running_loop()
        env = dict(os.environ, NOTIFY_SOCKET=notify_path, PYTHONUNBUFFERED="1")
        with PtyBoard(link_path) as board:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gizmo_host.cli",
                "run",
                "--serial",
                link_path,
                "--config",
                str(config),
                "--socket",
                socket_path,
                "--stats-interval-s",
                "0.5",
                "--transport-delay-ms",
                "0",
                "--event-loop",
                event_loop,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            assert proc.stdout is not None
            messages: list[dict] = []

            async def next_message() -> dict:
                line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S)
                assert line, "gizmo-host run ended early"
                message = json.loads(line)
                validate(message)
                messages.append(message)
                return message

            async def until(predicate) -> dict:
                while True:
                    message = await next_message()
                    if predicate(message):
                        return message

            try:
                ready = await asyncio.wait_for(loop.sock_recv(notify, 4096), TIMEOUT_S)
                assert b"READY=1" in ready
                await until(lambda m: m["type"] == "link" and m["state"] == "SYNCING")
                reader, writer = await asyncio.open_unix_connection(socket_path)
                version = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                validate(version)
                player = asyncio.create_task(play(board, BoardModel(), 45))
                proceed = await until(
                    lambda m: m["type"] == "verdict" and m["decision"] == "PROCEED"
                )
                assert proceed["selector"] == {"source_id": None, "result_type": 5, "id": 11}
                from_socket = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                validate(from_socket)
                await player
                hold = await until(lambda m: m["type"] == "verdict" and m["decision"] == "HOLD")
                assert "stale" in hold["reasons"]
                stats = await until(lambda m: m["type"] == "stats")
                assert stats["sources"]["1"]["received"] == 45
                assert stats["publish"]["unix_socket"]["clients"] == 1
                writer.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                rc = await asyncio.wait_for(proc.wait(), TIMEOUT_S)
            assert rc == 0
            assert f"event loop: {event_loop}" in (await proc.stderr.read()).decode()
            stopping = await asyncio.wait_for(loop.sock_recv(notify, 4096), TIMEOUT_S)
            while b"STOPPING=1" not in stopping:
                stopping = await asyncio.wait_for(loop.sock_recv(notify, 4096), TIMEOUT_S)
            notify.close()
            kinds = {m["type"] for m in messages}
            assert {"version", "link", "result", "verdict", "stats"} <= kinds
            results = [m for m in messages if m["type"] == "result"]
            assert [m["result"]["sequence"] for m in results] == list(range(len(results)))
            assert not os.path.exists(socket_path)

    asyncio.run(main_async())


def test_config_errors_name_the_key_and_exit_2(link_path, tmp_path, capsys):
    assert main(["run", "--serial", link_path, "--baud", "0"]) == 2
    assert "serial.baudrate: expected a positive integer, got 0" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[serial]\nbaud = 9600\n")
    assert main(["run", "--config", str(bad)]) == 2
    assert "serial.baud: unknown key" in capsys.readouterr().err
    assert main(["run"]) == 2
    assert "serial.path: expected a device path" in capsys.readouterr().err


def test_help_lists_the_run_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--serial", "--config", "--unix-socket", "--udp", "--select", "--ttl-ms"):
        assert flag in out
