"""Record and replay end to end through real I/O: a pty and loopback UDP into ``gizmo-host
record``, its capture replayed offline (the same lines as the live host printed, modulo the
documented differences) and live, through a pty and UDP, into ``gizmo-host run``; its Foxglove
topics read back with the ``mcap`` reader, as recorded and as ``replay --foxglove-out``
recomputes them.

Documented differences between a live run and its offline replay: timer-driven lines (the
periodic verdict, world and stats lines) may come at other times and in another number, and
the UP transition carries the receive time of the chunk that held the first frame, which the
live link stamps a few microseconds later. Results, link transitions (but the UP time) and the
changes of every verdict are the same.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from gizmo_host.app.foxglove_replay import replay_to_mcap
from gizmo_host.app.offline_replay import OfflineReplay
from gizmo_host.capture.reader import CaptureReader, HostLine
from gizmo_host.foxglove.layout import layout, named_topics
from gizmo_host.rigs.board import BoardModel, PtyBoard
from rfly_link import ports
from tests.support.coptersim import free_copter_id, state_datagram
from tests.support.foxglove_checks import check_capture
from tests.support.goldens import changes

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]

TIMEOUT_S = 15.0
FRAMES = 45  # 1.5 s at 30 Hz: the device clock locks after 1 s, so PROCEED is recorded
CLI = (sys.executable, "-m", "gizmo_host.cli")


def write_config(path: Path, copter_id: int) -> None:
    path.write_text(
        '[verdict]\nselect = "type=DETECTOR,id=11"\n'
        "[publish]\nstats_interval_s = 0.5\n"
        "[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90.0\n"
        "mount_rpy_deg = [0.0, -90.0, 0.0]\n"
        "[world]\nrate_hz = 10\n"
        f"[rflysim]\ncopter_id = {copter_id}\n"
    )


async def wait_for(predicate: Any, what: str) -> None:
    """Poll a condition of the outside world (a process opening a pty) with a deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_S
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def record_live(link: str, config: Path, out: Path, copter_id: int) -> None:
    """The board's frames on a pty and CopterSim states over UDP, into ``gizmo-host record``."""
    with PtyBoard(link) as board:
        proc = await asyncio.create_subprocess_exec(
            *CLI,
            *("record", "--serial", link, "--config", str(config), "-o", str(out)),
            *("--transport-delay-ms", "0"),
            stderr=asyncio.subprocess.PIPE,
        )
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            await wait_for(board.reader_attached, "gizmo-host record to open the pty")
            model = BoardModel(live_clock=True, period_ms=33)
            address = ("127.0.0.1", ports.coptersim_state_port(copter_id))
            loop = asyncio.get_running_loop()
            start = loop.time()
            for index in range(FRAMES * 3):  # states at 100 Hz, a frame every third
                sim_time_s = 500.0 + loop.time() - start  # the simulator runs in real time
                sock.sendto(state_datagram(copter_id, sim_time_s), address)
                if index % 3 == 0:
                    board.write(model.next_frame(x=0, y=0, w=100, h=100))
                await asyncio.sleep(0.01)
        finally:
            sock.close()
            proc.send_signal(signal.SIGTERM)
            assert proc.stderr is not None
            stderr = (await asyncio.wait_for(proc.stderr.read(), TIMEOUT_S)).decode()
            rc = await asyncio.wait_for(proc.wait(), TIMEOUT_S)
        assert rc == 0, stderr
        assert "0 dropped, 0 world input errors" in stderr, stderr  # both counted, both reported


