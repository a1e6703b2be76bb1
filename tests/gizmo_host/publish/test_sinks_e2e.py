"""A stalled stdout holds nobody up, end to end: ``gizmo-host run`` on a real pty, its stdout a
pipe that is full before it starts and that nobody reads, and a Unix-socket client that watches
ten seconds of frames and then an unplug. The client gets every line, and the DOWN and the HOLD
within the bound the in-process unplug test uses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

import jsonschema
import pytest

from gizmo_host.rigs.board import BoardModel, PtyBoard, play
from gizmo_host.schemas import load_schema
from tests.support.pipes import full_pipe

pytestmark = [pytest.mark.realtime, pytest.mark.subprocess]


TIMEOUT_S = 10.0
UNPLUG_BOUND_S = 0.5  # tests/gizmo_host/live/test_link_pty.py: link DOWN and HOLD after an unplug
STALL_S = 10.0
FRAMES = round(STALL_S * 1000 / 33)


async def connect(path: str, proc: asyncio.subprocess.Process):
    """Connect once the server listens (it binds before it reads the port)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return await asyncio.open_unix_connection(path, limit=1 << 22)
        except (FileNotFoundError, ConnectionRefusedError):
            assert proc.returncode is None, "gizmo-host run exited"
            assert time.monotonic() < deadline, "the socket never came up"
            await asyncio.sleep(0.02)  # poll for the socket file, with a deadline


@pytest.mark.long
def test_a_stalled_stdout_never_delays_a_socket_client_through_an_unplug(link_path, tmp_path):
    config = tmp_path / "gizmo.toml"
    config.write_text(
        '[verdict]\nselect = "type=DETECTOR,id=11"\ninterval_s = 0.2\n[store]\nttl_ms = 200\n'
    )
    socket_path = str(tmp_path / "gizmo.sock")
    validators = {
        kind: jsonschema.Draft202012Validator(load_schema(kind))
        for kind in ("verdict", "link", "stats")
    }

    async def main() -> tuple[list[dict], float]:
        read_fd, write_fd = full_pipe()
        with PtyBoard(link_path) as board:
            proc = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
                *("--config", str(config), "--transport-delay-ms", "0"),
                *("--unix-socket", socket_path, "--stats-interval-s", "1"),
                stdout=write_fd,
                stderr=asyncio.subprocess.DEVNULL,
            )
            os.close(write_fd)  # the child holds it; the test keeps the unread end open
            messages: list[dict] = []
            try:
                reader, writer = await connect(socket_path, proc)

                async def until(predicate, timeout: float = TIMEOUT_S) -> dict:
                    async def scan() -> dict:
                        while line := await reader.readline():
                            messages.append(json.loads(line))
                            if predicate(messages[-1]):
                                return messages[-1]
                        raise AssertionError("the socket closed")

                    return await asyncio.wait_for(scan(), timeout)

                await until(lambda m: m["type"] == "version")
                await until(syncing)  # the port is open (perhaps before the client came)
                model = BoardModel()
                player = asyncio.create_task(play(board, model, FRAMES))
                await until(lambda m: m["type"] == "verdict" and m["decision"] == "PROCEED")
                # Ten seconds of frames, read as they come (the client keeps up).
                await until(
                    lambda m: m["type"] == "result" and _seq(m) == FRAMES - 1,
                    STALL_S + TIMEOUT_S,
                )
                await player
                unplugged = time.monotonic()
                board.unplug()  # removes the symlink too, as udev would
                await until(lambda m: m["type"] == "link" and m["state"] == "DOWN", UNPLUG_BOUND_S)
                hold = await until(
                    lambda m: m["type"] == "verdict" and m["decision"] == "HOLD",
                    UNPLUG_BOUND_S - (time.monotonic() - unplugged),
                )
                assert "link_down" in hold["reasons"]
                stats = await until(lambda m: m["type"] == "stats")
                # The reader of stdout comes back: what it gets first is what was still true
                # when written, never the ten seconds of backlog.
                resumed_ns = time.monotonic_ns()
                backlog = await read_until(read_fd, lambda m: m == stats)
                after = await until(lambda m: m["type"] == "stats")
                writer.close()
            finally:
                proc.send_signal(signal.SIGTERM)
                stopping = time.monotonic()
                rc = await asyncio.wait_for(proc.wait(), TIMEOUT_S)
                stop_s = time.monotonic() - stopping
                os.close(read_fd)
            assert rc == 0
            return [*messages, stats], stop_s, resumed_ns, backlog, after

    messages, stop_s, resumed_ns, backlog, after = asyncio.run(main())
    print(f"SIGTERM to exit with stdout stalled: {stop_s:.3f} s")
    for message in messages:
        if message["type"] in validators:
            validators[message["type"]].validate(message)
    down = next(i for i, m in enumerate(messages) if m["type"] == "link" and m["state"] == "DOWN")
    results = [_seq(m) for m in messages[:down] if m["type"] == "result"]
    assert results == list(range(FRAMES))  # the serial path lost nothing meanwhile
    stats = messages[-1]["publish"]
    # Every stdout line waits in its queue (1 MiB: ten seconds fit; drop-oldest beyond that is
    # tests/gizmo_host/publish/test_sinks.py's); not one was written, and nobody waited for them.
    assert stats["stdout"]["written"] == 0 and stats["stdout"]["pending_bytes"] > 0
    assert stats["stdout"]["queued"] >= FRAMES and stats["stdout"]["disconnected"] == 0
    assert stats["unix_socket"]["dropped"] == 0 and stats["unix_socket"]["disconnected"] == 0
    # After the stall: not one line the stdout reader got had expired when it was written (the
    # pipe was full until resumed_ns, so each was written after it); the lines that carry no
    # validity (link transitions, stats) all came, in order.
    stale = [m for m in backlog if m.get("valid_until_ns", resumed_ns) < resumed_ns]
    assert stale == []
    assert sum(m["type"] == "result" for m in backlog) < FRAMES // 10
    until_ns = backlog[-1]["host_ns"]  # the socket's stats line that ended the backlog
    socket_links = [m for m in messages if m["type"] == "link" and m["host_ns"] <= until_ns]
    stdout_links = [m for m in backlog if m["type"] == "link"]
    assert socket_links and stdout_links[-len(socket_links) :] == socket_links
    socket_stats = list(
        dict.fromkeys(
            m["host_ns"] for m in messages if m["type"] == "stats" and m["host_ns"] <= until_ns
        )
    )
    stdout_stats = [m["host_ns"] for m in backlog if m["type"] == "stats"]
    assert stdout_stats[-len(socket_stats) :] == socket_stats
    stdout = after["publish"]["stdout"]
    print(
        f"stdout after a {STALL_S:.0f} s stall: {len(backlog)} lines delivered "
        f"({sum(m['type'] == 'result' for m in backlog)} results), {stdout['expired']} expired"
    )
    assert stdout["expired"] >= FRAMES - FRAMES // 10 and stdout["dropped"] == 0
    pending = stdout["queued"] - stdout["written"] - stdout["expired"]
    assert stdout["written"] >= len(backlog) and pending >= 0
    assert (pending == 0) == (stdout["pending_bytes"] == 0)


