"""A result whose capture time was mapped while the device clock settled never justifies a
PROCEED, not even once the clock has locked (red team, rt8).

The host stalls 2.5 s; the board resets inside the stall and its new life's first frame shows
the watched target, the later ones another. The host reads the whole backlog at once: the new
epoch's first sample is that frame, 2 s late, which the settling mapping took for 12 ms old.
Before, once the clock locked on the live frames, the link published PROCEED on it with an age
of about 0.2 s; its true age was 2.2 s. The truth here is each frame's own capture time, as
the test wrote it."""

from __future__ import annotations

from gizmo_core import Decision, LinkState
from gizmo_host.stream.events import LinkEvent
from gizmo_host.stream.pipeline import FramePipeline
from gizmo_host.stream.store import parse_selector
from gizmo_host.wire.protocol import VisionResult

MS = 1_000_000
PERIOD_NS = 33_333_333
AGE_MS = 12  # the board's processing: capture = sent - 12 ms
TTL_NS = 250 * MS
WATCHED = parse_selector("type=DETECTOR,id=11")


def _frame(seq: int, timestamp_ms: int, ident: int) -> VisionResult:
    return VisionResult(
        source_id=1, result_type=5, id=ident, sequence=seq, result_sequence=seq,
        timestamp_ms=timestamp_ms, confidence=87, flags=0x05, age_ms=AGE_MS,
        x=-125, y=54, w=410, h=360,
    )  # fmt: skip


def test_a_backlog_after_a_reset_is_no_proceed_on_its_settling_frame():
    pipeline = FramePipeline()
    pipeline.watch(WATCHED)
    t0 = 10**12
    pipeline.link_changed(LinkEvent(LinkState.UP, LinkState.SYNCING, t0, "", "", 1))
    captured: dict[tuple[int, int], int] = {}  # (id, seq) -> true capture time
    verdicts = []

    def read(frames: list[tuple[VisionResult, int]], rx_ns: int) -> None:
        for frame, sent_ns in frames:
            captured[(frame.id, frame.sequence)] = sent_ns - AGE_MS * MS
        pipeline.apply([f for f, _ in frames], rx_ns)
        verdicts.extend((rx_ns, v) for v in pipeline.evaluate(rx_ns, force=True))

    for k in range(90):  # the first life: 3 s of the watched target, read as sent (+3 ms)
        sent = t0 + k * PERIOD_NS
        read([(_frame(k, 60_000 + (sent - t0) // MS, 11), sent)], sent + 3 * MS)
    first_life = [v for _, v in verdicts if v.decision is Decision.PROCEED]
    assert len(first_life) > 40
    stall_ns = t0 + 90 * PERIOD_NS
    boot_ns = stall_ns + 500 * MS  # the new life's clock starts at 0 here
    backlog = [
        (_frame(k, (boot_ns + k * PERIOD_NS - boot_ns) // MS, 11 if k == 0 else 12),
         boot_ns + k * PERIOD_NS)
        for k in range(60)
    ]  # fmt: skip
    resume_ns = stall_ns + 2_500 * MS
    queued = [item for item in backlog if item[1] + 3 * MS <= resume_ns]
    before = len(verdicts)
    read(queued, resume_ns)  # the whole backlog in one read
    for k in range(len(queued), len(queued) + 30):  # then 1 s of live frames
        sent = boot_ns + k * PERIOD_NS
        read([(_frame(k, (sent - boot_ns) // MS, 12), sent)], sent + 3 * MS)
    after = verdicts[before:]
    assert after
    for now_ns, verdict in after:
        if verdict.decision is Decision.PROCEED:
            target = verdict.result
            truth = captured[(target.result.id, target.result.sequence)]
            assert now_ns - truth <= TTL_NS, (now_ns - truth) / MS  # a 2.2 s old target
            assert verdict.valid_until_ns <= truth + TTL_NS
    # The watched target's one new frame is 2 s old: HOLD throughout, saying why.
    assert all(v.decision is Decision.HOLD for _, v in after)
    assert any("clock_not_locked" in {r.value for r in v.reasons} for _, v in after)