async def replay_into_run(capture: Path, link: str, config: Path, results: int) -> list[dict]:
    """``gizmo-host replay --link`` into ``gizmo-host run``: the lines run printed."""
    player = await asyncio.create_subprocess_exec(
        *CLI,
        *("replay", str(capture), "--link", link, "--wait-s", "10", "--linger-s", "0.2"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert player.stdout is not None and player.stderr is not None
    pty = json.loads(await asyncio.wait_for(player.stdout.readline(), TIMEOUT_S))
    assert pty["type"] == "pty" and pty["link"] == link
    host = await asyncio.create_subprocess_exec(
        *CLI,
        *("run", "--serial", link, "--config", str(config), "--transport-delay-ms", "0"),
        *("--stats-interval-s", "0", "--event-loop", "asyncio"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert host.stdout is not None and host.stderr is not None
    lines: list[dict] = []
    try:
        while sum(line["type"] == "result" for line in lines) < results:
            raw = await asyncio.wait_for(host.stdout.readline(), TIMEOUT_S)
            if not raw:
                raise AssertionError((await host.stderr.read()).decode())
            lines.append(json.loads(raw))
        assert await asyncio.wait_for(player.wait(), TIMEOUT_S) == 0
        stats = json.loads(await player.stderr.read())
        assert stats["bytes_dropped"] == 0 and stats["datagrams"] > 0, stats
    finally:
        for proc in (player, host):
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                await asyncio.wait_for(proc.wait(), TIMEOUT_S)
    return lines


def test_record_a_live_run_then_replay_it_offline_and_into_run(tmp_path: Path) -> None:
    copter_id = free_copter_id()
    config = tmp_path / "gizmo.toml"
    write_config(config, copter_id)
    capture = tmp_path / "live.mcap"
    asyncio.run(record_live(str(tmp_path / "gizmo0"), config, capture, copter_id))

    reader = CaptureReader(str(capture))
    assert reader.info.world is not None  # the world's settings travel with the capture
    # the Foxglove topics, in the same file, and recomputed into a new one by replay
    named = named_topics(layout())
    recorded = check_capture(str(capture), named)
    view = tmp_path / "view.mcap"
    assert replay_to_mcap(CaptureReader(str(capture)), str(view), None) == 0
    assert check_capture(str(view), named)["/gizmo/result"] == recorded["/gizmo/result"]
    printed: dict[str, list[dict[str, Any]]] = {}
    for message in reader.messages():
        if isinstance(message, HostLine):
            printed.setdefault(message.message_type, []).append(json.loads(message.line))
    replay = b"".join(OfflineReplay(reader.info, reader.path).replay(reader.messages()))
    offline: dict[str, list[dict[str, Any]]] = {}
    for line in replay.splitlines():
        message = json.loads(line)
        offline.setdefault(message["type"], []).append(message)

    def result(line: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in line.items() if k not in ("host_published_ns", "age_ms")}

    assert len(printed["result"]) >= FRAMES - 5
    assert [result(r) for r in offline["result"]] == [result(r) for r in printed["result"]]
    link = [(e["state"], e["previous"], e["reason"]) for e in printed["link"]]
    assert [(e["state"], e["previous"], e["reason"]) for e in offline["link"]] == link
    assert [e["host_ns"] for e in offline["link"] if e["state"] != "UP"] == [
        e["host_ns"] for e in printed["link"] if e["state"] != "UP"
    ]
    assert ("PROCEED", ()) in changes(printed["verdict"])
    assert changes(offline["verdict"]) == changes(printed["verdict"])
    assert ("PROCEED", ()) in changes(printed["world"])
    # A loaded live host that handled several inputs in one turn of its loop printed only the
    # last world state between them, and may stop before printing the last one; replay applies
    # each input at its own time (docs/record-replay.md): the live changes, in order, are
    # among replay's.
    assert in_order_within(changes(printed["world"]), changes(offline["world"]))
    assert offline["stats"][-1]["world"]["rflysim"]["poses"] > 0

    live = asyncio.run(
        replay_into_run(capture, str(tmp_path / "replayed"), config, len(printed["result"]))
    )
    results = [line["result"] for line in live if line["type"] == "result"]
    assert results == [r["result"] for r in printed["result"]]  # every frame, byte for byte
    assert any(line["type"] == "world" and line["vehicle"] for line in live)


def in_order_within(wanted: list[Any], seen: list[Any]) -> bool:
    """Every item of ``wanted`` is in ``seen``, in the same order (others may come between)."""
    rest = iter(seen)
    return all(any(item == other for other in rest) for item in wanted)
