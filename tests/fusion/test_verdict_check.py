"""What issue 31 made cheap must say what the full path says.

- ``WorldModel.verdict(now)``, the publisher's check after every input, builds no snapshot: its
  verdict key, a PROCEED's ``valid_until_ns`` and the next deadline must be the snapshot's,
  through tracks starting, coasting and ending, link outages and a device reset; and a model
  checked that way must stay in step with one that builds snapshots.
- A check after inputs that changed nothing it reads (plain poses, IMU rates) reuses the last
  one's verdict: it must still be the snapshot's through poses that stop (stale) and come
  back, a clock that settles or jumps, a pose jump, a conflict and the pose link going down.
- The placement of a repeated image is the previous one's, until any part of the state it was
  placed with changes: a pose, a gimbal angle, a range reading, an IMU rate. The truth is a
  placer that never saw the first placement.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from fusion import (
    CameraConfig,
    CameraModel,
    LinkStatus,
    PoseLinkStatus,
    PoseSample,
    SourceConflict,
    WorldConfig,
    WorldModel,
)
from fusion.inputs import GimbalSample, ImuSample, LaserRange, SensorMount
from fusion.placement import Placer
from gizmo_core import Decision, LinkState
from gizmo_core.clock import ClockStatus
from tests.support.fusion_inputs import FORWARD_DOWN_45, MS, observation, pose
from tests.support.tracking_sim import (
    CAMERA_CONFIG,
    SCENARIOS,
    TTL_MS,
    Board,
    make_events,
    model,
    tracking_config,
)

# -- the verdict without a snapshot ------------------------------------------------------


def _outages(events: list, seed: int) -> list[tuple[int, LinkStatus]]:
    """A link outage, a device reset and a silence at random times of the run."""
    rng = random.Random(seed)
    first, last = events[0].arrival_ns, events[-1].arrival_ns
    at = sorted(rng.randrange(first, last) for _ in range(3))
    return [
        (at[0], LinkStatus(at[0], LinkState.DOWN)),
        (at[0] + 300 * MS, LinkStatus(at[0] + 300 * MS, LinkState.UP)),
        (at[1], LinkStatus(at[1], LinkState.UP, device_reset=True)),
        (at[2], LinkStatus(at[2], LinkState.SILENT)),
        (at[2] + 150 * MS, LinkStatus(at[2] + 150 * MS, LinkState.UP)),
    ]


def same_verdict(checked, built, t: int):
    """``checked.verdict(t)`` agrees with ``built``'s whole snapshot at ``t`` (its key, a
    PROCEED's valid_until, the next deadline); returns the snapshot."""
    verdict = checked.verdict(t)
    snapshot = built.snapshot(t)
    assert verdict.key == snapshot.verdict_key(), t
    until = snapshot.valid_until_ns if snapshot.proceed else None
    assert verdict.proceed_until_ns == until, t
    assert verdict.next_deadline_ns == built.next_deadline_ns(), t
    return snapshot


@pytest.mark.parametrize("tracking", [True, False], ids=["tracked", "per-frame"])
@pytest.mark.parametrize(
    "scenario",
    [s for s in SCENARIOS if s.name == "static" or "glitch" in s.name or "occlusion" in s.name],
    ids=lambda s: s.name,
)
def test_the_verdict_check_is_the_snapshots_verdict(scenario, tracking):
    events = make_events([scenario.path], scenario, 12.0, 3)
    checked, built = model(tracking), model(tracking)
    board = Board()
    inputs: list[tuple[int, object]] = [
        (e.arrival_ns, e.item if isinstance(e.item, PoseSample) else board.observation(
            e.arrival_ns, e.item)) for e in events
    ]  # fmt: skip
    inputs += _outages(events, 3)
    inputs.sort(key=lambda pair: pair[0])
    for world in (checked, built):
        world.apply(LinkStatus(inputs[0][0] - 10 * MS, LinkState.UP))
    decisions, times = set(), 0
    for now, item in inputs:
        for world in (checked, built):
            world.apply(item)  # type: ignore[arg-type]
        deadline = built.next_deadline_ns()
        for t in (now, now + 1, *(() if deadline is None else (deadline,))):
            snapshot = same_verdict(checked, built, t)
            decisions.add(snapshot.verdict)
            times += 1
    assert decisions == {Decision.PROCEED, Decision.HOLD} and times > 1000
    assert checked.stats() == built.stats()


