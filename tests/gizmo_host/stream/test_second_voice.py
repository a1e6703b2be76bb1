"""A second voice on the board's line, and numbers off the protocol's scale (red team rt13).

- A second sender with the board's source_id, its device clock copied and its sequence ahead,
  reports the watched target elsewhere right after each genuine frame. A board's own sequence
  never goes back without a reset, nor runs further ahead than it could have sent frames: the
  source is in conflict, and no frame of either voice justifies a PROCEED until 0.5 s after the
  last sign of it. Before: every verdict PROCEEDed, half of them on the spoofed box (rt13);
  with a rule that counted three frames in order, a second voice sending three in a row won
  28 verdicts in 30 (rt15).
- A tracked result with a field off the protocol's scale (a box centre beyond +-1000, a size
  beyond 0..2000, a confidence over 100, an unknown flag bit), or whose ``result_sequence`` is
  not its header's ``sequence`` (v1 says they are equal), locates nothing: HOLD
  ``invalid_result``, counted by field, and it ends its source's earlier results at once.
  Before: PROCEED on each of them, and the world kept the earlier position 143 ms.

The truth is the test's own: which frames are whose, and what their fields are."""

from __future__ import annotations

import pytest

from fusion import WorldModel
from fusion.camera import CameraConfig
from gizmo_core import Decision, HoldReason, LinkState
from gizmo_host.bridge.world_adapters import GizmoAdapter
from gizmo_host.stream.events import LinkEvent
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.stream.store import parse_selector
from gizmo_host.wire.protocol import VisionResult

MS = 1_000_000
PERIOD_NS = 33_333_333
AGE_MS = 12
WATCHED = parse_selector("type=DETECTOR,id=11")
GENUINE_X, SPOOFED_X = 100, -900


def _frame(seq: int, timestamp_ms: int, **fields: int) -> VisionResult:
    values = {
        "source_id": 1, "result_type": 5, "id": 11, "sequence": seq % 65536,
        "result_sequence": seq % 65536, "timestamp_ms": timestamp_ms, "confidence": 87,
        "flags": 0x05, "age_ms": AGE_MS, "x": GENUINE_X, "y": 54, "w": 410, "h": 360,
    }  # fmt: skip
    values.update(fields)
    return VisionResult(**values)


class Rig:
    """The per-frame pipeline and the world model's adapter, read frame by frame."""

    def __init__(self) -> None:
        self.pipeline = FramePipeline()
        self.pipeline.watch(WATCHED)
        self.t0 = 10**12
        up = LinkEvent(LinkState.UP, LinkState.SYNCING, self.t0, "", "", 1)
        self.pipeline.link_changed(up)
        self.adapter = GizmoAdapter()
        camera = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0)
        self.world = WorldModel(camera, selector=WATCHED)
        self.world.apply(self.adapter.link(up))
        self.verdicts: list[tuple[int, object]] = []  # (rx_ns, the link verdict)
        self.worlds: list[object] = []  # the world's verdict key after each read

    def read(self, frames: list[VisionResult], rx_ns: int) -> None:
        for received in self.pipeline.apply(frames, rx_ns):
            for item in self.adapter.result(received):
                self.world.apply(item)
        self.verdicts.extend((rx_ns, v) for v in self.pipeline.evaluate(rx_ns, force=True))
        self.worlds.append(self.world.verdict(rx_ns).key)

    @classmethod
    def proceeding(cls, **fields: int) -> Rig:
        """A rig after 2 s of the genuine board: its clock locked, PROCEED."""
        rig = cls()
        for k in range(60):
            frame, rx = rig.genuine(k, **fields)
            rig.read([frame], rx)
        return rig

    def genuine(self, k: int, **fields: int) -> tuple[VisionResult, int]:
        sent = self.t0 + k * PERIOD_NS
        return _frame(k, 60_000 + (sent - self.t0) // MS, **fields), sent + 3 * MS


def _proceeds(verdicts: list[tuple[int, object]]) -> list[object]:
    return [v for _, v in verdicts if v.decision is Decision.PROCEED]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("ahead", "clock_ms"), [(17, 1), (17, 3), (20_000, 0), (40, 2)])
