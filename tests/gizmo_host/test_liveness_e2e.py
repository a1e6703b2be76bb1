"""Issue 29, end to end: a HOLD ends once the data is good again, and never before.

A real pty -> ``gizmo-host run`` (default settings, TTL 250 ms) -> JSON Lines. The board is the
emulator's ``BoardModel`` on the host's own monotonic clock behind a ``PtyBoard``; this test
writes its frames at 30 Hz and, between them, does what the hidden liveness run does: steps the
device clock back 0.6 s and 5 s and forward 5 s, resets the board, hangs the port up and raises
the latency by 20 ms for good. The truth is the test's own: every frame's capture time on the
host clock, and which frames were written before each event. Judged:

- **no wrong PROCEED**: none on a target older than the TTL (beyond the clock's accuracy), and
  none on a frame written before an event once the host had read a frame written after it;
  no result line understates its age;
- **recovery**: PROCEED again (on a frame written after the event) within 1.5 s of a step or
  the latency rise, and within 0.5 s of the first frame read after a reset or a hang-up;
- **a calm stretch** is PROCEED at least 95% of the time.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time
from dataclasses import dataclass, field

import pytest

from gizmo_host.rigs.board import BoardModel, PtyBoard
from tests.support.run_process import Run, spawn_run

pytestmark = [pytest.mark.subprocess, pytest.mark.realtime]

PERIOD_S = 1 / 30
TTL_MS = 250.0  # [store] ttl_ms's default
ACCURACY_MS = 5.0  # the capture-time mapping's error plus the stale timer's margin
CALM_S = 5.0
STEP_RECOVERY_S = 1.5
RELOCK_RECOVERY_S = 0.5
RESETS = HANGUPS = 3
TIMEOUT_S = 10.0
SETTLE_S = 1.5  # after an event: its HOLD (if any) begun and ended, with a reconnection's wait

Key = tuple[int, int]  # (sequence, timestamp_ms): unique across resets


@dataclass
class Event:
    kind: str  # "step", "reset", "hangup", "latency"
    at_ns: int  # host time it happened
    written_before: int  # frames written before it (indexes into Board.written)


@dataclass
class Board:
    """The emulated board, its pty and the truth of every frame it wrote."""

    pty: PtyBoard
    model: BoardModel = field(default_factory=lambda: BoardModel(live_clock=True))
    written: list[tuple[Key, int]] = field(default_factory=list)  # (key, write time)
    capture_ns: dict[Key, int] = field(default_factory=dict)
    quiet_until_ns: int = 0
    delay_s: float = 0.0
    plugged: bool = True
    pending: list[asyncio.TimerHandle] = field(default_factory=list)
    stopped_ns: int | None = None  # when the test stopped the board's frames

    def tick(self) -> None:
        """One frame, unless the board is booting or the port is unplugged."""
        now_ns = time.monotonic_ns()
        if now_ns < self.quiet_until_ns:
            return
        model = self.model
        key = (model.sequence, model.device_ms(now_ns))
        assert key not in self.capture_ns, f"two frames {key}: the judge could not tell them"
        self.capture_ns[key] = now_ns - model.latency_ms * 1_000_000
        data = model.next_result(now_ns=now_ns).encode()
        if not self.plugged:
            return
        if self.delay_s:
            loop = asyncio.get_running_loop()
            self.pending.append(loop.call_later(self.delay_s, self._write, key, data))
        else:
            self._write(key, data)

    def _write(self, key: Key, data: bytes) -> None:
        if self.plugged:
            self.written.append((key, time.monotonic_ns()))
            self.pty.write(data)

    async def stream(self) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        i = 0
        while True:  # the board's pace (this simulates the board: it is not a wait)
            self.tick()
            i += 1
            await asyncio.sleep(max(0.0, start + i * PERIOD_S - loop.time()))


async def start(link_path: str, tmp_path) -> Run:
    config = tmp_path / "gizmo.toml"
    config.write_text('[verdict]\nselect = "type=DETECTOR,id=11"\ninterval_s = 0.2\n')
    return await spawn_run(link_path, config, "--stats-interval-s", "0")


def proceeding_after(board: Board, event: Event):
    """A predicate for pacing the run: a PROCEED on a sequence written after ``event`` (the
    judge checks the frame itself afterwards)."""

    def check(m: dict) -> bool:
        if m["type"] != "verdict" or m["decision"] != "PROCEED":
            return False
        later = {key[0] for key, _ in board.written[event.written_before :]}
        return m["target"]["sequence"] in later

    return check


async def happen(run: Run, board: Board, kind: str, events: list[Event], act) -> None:
    """``act`` on the board, then let it run for ``SETTLE_S`` (a HOLD the event causes must
    have begun and ended by then) and PROCEED again on frames written after it."""
    events.append(Event(kind, time.monotonic_ns(), len(board.written)))
    await act()
    await asyncio.sleep(max(0.0, events[-1].at_ns / 1e9 + SETTLE_S - time.monotonic()))
    await run.wait_for(proceeding_after(board, events[-1]), timeout=TIMEOUT_S)


@pytest.mark.long
def test_holds_end_once_the_data_is_good_again_and_never_proceed_wrongly(link_path, tmp_path):
    events: list[Event] = []

    async def main() -> tuple[list[dict], Board, int]:
        with PtyBoard(link_path) as pty:
            board = Board(pty)
            run = await start(link_path, tmp_path)
            streaming = asyncio.create_task(board.stream())
            try:
                await run.wait_for(lambda m: m.get("decision") == "PROCEED")
                calm_from = time.monotonic_ns()
                await asyncio.sleep(CALM_S)

                async def step(delta_ms: int) -> None:
                    board.model.jump_clock(delta_ms, time.monotonic_ns())

                async def reset() -> None:
                    # Each boot takes another 50 ms, so no two frames share (sequence, time).
                    now_ns = time.monotonic_ns()
                    board.model.reset(boot_ms=0, now_ns=now_ns)
                    boots = sum(e.kind == "reset" for e in events)
                    board.quiet_until_ns = now_ns + 250_000_000 + 50_000_000 * boots

                async def hangup() -> None:
                    board.plugged = False
                    pty.unplug()
                    await asyncio.sleep(0.3)
                    pty.plug()
                    board.plugged = True

                async def latency() -> None:
                    board.delay_s = 0.02

                for delta_ms in (-600, -5000, 5000):
                    await happen(run, board, "step", events, lambda d=delta_ms: step(d))
                for _ in range(RESETS):
                    await happen(run, board, "reset", events, reset)
                for _ in range(HANGUPS):
                    await happen(run, board, "hangup", events, hangup)
                await happen(run, board, "latency", events, latency)
            finally:
                board.stopped_ns = time.monotonic_ns()
                streaming.cancel()
                for handle in board.pending:
                    handle.cancel()
                if run.proc.returncode is None:
                    run.proc.send_signal(signal.SIGTERM)
                rc = await asyncio.wait_for(run.proc.wait(), TIMEOUT_S)
                assert run.reader is not None
                await asyncio.wait_for(run.reader, TIMEOUT_S)
            assert rc == 0
            return run.messages, board, calm_from

    messages, board, calm_from = asyncio.run(main())
    (tmp_path / "lines.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    judged = Judge(messages, board, events)
    assert judged.wrong == [], judged.wrong[:10]
    recoveries = judged.recoveries()
    print(f"\n[liveness] recovery (s): {recoveries}; calm PROCEED {judged.calm(calm_from):.3f}")
    for kind, values in recoveries.items():
        bound = STEP_RECOVERY_S if kind in ("step", "latency") else RELOCK_RECOVERY_S
        assert values and max(values) <= bound, (kind, values)
    assert judged.calm(calm_from) >= 0.95


class Judge:
    """The host's lines against the board's truth."""

    def __init__(self, messages: list[dict], board: Board, events: list[Event]) -> None:
        self.messages, self.board, self.events = messages, board, events
        self.order = {key: i for i, (key, _) in enumerate(board.written)}
        self.rx: dict[Key, int] = {}
        self.targets: dict[int, Key] = {}  # a PROCEED line's index -> the frame it is about
        latest: dict[int, Key] = {}  # sequence -> the last result line's frame so far
        for i, m in enumerate(messages):
            if m["type"] == "result":
                r = m["result"]
                key = latest[r["sequence"]] = (r["sequence"], r["timestamp_ms"])
                self.rx[key] = m["host_rx_ns"]
            elif m["type"] == "verdict" and m["decision"] == "PROCEED":
                key_or_none = latest.get(m["target"]["sequence"])
                if key_or_none is not None:
                    self.targets[i] = key_or_none
        self.wrong = self._wrong()

    def first_read_after(self, event: Event) -> int | None:
        """When the host read the first frame written after ``event``."""
        later = [self.rx[k] for k, _ in self.board.written[event.written_before :] if k in self.rx]
        return min(later, default=None)

    def _wrong(self) -> list[str]:
        found = []
        seen = [(self.first_read_after(e), e) for e in self.events]
        for i, m in enumerate(self.messages):
            if m["type"] == "result" and m["clock"] == "locked":
                r = m["result"]
                captured = self.board.capture_ns[(r["sequence"], r["timestamp_ms"])]
                true_ms = (m["host_published_ns"] - captured) / 1e6
                if m["age_ms"] < true_ms - ACCURACY_MS:
                    found.append(f"result {r['sequence']}: {m['age_ms']} ms, truly {true_ms:.1f}")
            if m["type"] != "verdict" or m["decision"] != "PROCEED":
                continue
            key = self.targets.get(i)
            if key is None:
                found.append(f"PROCEED on seq {m['target']['sequence']} before its result line")
                continue
            true_ms = (m["host_ns"] - self.board.capture_ns[key]) / 1e6
            if true_ms > TTL_MS + ACCURACY_MS:
                found.append(f"PROCEED on {key}: truly {true_ms:.1f} ms old")
            index = self.order.get(key, -1)
            for first_ns, event in seen:
                if (
                    first_ns is not None
                    and first_ns <= m["host_ns"]
                    and index < event.written_before
                ):
                    found.append(f"PROCEED on {key} from before a {event.kind} at {m['host_ns']}")
        return found

    def recoveries(self) -> dict[str, list[float]]:
        """Per kind: steps and the latency rise from the event, a reset and a hang-up from
        the first frame read after it, to the first PROCEED on a frame written after it that
        follows the last HOLD the event caused (before the next event)."""
        out: dict[str, list[float]] = {}
        stopped = next(
            m["host_ns"]
            for m in self.messages
            if m["type"] == "link" and m["state"] == "DOWN" and m["reason"] == "stopped"
        )
        # The last event's window ends when the board's frames stopped: the stale HOLD that
        # follows them (a loaded host takes a while to act on SIGTERM) is not the event's.
        assert self.board.stopped_ns is not None
        ends = [e.at_ns for e in self.events[1:]] + [min(stopped, self.board.stopped_ns)]
        for event, next_ns in zip(self.events, ends, strict=True):
            first_ns = self.first_read_after(event)
            assert first_ns is not None, event
            origin = event.at_ns if event.kind in ("step", "latency") else first_ns
            held = [
                m["host_ns"]
                for m in self.messages
                if m["type"] == "verdict"
                and m["decision"] == "HOLD"
                and event.at_ns <= m["host_ns"] < next_ns
            ]
            since = max(held, default=first_ns)
            back = next(
                self.messages[i]["host_ns"]
                for i, key in self.targets.items()
                if self.messages[i]["host_ns"] >= max(first_ns, since)
                and self.order.get(key, -1) >= event.written_before
            )
            out.setdefault(event.kind, []).append(round((back - origin) / 1e9, 3))
        return out

    def calm(self, from_ns: int) -> float:
        """The share of ``CALM_S`` from ``from_ns`` that the published verdict was PROCEED."""
        until_ns = from_ns + round(CALM_S * 1e9)
        lines = [m for m in self.messages if m["type"] == "verdict"]
        proceed_ns = 0
        for line, following in itertools.pairwise(lines):
            start, end = max(line["host_ns"], from_ns), min(following["host_ns"], until_ns)
            if end > start and line["decision"] == "PROCEED":
                proceed_ns += end - start
        return proceed_ns / (until_ns - from_ns)