def _pose_troubles(inputs: list[tuple[int, object]], seed: int) -> list[tuple[int, object]]:
    """``inputs`` with an IMU rate after every pose, and the pose stream's troubles at random
    times: a 400 ms gap (past the pose TTL), 300 ms of a settling clock, an outlier, a
    jumped clock, a 40 m jump, a conflict and the pose link down for 200 ms; and 3.5 s
    without vision (its target forgotten, its tracks ended, the poses going on)."""
    rng = random.Random(seed)
    poses = [t for t, item in inputs if isinstance(item, PoseSample)]
    gap, settling, outlier, jumped, jump, conflict, link = sorted(rng.sample(poses[50:-50], 7))
    blind = rng.choice(poses[50:-500])
    out: list[tuple[int, object]] = []
    for t, item in inputs:
        if blind <= t < blind + 3500 * MS and not isinstance(item, PoseSample):
            continue
        if isinstance(item, PoseSample):
            if gap <= t < gap + 400 * MS:
                continue
            status = item.clock_status
            if settling <= t < settling + 300 * MS:
                status = ClockStatus.CONVERGING
            elif t in (outlier, jumped):
                status = ClockStatus.OUTLIER if t == outlier else ClockStatus.JUMPED
            position = item.position_ned_m
            if t == jump:
                position = (position[0] + 40.0, position[1], position[2])
            changed = dataclasses.replace(item, clock_status=status, position_ned_m=position)
            out.append((t, changed))
            out.append((t, ImuSample(item.host_ns, (0.0, 0.0, 0.01))))
        else:
            out.append((t, item))
    out += [
        (conflict, SourceConflict(conflict, "pose", "a second sender")),
        (link, PoseLinkStatus(link, up=False)),
        (link + 200 * MS, PoseLinkStatus(link + 200 * MS, up=True)),
    ]
    out.sort(key=lambda pair: pair[0])
    return out