def test_a_second_voice_with_the_boards_source_id_holds_until_it_stops(
    ahead: int, clock_ms: int
) -> None:
    rig = Rig()
    for k in range(60):  # 2 s of the genuine board: the clock locks, PROCEED
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
    assert _proceeds(rig.verdicts), "the genuine board never reached PROCEED"
    assert rig.worlds[-1][0] is Decision.PROCEED
    start = len(rig.verdicts)
    for k in range(60, 120):  # 2 s: a spoofed frame right after each genuine one
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
        spoof = _frame(k + ahead, frame.timestamp_ms + clock_ms, x=SPOOFED_X)
        rig.read([spoof], rx + 1 * MS)
    during = rig.verdicts[start + 1 :]  # from the first spoofed frame's read on
    assert during and not _proceeds(during)
    # the first sign ends what came before and is not acted on; the second makes the conflict
    assert all(HoldReason.SEQUENCE_CONFLICT in v.reasons for _, v in during[2:])  # type: ignore[attr-defined]
    # one sign alone drops its frame and what it follows stands: the world HOLDs from the
    # second, and says why (it said ``lost``)
    assert all(key[0] is Decision.HOLD for key in rig.worlds[-117:])
    assert all(HoldReason.SEQUENCE_CONFLICT in key[1] for key in rig.worlds[-117:])
    assert not any(HoldReason.LOST in key[1] for key in rig.worlds[-117:])
    stats = rig.pipeline.stats()
    assert stats["store"]["unsettled"] >= 119 and stats["sources"]["1"]["discontinuities"] >= 60
    assert rig.adapter.counts["unsettled"] >= 119
    stopped = len(rig.verdicts)
    for k in range(120, 180):  # the second voice stops: the HOLD ends 0.5 s after its last sign
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
    after = rig.verdicts[stopped:]
    last_sign_ns = after[0][0]  # the board's first frame after it goes back once more
    first = next((rx, v) for rx, v in after if v.decision is Decision.PROCEED)  # type: ignore[attr-defined]
    assert 500 * MS < first[0] - last_sign_ns <= 500 * MS + PERIOD_NS
    assert all(v.result.result.x == GENUINE_X for v in _proceeds(after))  # type: ignore[attr-defined]
    assert rig.worlds[-1][0] is Decision.PROCEED


def test_a_second_voice_whose_clock_runs_ahead_wins_one_frame_at_most() -> None:
    """The residual: 17 ahead with its clock 10 ms ahead, its first frame is a plausible loss
    of 16 frames, acted on until the board's next frame (one period); from there the board's
    frames come late, and nothing PROCEEDs until the second voice stops."""
    rig = Rig.proceeding()
    start = len(rig.verdicts)
    for k in range(60, 120):
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
        rig.read([_frame(k + 17, frame.timestamp_ms + 10, x=SPOOFED_X)], rx + 1 * MS)
    spoofed = [v for v in _proceeds(rig.verdicts[start:]) if v.result.result.x == SPOOFED_X]  # type: ignore[attr-defined]
    assert len(spoofed) <= 1
    assert not _proceeds(rig.verdicts[start + 3 :])


def test_one_sequence_that_goes_back_costs_that_frame() -> None:
    """A board that restarts its counter, not its clock: one sign, that frame not acted on."""
    rig = Rig.proceeding()
    for k in range(60, 120):
        frame, rx = rig.genuine(k)
        rig.read([frame._replace(sequence=k - 60, result_sequence=k - 60)], rx)
    decisions = [v.decision for _, v in rig.verdicts[-60:]]  # type: ignore[attr-defined]
    assert decisions == [Decision.HOLD] + [Decision.PROCEED] * 59


def test_a_second_voice_sending_bursts_in_order_never_wins() -> None:
    """Red team rt15: after each genuine frame four spoofed ones, 100 behind and in order,
    with the board's stamp. Counting three frames in order settled the source on the third
    spoofed frame: PROCEED on it 28 times in 30. Held by time, only the first burst, before
    its second sign, is acted on (one frame period)."""
    rig = Rig.proceeding()
    start = len(rig.verdicts)
    for k in range(60, 120):
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
        for j in range(4):
            spoof = _frame(k - 100 + j, frame.timestamp_ms, x=SPOOFED_X)
            rig.read([spoof], rx + (1 + j) * MS)
    assert not _proceeds(rig.verdicts[start + 6 :])  # from the second burst on
    assert all(key[0] is Decision.HOLD for key in rig.worlds[-(59 * 5 - 1) :])


