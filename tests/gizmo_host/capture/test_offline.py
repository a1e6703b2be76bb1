"""Offline replay: the live host on recorded times, without a capture file."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gizmo_host.app import offline_replay
from gizmo_host.app.offline_replay import MAX_GAP_NS, OfflineReplay
from gizmo_host.capture.carried_settings import HostSettings
from gizmo_host.capture.reader import CaptureInfo, Datagram, HostLine, PortEvent, UartChunk
from gizmo_host.errors import CaptureError
from gizmo_host.rigs.board import BoardModel
from gizmo_host.stream.linkstate import REASON_OPENED, LinkInput

T0 = 5_000_000_000
MS = 1_000_000


def run(messages, **settings) -> list[dict]:
    host = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=0, **settings)))
    return [json.loads(line) for line in host.replay(messages)]


def frames(count: int, start_ns: int = T0, period_ms: int = 33) -> list[UartChunk]:
    board = BoardModel(period_ms=period_ms)
    return [UartChunk(start_ns + i * period_ms * MS, board.next_frame()) for i in range(count)]


def test_bytes_without_a_recorded_open_imply_one() -> None:
    out = run(frames(3))
    links = [(line["state"], line["reason"]) for line in out if line["type"] == "link"]
    assert [state for state, _ in links] == ["CONNECTING", "SYNCING", "UP"]
    assert out[-1]["replay"]["implied_opens"] == 1
    assert sum(line["type"] == "result" for line in out) == 3


def test_silence_and_the_verdict_tick_come_exactly_on_time() -> None:
    opened = [
        PortEvent(T0, LinkInput.OPEN_STARTED, "opening"),
        PortEvent(T0, LinkInput.OPENED, REASON_OPENED),
    ]
    chunks = frames(2, T0 + 10 * MS)
    last_ns = chunks[-1].rx_ns
    tail = [UartChunk(last_ns + 3000 * MS, b"\x00")]  # a byte later: the timers ran before it
    out = run([*opened, *chunks, *tail], silent_after_s=0.5, verdict_interval_s=1.0)
    silent = next(line for line in out if line["type"] == "link" and line["state"] == "SILENT")
    assert silent["host_ns"] == last_ns + 500 * MS
    ticks = [line["host_ns"] for line in out if line["type"] == "verdict"]
    assert {T0 + 1000 * MS, T0 + 2000 * MS, T0 + 3000 * MS} <= set(ticks)


def test_what_replay_cannot_apply_is_counted_never_raised() -> None:
    chunks = frames(2)
    messages = [
        *chunks,
        UartChunk(chunks[0].rx_ns - MS, b""),  # earlier than the last: applied, counted
        PortEvent(chunks[-1].rx_ns, LinkInput.OPENED, REASON_OPENED),  # not allowed when UP
        Datagram(chunks[-1].rx_ns, 30101, "127.0.0.1", ("127.0.0.1", 9), b"x"),
        HostLine(chunks[-1].rx_ns, "result", b"{}"),
    ]
    replay = run(messages)[-1]["replay"]
    assert replay == {
        "datagrams": 1,
        "host_lines": 1,
        "port_events_ignored": 1,
        "implied_opens": 1,
        "time_reversals": 1,
    }


def test_a_damaged_time_years_ahead_is_a_capture_error_not_a_replay_without_end() -> None:
    """A flipped bit in a recorded time put an input 170 years after the one before it (a
    differential fuzzer's capture): replay ran the stats timer once a recorded second across
    the gap, for ever. A gap beyond ``MAX_GAP_NS`` is damage, after every line before it."""
    chunks = frames(3)
    damaged = UartChunk(5_362_833_192_422_215_463, chunks[-1].data)
    host = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=1.0)), "c.mcap")
    lines: list[dict] = []
    with pytest.raises(CaptureError, match=r"c\.mcap: damaged: an input at 5362833192422215463 ns"):
        for line in host.replay([*chunks, damaged]):
            lines.append(json.loads(line))
    assert sum(line["type"] == "result" for line in lines) == 3


def test_a_day_without_input_is_replayed_through() -> None:
    """Up to ``MAX_GAP_NS`` a gap is a quiet recording: its periodic lines all come."""
    chunks = frames(2)
    last = UartChunk(chunks[-1].rx_ns + MAX_GAP_NS, chunks[-1].data)
    host = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=60.0)))
    out = [json.loads(line) for line in host.replay([*chunks, last])]
    assert sum(line["type"] == "stats" for line in out) == MAX_GAP_NS // (60 * 10**9) + 1
    assert out[-1]["replay"]["time_reversals"] == 0


_GAP_NS = 2_000 * MS  # the longest gap, for this test (a day of timers is slow)
_STEPS_NS = (0, 1, MS, 33 * MS, 700 * MS, _GAP_NS, _GAP_NS + 1, -1, -MS)
_PORT_INPUTS = (LinkInput.OPEN_STARTED, LinkInput.OPENED, LinkInput.LOST, LinkInput.STOPPED)


@st.composite
def _inputs(draw: st.DrawFn) -> list[object]:
    """Chunks of frames (whole, split, empty) among port events, datagrams and host lines,
    at times that move on, stand still, go back, or jump to either side of the longest gap."""
    board = BoardModel(period_ms=33)
    t_ns, out = T0, []
    for _ in range(draw(st.integers(1, 40))):
        t_ns += draw(st.sampled_from(_STEPS_NS))
        kind = draw(st.sampled_from(["chunk", "chunk", "chunk", "port", "datagram", "line"]))
        if kind == "chunk":
            frame = board.next_frame()
            cut = draw(st.sampled_from([len(frame), 0, 7]))
            out.append(UartChunk(t_ns, frame[:cut]))
            if cut not in (0, len(frame)):
                out.append(UartChunk(t_ns, frame[cut:]))
        elif kind == "port":
            out.append(PortEvent(t_ns, draw(st.sampled_from(_PORT_INPUTS)), "recorded"))
        elif kind == "datagram":
            out.append(Datagram(t_ns, 30101, "127.0.0.1", ("127.0.0.1", 9), b"x"))
        else:
            out.append(HostLine(t_ns, "result", b"{}"))
    return out


def _lines(produce: Iterator[bytes]) -> tuple[list[bytes], str | None]:
    lines: list[bytes] = []
    try:
        lines.extend(produce)
    except CaptureError as exc:
        return lines, str(exc)
    return lines, None


def _fed(messages: list[object]) -> Iterator[bytes]:
    host = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=1.0)), "c.mcap")
    for message in messages:
        yield from host.feed(message)  # type: ignore[arg-type]
    yield from host.finish()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_inputs())
def test_replay_gives_what_feeding_each_message_gives(messages: list[object]) -> None:
    """``replay`` takes a chunk on an open port through a path of its own; ``feed``, message
    by message, is its twin: the same lines, counters and damage error, for chunks before an
    open, after a loss, back in time, at equal times and at either side of the longest gap."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_replay, "MAX_GAP_NS", _GAP_NS)
        host = OfflineReplay(CaptureInfo(HostSettings(stats_interval_s=1.0)), "c.mcap")
        replayed = _lines(host.replay(messages))  # type: ignore[arg-type]
        fed = _lines(_fed(messages))
    assert replayed == fed
