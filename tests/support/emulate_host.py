"""The host's own parser and pipeline fed by an ``Emulation`` (no I/O), for the emulator tests."""

from __future__ import annotations

from gizmo_host.rigs.board import BoardModel
from gizmo_host.rigs.board.builtin_scene import BoardScenario
from gizmo_host.rigs.board.detections import LatencyKind, LatencyModel, OutputPolicy
from gizmo_host.rigs.board.emulation import Emulation
from gizmo_host.rigs.board.faults import Fault, FaultTimeline
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.wire.parser import StreamParser

START_NS = 5_000_000_000
TRANSPORT_NS = 3_038_194  # 35 bytes at 115200 8N1


def make_emulation(
    faults: tuple[Fault, ...] = (),
    *,
    seed: int = 1,
    rate_hz: float = 30.0,
    start_sequence: int = 0,
    latency: LatencyModel | None = None,
    start_ns: int = START_NS,
) -> Emulation:
    board = BoardModel(
        live_clock=True,
        clock=_no_clock,
        timestamp_ms=60_000,
        sequence=start_sequence,
    )
    return Emulation(
        board=board,
        policy=OutputPolicy(),
        latency=latency or LatencyModel(LatencyKind.UNIFORM, 10.0, 14.0),
        timeline=FaultTimeline(faults, seed),
        start_ns=start_ns,
        rate_hz=rate_hz,
    )


def _no_clock() -> int:
    raise AssertionError("the emulation read the host clock")


class ParsingHost:
    """What ``gizmo-host run`` does with the bytes, minus the port: parser, then pipeline."""

    def __init__(self) -> None:
        self.parser = StreamParser()
        self.pipeline = FramePipeline()
        self.bytes_in = 0

    def feed(self, chunk: bytes, rx_ns: int) -> None:
        self.bytes_in += len(chunk)
        self.pipeline.apply(self.parser.feed(chunk), rx_ns)

    def counters(self) -> dict[str, int]:
        parser = self.parser.stats
        source = self.pipeline.tracker.stats().get(1)
        return {
            "frames_ok": parser.frames_ok,
            # At the end, what the parser still holds can only be the rest of a damaged frame.
            "bytes_discarded": parser.bytes_discarded + self.parser.buffered,
            "lost": source.lost if source else 0,
            "duplicates": source.duplicates if source else 0,
            "resets": source.resets if source else 0,
            "discontinuities": source.discontinuities if source else 0,
        }


def run_through_host(
    emulation: Emulation, seconds: float, scenario: BoardScenario | None = None
) -> tuple[ParsingHost, list[bytes]]:
    """Every cycle of ``seconds`` into a host; returns it and the chunks written."""
    scenario = scenario or BoardScenario()
    host = ParsingHost()
    written: list[bytes] = []
    for index in range(round(seconds * 1e9 / emulation.period_ns)):
        t_s = index * emulation.period_ns / 1e9
        cycle = emulation.cycle(index, scenario.detections(t_s))
        rx_ns = cycle.send_ns
        for chunk in cycle.chunks:
            rx_ns += TRANSPORT_NS * len(chunk) // 35
            host.feed(chunk, rx_ns)
            written.append(chunk)
    return host, written


def expected(emulation: Emulation) -> dict[str, int]:
    host = emulation.stats()["host"]
    return {key: host[key] for key in ParsingHost().counters()}