async def read_until(read_fd: int, last) -> list[dict]:
    """The JSON lines read from the pipe (after its filler) up to and including ``last``."""
    reader = asyncio.StreamReader(limit=1 << 22)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(read_fd), "rb", 0)
    )
    out: list[dict] = []

    async def scan() -> None:
        while True:
            raw = await reader.readline()
            assert raw, "stdout closed"
            out.append(json.loads(raw.lstrip(b"#")))
            if last(out[-1]):
                return

    try:
        await asyncio.wait_for(scan(), TIMEOUT_S)
    finally:
        transport.close()
    return out


def syncing(message: dict) -> bool:
    """The transition to SYNCING, or a stats line that says the link is there."""
    if message["type"] == "link":
        return message["state"] == "SYNCING"
    return message["type"] == "stats" and message["link"]["state"] == "SYNCING"


def _seq(message: dict) -> int:
    return message["result"]["sequence"]


def test_ctrl_c_ends_run_with_its_stdout_stalled(link_path, tmp_path):
    """Once, a blocking write to the full pipe held the loop: Python retried it after the
    signal (PEP 475) and the loop never ran the handler, so Ctrl-C was ignored for good."""
    socket_path = str(tmp_path / "gizmo.sock")

    async def main() -> int | None:
        read_fd, write_fd = full_pipe()
        try:
            with PtyBoard(link_path):
                proc = await asyncio.create_subprocess_exec(
                    *(sys.executable, "-m", "gizmo_host.cli", "run", "--serial", link_path),
                    *("--unix-socket", socket_path),
                    stdout=write_fd,
                    stderr=asyncio.subprocess.DEVNULL,
                )
                os.close(write_fd)
                write_fd = -1
                reader, writer = await connect(socket_path, proc)
                version = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT_S))
                assert version["type"] == "version"  # it serves while stdout is full
                proc.send_signal(signal.SIGINT)
                try:
                    return await asyncio.wait_for(proc.wait(), TIMEOUT_S)
                except asyncio.TimeoutError:
                    proc.kill()
                    await proc.wait()
                    return None
                finally:
                    writer.close()
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)

    assert asyncio.run(main()) == 0
