"""Hang-ups: what the emulator announces is what a reader can count.

A 10-minute demo once counted 25 disconnects for 30 injected hang-ups. Two causes, both on the
emulator's side: (1) it announced every hang-up as a disconnect, also one injected while the
port was still down from the previous one, or before the reader had reopened it, which no
reader can see; (2) it left its symlink pointing at the closed pty's /dev/pts number during a
hang-up, and the next pty made on the machine (any program's) reuses the lowest free number:
the host reopened the link into someone else's pty and sat there, blind to the next hang-ups.
Now the link goes with the pty, as udev removes /dev/gizmo0 on unplug, and only a hang-up a
reader had the port open for is announced.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

import pytest

from gizmo_host.live.link import SerialLink
from gizmo_host.live.link_config import LinkConfig
from gizmo_host.rigs.board import PtyBoard
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.faults import Fault, FaultKind
from gizmo_host.rigs.board.port import PtyPort
from gizmo_host.rigs.board.runner import Runner
from gizmo_host.rigs.board.target_sources import ScenarioSource
from tests.support.emulate_host import make_emulation


def test_an_unplugged_pty_leaves_no_link_into_a_reused_pts(link_path):
    board = PtyBoard(link_path)
    board.plug()
    reader = os.open(link_path, os.O_RDWR | os.O_NOCTTY)
    assert board.unplug() is True  # a reader had it open: it sees the hang-up
    os.close(reader)
    assert not os.path.lexists(link_path)
    master, slave = os.openpty()  # another program's pty: often gets the freed number
    try:
        assert not os.path.lexists(link_path)  # whichever it got, no link leads there
        assert board.unplug() is False  # nothing plugged, nothing to observe
        board.plug()
        assert os.path.realpath(link_path) != os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)
        board.close()
    assert not os.path.lexists(link_path)


# A hang-up; a second one while the port is still down (nobody can see it); a third, long after
# the reader is back.
TIMELINE = (
    Fault(FaultKind.HANGUP, 0.3, 0.4),
    Fault(FaultKind.HANGUP, 0.5, 0.2),
    Fault(FaultKind.HANGUP, 1.8, 0.2),
)


@pytest.mark.realtime
def test_the_host_counts_every_hang_up_the_emulator_announces(link_path):
    async def main() -> tuple[dict, int]:
        port = PtyPort(link_path)
        port.plug()
        runner = Runner(
            lambda start_ns: make_emulation(TIMELINE, start_ns=start_ns),
            port,
            ScenarioSource(BoardScenario()),
            duration_s=2.6,
        )
        link = SerialLink(
            LinkConfig(link_path, backoff_min_s=0.02, backoff_max_s=0.1),
            on_results=lambda results, now_ns: None,
        )
        reader = asyncio.create_task(link.run())
        try:
            await asyncio.wait_for(runner.run(), 10.0)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            await port.close()
        assert runner.emulation is not None
        return runner.emulation.stats(), link.stats().disconnects

    stats, disconnects = asyncio.run(main())
    hangup = stats["faults"]["hangup"]
    assert hangup["events"] == 3  # injected
    assert hangup["observed"] == 2  # the second came while the port was down
    assert stats["host"]["disconnects"] == disconnects == 2