@pytest.mark.parametrize(
    ("fields", "name"),
    [
        ({"x": 32767}, "x"),
        ({"y": -1001}, "y"),
        ({"w": -500, "h": -500}, "w"),
        ({"h": 2001}, "h"),
        ({"confidence": 255}, "confidence"),
        ({"flags": 0xF1}, "flags"),
        ({"result_sequence": 65535}, "result_sequence"),  # v1: equal to the header's
    ],
)
def test_a_result_off_the_protocols_scale_holds_at_once_and_is_counted(
    fields: dict[str, int], name: str
) -> None:
    rig = Rig.proceeding()
    assert rig.verdicts[-1][1].decision is Decision.PROCEED  # type: ignore[attr-defined]
    assert rig.worlds[-1][0] is Decision.PROCEED
    for k in range(60, 63):
        frame, rx = rig.genuine(k, **fields)
        rig.read([frame], rx)
        verdict = rig.verdicts[-1][1]
        assert verdict.decision is Decision.HOLD  # type: ignore[attr-defined]
        assert HoldReason.INVALID_RESULT in verdict.reasons  # type: ignore[attr-defined]
        # the earlier position no longer stands, and the world says why (it said ``lost``)
        assert rig.worlds[-1][:2] == (Decision.HOLD, (HoldReason.INVALID_RESULT,))
    assert rig.pipeline.stats()["store"]["invalid"] == {name: 3}
    for k in range(63, 66):  # good again: PROCEED at once
        frame, rx = rig.genuine(k)
        rig.read([frame], rx)
    assert rig.verdicts[-1][1].decision is Decision.PROCEED  # type: ignore[attr-defined]


def test_the_protocols_scale_is_inclusive_and_a_lost_frame_is_no_invalid_result() -> None:
    rig = Rig()
    for k in range(60):
        frame, rx = rig.genuine(k, x=1000 if k % 2 else -1000, w=2000, h=0, confidence=100)
        rig.read([frame], rx)
    assert rig.verdicts[-1][1].decision is Decision.PROCEED  # type: ignore[attr-defined]
    frame, rx = rig.genuine(60, flags=0x06, x=32767)  # "not detected": its box means nothing
    rig.read([frame], rx)
    assert rig.verdicts[-1][1].reasons == (HoldReason.LOST,)  # type: ignore[attr-defined]
    assert rig.pipeline.stats()["store"]["invalid"] == {}


@pytest.mark.parametrize(
    ("selector", "fields", "name"),
    [
        ("type=DETECTOR", {"id": 99}, "id"),
        ("type=COLOR_BLOB", {"result_type": 1, "id": 9}, "id"),
        ("type=LINE", {"result_type": 2, "id": 0, "x": 32767, "y": 500}, "x"),
        ("type=LINE", {"result_type": 2, "id": 0, "x": 10, "y": 500, "w": -32768}, "w"),
        ("type=6", {"result_type": 6, "id": 0}, "result_type"),
    ],
)
def test_a_selector_naming_a_type_never_proceeds_on_its_undefined_or_off_scale_results(
    selector: str, fields: dict[str, int], name: str
) -> None:
    """Red team rt15: a selector that names a type picks its undefined ids and its results
    without a box too; those PROCEEDed with x = 32767 and w = -32768."""
    pipeline = FramePipeline()
    watched = parse_selector(selector)
    pipeline.watch(watched)
    t0 = 10**12
    pipeline.link_changed(LinkEvent(LinkState.UP, LinkState.SYNCING, t0, "", "", 1))
    verdicts = []
    for k in range(60):
        sent = t0 + k * PERIOD_NS
        frame = _frame(k, 60_000 + (sent - t0) // MS, **fields)
        pipeline.apply([frame], sent + 3 * MS)
        verdicts += [
            v for v in pipeline.evaluate(sent + 3 * MS, force=True) if v.selector == watched
        ]
    assert verdicts and not _proceeds([(0, v) for v in verdicts])
    assert HoldReason.INVALID_RESULT in verdicts[-1].reasons
    assert pipeline.stats()["store"]["invalid"] == {name: 60}
