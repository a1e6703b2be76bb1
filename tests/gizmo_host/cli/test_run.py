"""``gizmo-host run`` as a real process on a real pty: JSON Lines validated against the schemas."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from gizmo_host.cli.main import main
from gizmo_host.rigs.board import BoardModel, PtyBoard, play
from tests.support.schemas import validate_message

TIMEOUT_S = 10.0


async def start_run(
    link_path: str, config: object, socket_path: str, *flags: str, **kwargs: object
) -> asyncio.subprocess.Process:
    """``gizmo-host run`` on ``link_path`` as a real process, publishing on ``socket_path``."""
    return await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
        *("--config", str(config), "--socket", socket_path, *flags),
        stderr=asyncio.subprocess.PIPE,
        **kwargs,
    )


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
@pytest.mark.subprocess
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
            proc = await start_run(
                link_path,
                config,
                socket_path,
                *("--stats-interval-s", "0.5", "--transport-delay-ms", "0"),
                *("--event-loop", event_loop),
                stdout=asyncio.subprocess.PIPE,
                env=env,
            )
            assert proc.stdout is not None
            messages: list[dict] = []

            async def next_message() -> dict:
                line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S)
                assert line, "gizmo-host run ended early"
                message = json.loads(line)
                validate_message(message)
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
                validate_message(version)
                player = asyncio.create_task(play(board, BoardModel(), 45))
                proceed = await until(
                    lambda m: m["type"] == "verdict" and m["decision"] == "PROCEED"
                )
                assert proceed["selector"] == {"source_id": None, "result_type": 5, "id": 11}
                from_socket = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                validate_message(from_socket)
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


@pytest.mark.subprocess
def test_a_stalled_socket_client_is_dropped_while_another_gets_every_result(link_path, tmp_path):
    """End to end: pty -> gizmo-host run -> Unix socket, one client that never reads and one
    that does. The reader never waits for the stalled one: it is dropped once its buffers
    are full, and the other gets every result in order."""
    socket_path = str(tmp_path / "results.sock")
    config = tmp_path / "gizmo.toml"
    config.write_text("[publish]\nstdout = false\nunix_max_buffer_bytes = 32768\n")
    count, slice_frames = 1000, 25  # ~600 kB of result lines: more than a stalled client holds

    async def main_async():
        with PtyBoard(link_path) as board:
            proc = await start_run(link_path, config, socket_path, "--stats-interval-s", "0")
            assert proc.stderr is not None
            try:
                while b"SYNCING" not in await asyncio.wait_for(proc.stderr.readline(), TIMEOUT_S):
                    pass
                stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                stalled.connect(socket_path)  # never reads until the end
                reader, writer = await asyncio.open_unix_connection(socket_path)
                await asyncio.wait_for(reader.readline(), TIMEOUT_S)  # the version line
                model = BoardModel()
                sequences = []
                for sent in range(slice_frames, count + 1, slice_frames):
                    # The board's pace is the reader's: a reader that keeps up is never more
                    # than a slice behind, whatever the machine's load (a 35 kB burst at once
                    # is ~600 kB of lines, which a descheduled reader cannot keep up with).
                    # Written from here, not a thread: under 4 kB, so it never blocks, and a
                    # thread blocked on a full pty would hang asyncio.run's shutdown instead of
                    # failing the test.
                    board.write(b"".join(model.next_frame() for _ in range(slice_frames)))
                    while len(sequences) < sent:
                        line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
                        assert line, "the reading client was dropped"
                        message = json.loads(line)
                        if message["type"] == "result":
                            sequences.append(message["result"]["sequence"])
                assert sequences == list(range(count))
                stalled.settimeout(TIMEOUT_S)
                got = b""
                with contextlib.suppress(ConnectionResetError):
                    while chunk := stalled.recv(1 << 16):
                        got += chunk
                stalled.close()  # the server closed it: end of stream, or a reset
                assert got.count(b'"type":"result"') < count
                writer.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                assert await asyncio.wait_for(proc.wait(), TIMEOUT_S) == 0
            assert "is not reading: dropped" in (await proc.stderr.read()).decode()

    asyncio.run(main_async())


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
@pytest.mark.subprocess
def test_a_client_that_closed_its_sending_side_gets_every_result(link_path, tmp_path, event_loop):
    """Issue 10 item 8, end to end: a client that calls shutdown(SHUT_WR) at once (as ``socat``
    fed from /dev/null does) got the version line and was then disconnected. It is a reader:
    it gets every result."""
    if event_loop == "uvloop":
        pytest.importorskip("uvloop", reason="the uvloop extra is not installed")
    socket_path = str(tmp_path / "results.sock")
    config = tmp_path / "gizmo.toml"
    config.write_text("[publish]\nstdout = false\n")
    count = 50

    async def main_async():
        with PtyBoard(link_path) as board:
            proc = await start_run(
                link_path,
                config,
                socket_path,
                "--stats-interval-s",
                "0",
                "--event-loop",
                event_loop,
            )
            assert proc.stderr is not None
            try:
                while b"SYNCING" not in await asyncio.wait_for(proc.stderr.readline(), TIMEOUT_S):
                    pass
                client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                client.connect(socket_path)
                client.shutdown(socket.SHUT_WR)  # nothing to say, ever
                reader, writer = await asyncio.open_unix_connection(sock=client)
                version = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                assert version["type"] == "version"
                model = BoardModel()
                board.write(b"".join(model.next_frame() for _ in range(count)))  # < 4 kB
                sequences = []
                while len(sequences) < count:
                    line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
                    assert line, "the server hung up on a client that only closed its input"
                    message = json.loads(line)
                    validate_message(message)
                    if message["type"] == "result":
                        sequences.append(message["result"]["sequence"])
                assert sequences == list(range(count))
                writer.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                assert await asyncio.wait_for(proc.wait(), TIMEOUT_S) == 0

    asyncio.run(main_async())


def test_config_errors_name_the_key_and_exit_2(link_path, tmp_path, capsys):
    assert main(["run", "--serial", link_path, "--baud", "0"]) == 2
    assert "--baud: serial.baudrate: expected an integer from 50 to" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[serial]\nbaud = 9600\n")
    assert main(["run", "--config", str(bad)]) == 2
    assert "serial.baud: unknown key" in capsys.readouterr().err
    assert main(["run"]) == 2
    assert "serial.path: expected a device path" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[store.ttl_ms_by_type]\n"²" = 5\n'.encode(), ": store.ttl_ms_by_type.²: expected"),
        (bytes(range(128, 256)) * 2 + bytes(44), ": expected UTF-8 text, got byte 0x80"),
        (b"a = " + b"[\n" * 10_000 + b"]\n" * 10_000, ": expected valid TOML: nested too deeply"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_it_and_exit_2(
    link_path, tmp_path, capsys, content, message
):
    """Issue 10 item 10: these printed a ValueError, UnicodeDecodeError or RecursionError."""
    bad = tmp_path / "bad.toml"
    bad.write_bytes(content)
    assert main(["run", "--serial", link_path, "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gizmo-host run: config error: config file {bad}{message}")
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("flags", "config", "message"),
    [
        (["--silent-after-s", "1e-9"], "", "--silent-after-s: serial.silent_after_s: expected"),
        ([], "[verdict]\ninterval_s = 1e-9\n", ": verdict.interval_s: expected"),
        (["--stats-interval-s", "0.001"], "", "--stats-interval-s: publish.stats_interval_s:"),
    ],
)
@pytest.mark.subprocess
def test_a_period_that_would_spin_the_cpu_exits_2_naming_the_setting_and_minimum(
    link_path, tmp_path, flags, config, message
):
    """Issue 10 item 11: 1e-9 s took a whole core or printed ~60k verdict lines a second. A
    real process with a timeout: before the fix, it ran (and spun) instead of exiting."""
    path = tmp_path / "gizmo.toml"
    path.write_text(config)
    with PtyBoard(link_path):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
                *("--config", str(path), *flags),
            ],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 2
    assert message in done.stderr and "from 0.01 to" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_help_lists_the_run_flags(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--serial", "--config", "--unix-socket", "--udp", "--select", "--ttl-ms"):
        assert flag in out