@pytest.mark.parametrize("tracking", [True, False], ids=["tracked", "per-frame"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_check_after_poses_alone_is_the_snapshots_verdict(tracking, seed, monkeypatch):
    scenario = next(s for s in SCENARIOS if s.name == "static")
    events = make_events([scenario.path], scenario, 16.0, seed)
    board = Board()
    inputs: list[tuple[int, object]] = [
        (e.arrival_ns, e.item if isinstance(e.item, PoseSample) else board.observation(
            e.arrival_ns, e.item)) for e in events
    ]  # fmt: skip
    inputs = _pose_troubles(inputs, seed)
    config = WorldConfig(pose_required=True, ttl_ms=TTL_MS, forget_after_ms=2000.0)
    tracks = tracking_config() if tracking else None
    checked, built = (WorldModel(CAMERA_CONFIG, config, tracking=tracks) for _ in range(2))
    full_checks = 0
    judge = WorldModel._judge

    def counted(self, now_ns):  # type: ignore[no-untyped-def]
        nonlocal full_checks
        full_checks += self is checked
        return judge(self, now_ns)

    monkeypatch.setattr(WorldModel, "_judge", counted)
    for world in (checked, built):
        world.apply(LinkStatus(inputs[0][0] - 10 * MS, LinkState.UP))
    rng = random.Random(seed)
    decisions, reasons, checks = set(), set(), 0
    for now, item in inputs:
        for world in (checked, built):
            world.apply(item)  # type: ignore[arg-type]
        for t in (now, now + rng.randrange(1, 10 * MS)):
            snapshot = same_verdict(checked, built, t)
            decisions.add(snapshot.verdict)
            reasons.update(snapshot.reasons)
            checks += 1
    assert decisions == {Decision.PROCEED, Decision.HOLD}
    assert "no_data" in {r.value for r in reasons}  # the target forgotten
    assert {"pose_stale", "clock_not_locked", "clock_jump", "pose_jump", "pose_conflict",
            "link_down"} <= {r.value for r in reasons}  # fmt: skip
    assert full_checks < checks / 2  # most checks came after poses alone
    assert checked.stats() == built.stats()


# -- the placement of a repeated image ---------------------------------------------------

NORTH = (1.0, 0.0, 0.0)
GIMBAL_CAMERA = CameraConfig(
    width_px=640, height_px=480, hfov_deg=90.0, mount_position_frd_m=(0.0, 0.0, 0.2),
    on_gimbal=True,
)  # fmt: skip


def _flight(end_ms: int) -> list[PoseSample]:
    """North at 1 m/s, 10 m up, a pose every 10 ms."""
    return [
        pose(t * MS, position=(t / 1000.0, 0.0, -10.0), velocity=NORTH)
        for t in range(0, end_ms + 1, 10)
    ]


def _changes() -> dict[str, tuple[CameraConfig, int, list[object], object]]:
    """Per part of the state: the camera, the capture (ms), the inputs before, the change."""
    # a laser along the camera's axis, 10 m where the ground plane gives 14.1 m
    beam = SensorMount(position_frd_m=(0.1, 0.0, 0.05), rpy_deg=(0.0, -45.0, 0.0))
    return {
        # extrapolated past the newest pose (900 ms), then interpolated: the 910 ms pose is
        # 15 mm off the straight line
        "pose": (FORWARD_DOWN_45, 905, _flight(900),
                 pose(910 * MS, position=(0.925, 0.0, -10.0), velocity=NORTH)),
        "range": (FORWARD_DOWN_45, 895, _flight(1000),
                  LaserRange(895 * MS, 10.0, beam)),
        "gimbal": (GIMBAL_CAMERA, 900, [*_flight(1000), GimbalSample(880 * MS, (0.0, -44.0, 0.0)),
                   GimbalSample(920 * MS, (0.0, -46.0, 0.0))],
                   GimbalSample(900 * MS, (0.0, -45.5, 0.0))),
        # extrapolated by the poses' own turn, then by the IMU's
        "imu": (FORWARD_DOWN_45, 905, _flight(900), ImuSample(900 * MS, (0.0, 0.0, 1.0))),
    }  # fmt: skip


def _give(placer: Placer, item: object) -> None:
    if isinstance(item, PoseSample):
        placer.history.add(item)
    elif isinstance(item, GimbalSample):
        placer.gimbal.add(item)
    elif isinstance(item, LaserRange):
        placer.ranger.add(item)
    else:
        assert isinstance(item, ImuSample)
        placer.add_imu(item)


@pytest.mark.parametrize("part", sorted(_changes()))
def test_a_repeated_image_is_placed_again_once_the_state_changed(part):
    camera, capture_ms, before, change = _changes()[part]
    config = WorldConfig(pose_required=True)
    repeated = Placer(CameraModel(camera), config, rates=True)
    fresh = Placer(CameraModel(camera), config, rates=True)
    for item in before:
        _give(repeated, item)
        _give(fresh, item)
    obs = observation(capture_ms * MS, center=(0, 0))  # on the optical axis
    first = repeated.place(obs, 1, waited=True, required=True)
    counted = repeated.extrapolated
    again = repeated.place(obs, 2, waited=True, required=True)
    assert first is not None and again is not None
    assert again.geometry is first.geometry and again.arrival == 2  # the same image: as before
    assert repeated.extrapolated == 2 * counted  # and counted as before
    assert counted == (part in ("pose", "imu"))
    _give(repeated, change)
    _give(fresh, change)
    after = repeated.place(obs, 3, waited=True, required=True)
    truth = fresh.place(obs, 3, waited=True, required=True)
    assert after is not None and truth is not None
    assert after.geometry != first.geometry  # the change moved the placement...
    assert after == truth  # ...to what a placer that never placed it gives
    assert repeated.extrapolated - 2 * counted == fresh.extrapolated
