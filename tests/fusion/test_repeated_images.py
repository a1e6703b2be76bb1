"""What the per-result path keeps between results (a board repeating one image at 921600
sends it in frame after frame): each kept value is what a state that never kept it gives."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import (
    CameraConfig,
    CameraModel,
    GimbalSample,
    ImuSample,
    LaserRange,
    PoseSample,
    SensorMount,
    WorldConfig,
)
from fusion.placement import Placer
from fusion.timeline import PoseHistory, Where
from fusion.tracking import Tracker, TrackingConfig, motion
from fusion.tracking.history import Detection, Frame, History, repeated
from fusion.tracking.tracker import _MAX_FRAMES as MAX_FRAMES
from gizmo_core import HoldReason
from tests.support.fusion_inputs import FORWARD_DOWN_45, MS, observation, pose, yaw_quat
from tests.support.tracking_inputs import CAMERA, placed

_STEP = st.tuples(
    st.sampled_from(["pose", "ask", "ask_imu"]),
    st.integers(0, 300),  # ms
    st.floats(-90.0, 90.0),  # the pose's yaw, degrees
)


def _history() -> PoseHistory:
    return PoseHistory(max_samples=4, max_gap_ms=60.0)  # small: the oldest pose drops


@given(st.lists(_STEP, max_size=40))
def test_the_motion_kept_for_a_bracket_is_what_a_history_never_asked_gives(steps):
    """Asked again and again between poses (kept per bracket), then after poses that split
    the bracket, replace its ends or push the oldest out: always the rates of a history that
    took the same poses and was never asked."""
    asked = _history()
    poses: list[PoseSample] = []
    for kind, t_ms, yaw in steps:
        if kind == "pose":
            p = pose(t_ms * MS, position=(t_ms / 100, -t_ms / 300, -10.0), q=yaw_quat(yaw))
            asked.add(p)
            poses.append(p)
            continue
        fresh = _history()
        for p in poses:
            fresh.add(p)
        rate = (0.1, -0.2, 0.3) if kind == "ask_imu" else None
        for t in (t_ms * MS, t_ms * MS + 1):  # twice in a bracket: the second is kept
            assert asked.motion(t, rate) == fresh.motion(t, rate)


@given(
    st.lists(st.integers(0, 300), max_size=8),
    st.lists(st.integers(-10, 310), min_size=1, max_size=12),
)
def test_locate_is_where_with_the_interpolated_pose(pose_ms, ask_ms):
    """One search for a placement: where the time falls, and when it is inside, the pose
    ``interpolate`` gives (on a pose, between two, across a gap, outside, empty)."""
    h = _history()
    for t in pose_ms:
        h.add(pose(t * MS, position=(t / 100, 0.0, -10.0), q=yaw_quat(t / 3)))
    for t in ask_ms:
        where, at = h.locate(t * MS)
        assert where is h.where(t * MS)
        assert at == (h.interpolate(t * MS) if where is Where.INSIDE else None)
        assert (at is None) == (where is not Where.INSIDE)


GIMBAL = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0, on_gimbal=True)


def test_a_repeated_box_after_a_zoom_is_placed_with_the_new_focal_lengths():
    """The box's bearing and size are kept for the next capture time, by the box and the
    focal lengths: a zoom between two reports of one box changes both."""
    camera = CameraModel(GIMBAL)
    config = WorldConfig(pose_required=True)
    kept, fresh = Placer(camera, config, rates=True), Placer(camera, config, rates=True)
    for placer in (kept, fresh):
        for t in range(0, 1001, 10):
            placer.history.add(pose(t * MS, position=(t / 1000, 0.0, -10.0)))
        placer.gimbal.add(GimbalSample(880 * MS, (0.0, -45.0, 0.0), fx_px=400.0, fy_px=400.0))
    box = {"center": (600, -400), "size": (300, 200)}
    first = kept.place(observation(899 * MS, **box), 1, waited=True, required=True)
    zoom = GimbalSample(900 * MS, (0.0, -45.0, 0.0), fx_px=800.0, fy_px=800.0)
    kept.gimbal.add(zoom)
    fresh.gimbal.add(zoom)
    after = kept.place(observation(900 * MS, **box), 2, waited=True, required=True)
    truth = fresh.place(observation(900 * MS, **box), 2, waited=True, required=True)
    assert first is not None and after is not None and truth is not None
    assert first.geometry is not None and after.geometry is not None
    assert after.geometry.bearing_camera != first.geometry.bearing_camera  # the zoom moved it
    assert after.geometry.angular_size_deg != first.geometry.angular_size_deg
    assert after == truth


def test_a_repeat_is_a_duplicate_whatever_came_since_and_a_new_image_is_not():
    """The same box within 2 ms of a held frame is the same image, even after a newer frame;
    3 ms on, it is a new image of a target that stood still."""
    tracker = Tracker(CAMERA, TrackingConfig())
    here, there = (1.0, 2.0, 0.0), (1.1, 2.0, 0.0)
    tracker.add(placed(1000 * MS, 1, here))
    tracker.add(placed(1033 * MS, 2, there))
    tracker.add(placed(1001 * MS, 3, here))  # the first image again, after the second
    assert tracker.counts["duplicates"] == 1
    tracker.add(placed(1035 * MS, 4, there))
    assert tracker.counts["duplicates"] == 2
    tracker.add(placed(1036 * MS, 5, there))
    assert tracker.counts["duplicates"] == 2
    assert [track.time_ns for track in tracker] == [1036 * MS]  # a hit of the one track
    assert tracker.counts["late_fused"] == 0


def test_a_prediction_carries_both_covariances_as_one_array():
    """The update's Joseph step runs on ``pa``: it must be ``p`` then ``a``."""
    imm = motion.Imm(motion.MotionParams(cv_true_accel_m_s2=0.01))
    state = imm.initial_state(np.array([1.0, 2.0, 0.0]), np.eye(3) * 0.01)
    state = imm.update(
        imm.predict(state, 0.033), [1.1, 2.0, 0.0], (np.eye(3) * 0.01).tolist(), np.eye(3) * 0.01
    )
    prediction = imm.predict(state, 0.033)
    assert prediction.pa.shape == (4, 7, 7)
    assert np.array_equal(prediction.pa[:2], prediction.p)
    assert np.array_equal(prediction.pa[2:], prediction.a)
    assert not np.array_equal(prediction.p, prediction.a)  # the two differ: the order matters


# -- the placement kept for the next report of an image ---------------------------------------

_BOX = (10, -10, 100, 80)  # near the boresight (the laser's too)
_PLACER_STEP = st.one_of(
    # State near the capture (ms from it), after which the measurement is placed again:
    st.tuples(st.just("pose"), st.integers(-12, 12), st.floats(-5.0, 5.0)),
    st.tuples(st.just("gimbal"), st.integers(-12, 12), st.sampled_from([None, 400.0, 800.0])),
    st.tuples(st.just("range"), st.integers(-12, 12), st.sampled_from([None, 5.0, 9.0])),
    st.tuples(st.just("imu"), st.integers(-12, 12), st.floats(-1.0, 1.0)),
    # or the measurement again, the same or with one thing changed: the capture (to
    # another ms, or by 1 ns), the box, waited, a pose source, why no pose.
    st.tuples(
        st.just("place"),
        st.sampled_from(["same", "ms", "ns", "box", "waited", "required", "empty"]),
        st.integers(0, 80),
    ),
)


def _placer(on_gimbal: bool, posed: bool) -> Placer:
    camera = CameraModel(GIMBAL if on_gimbal else FORWARD_DOWN_45)
    world = WorldConfig(pose_required=True, max_extrapolation_ms=15.0)
    placer = Placer(camera, world, rates=True)
    for t_ms in range(0, 51, 10) if posed else ():  # to 50 ms; the steps add more
        _state_step(placer, ("pose", t_ms, 0.0))
    _state_step(placer, ("gimbal", 0, None))
    return placer


def _state_step(placer: Placer, step: tuple[Any, ...]) -> None:
    kind, t_ms, value = step
    t = t_ms * MS
    if kind == "pose":
        placer.history.add(pose(t, position=(t_ms / 1e4, 0.0, -10.0), q=yaw_quat(value)))
    elif kind == "gimbal":
        placer.gimbal.add(GimbalSample(t, (0.0, -45.0, 0.0), fx_px=value, fy_px=value))
    elif kind == "range":  # a laser along the camera's boresight
        placer.ranger.add(LaserRange(t, value, SensorMount(rpy_deg=(0.0, -45.0, 0.0))))
    else:
        placer.add_imu(ImuSample(t, (0.0, 0.0, value)))


@settings(max_examples=300)
@given(st.booleans(), st.booleans(), st.lists(_PLACER_STEP, min_size=4, max_size=30))
def test_a_placement_kept_for_a_repeat_is_what_a_placer_that_never_kept_gives(
    on_gimbal, posed, steps
):
    """The same capture and box placed again and again, after poses, gimbal angles (a zoom
    and back), ranges and IMU rates near its capture, waited or not, with and without a
    pose source, with either reason for no pose: each placement, and each count of
    extrapolation, is what a placer that took the same state and never placed before gives."""
    kept = _placer(on_gimbal, posed)
    state: list[tuple[Any, ...]] = []
    capture, box, waited, required, empty = 55 * MS, list(_BOX), True, True, None
    for arrival, (kind, change, value) in enumerate(steps):
        if kind != "place":
            step = (kind, max(0, capture // MS + change), value)
            _state_step(kept, step)
            state.append(step)
        elif change == "ms":
            capture = value * MS
        elif change == "ns":
            capture += 1
        elif change == "box":  # one of its fields one off, or back
            i = value % 4
            box[i] = _BOX[i] + 1 - (box[i] - _BOX[i])
        elif change == "waited":
            waited = not waited
        elif change == "required":
            required = not required
        elif change == "empty":
            empty = None if empty else HoldReason.CLOCK_NOT_LOCKED
        obs = observation(capture, center=(box[0], box[1]), size=(box[2], box[3]))
        fresh = _placer(on_gimbal, posed)
        for earlier in state:
            _state_step(fresh, earlier)
        counts = kept.extrapolated, kept.rejected_extrapolation
        got = kept.place(obs, arrival, waited, required, empty)
        truth = fresh.place(obs, arrival, waited, required, empty)
        assert got == truth
        assert (kept.extrapolated - counts[0], kept.rejected_extrapolation - counts[1]) == (
            fresh.extrapolated,
            fresh.rejected_extrapolation,
        )


@given(
    st.lists(st.tuples(st.integers(0, 6), st.lists(st.integers(0, 1), max_size=2)), max_size=4),
    st.integers(0, 8),
    st.integers(0, 1),
)
def test_a_repeat_is_the_box_of_a_frame_within_2_ms_whichever_frame(frames, t_ms, box):
    """``repeated`` looks at the newest frame first: its answer is still "a frame within
    2 ms either way holds the box" (that frame's time), the newest or any other, to the
    nanosecond."""
    history = History(1)
    boxes = ((0, 0, 10, 10), (0, 0, 10, 11))
    for capture_ms in sorted({t for t, _ in frames}):
        held = sorted({b for t, bs in frames if t == capture_ms for b in bs})
        detections = tuple(Detection(None, None, None, 0.0, [], [], boxes[b]) for b in held)
        history.frames.append(Frame(capture_ms * MS, detections))  # type: ignore[arg-type]
        history.times.append(capture_ms * MS)
    cx, cy, w, h = boxes[box]
    for t in (t_ms * MS - 1, t_ms * MS, t_ms * MS + 1):
        obs = observation(t, center=(cx, cy), size=(w, h))
        truth = any(
            abs(f.capture_ns - t) <= 2 * MS and any(d.box == boxes[box] for d in f.detections)
            for f in history.frames
        )
        held = repeated(history, t, obs)
        assert (held is not None) is truth
        if held is not None:  # the time of a frame that holds the box, within 2 ms
            frame = history.frames[history.times.index(held)]
            assert abs(held - t) <= 2 * MS and any(d.box == boxes[box] for d in frame.detections)


_POINTS = ((1.0, 2.0, 0.0), (1.1, 2.0, 0.0))  # two boxes: a still target, and it moved
# A measurement of key 0 or 1, with or without a position: time moves on by 0-3 ms, and its
# capture is up to 5 ms before that, a nanosecond either side of the millisecond.
_ADD = st.tuples(
    st.just("add"), st.integers(0, 3), st.integers(-5, 0), st.sampled_from([-1, 0, 0, 1]),
    st.sampled_from([0, 0, 1]), st.sampled_from([0, 0, 1]), st.sampled_from([True, True, False]),
)  # fmt: skip
_TRACKER_STEP = st.one_of(
    _ADD,
    _ADD,
    _ADD,
    st.tuples(st.just("nothing"), st.integers(-5, 0), st.sampled_from([-1, 0, 1])),
    st.tuples(st.just("tracks"), st.integers(0, 12)),  # ms on: a listing forgets old keys
    st.tuples(st.just("clear")),
)


@settings(max_examples=500)
@given(st.lists(_TRACKER_STEP, min_size=20, max_size=60))
def test_the_repeat_kept_by_the_tracker_is_what_one_that_never_kept_finds(steps):
    """The tracker keeps the last repeat it found (its key, box and the captures that repeat
    it too): after new frames, late frames at the window's edge and at a forgotten frame,
    frames that saw nothing, keys forgotten and a clear, to the nanosecond of the 2 ms either
    side, it counts and tracks as a tracker that looks again every time."""
    config = TrackingConfig(oosm_window_ms=4.0, delete_after_ms=6.0)
    kept, fresh = Tracker(CAMERA, config), Tracker(CAMERA, config)
    now = 1_000 * MS
    for arrival, step in enumerate(steps):
        if step[0] == "add":
            now += step[1] * MS
        for tracker in (kept, fresh):
            if step[0] == "add":
                _, _, back_ms, edge, point, ident, located = step
                capture = now + back_ms * MS + edge
                placement = placed(capture, arrival, _POINTS[point], key=(1, 5, ident))
                if not located:  # no pose: a frame where every track misses
                    placement = placement._replace(geometry=None)
                if tracker is fresh:
                    tracker._repeat = None  # the twin never keeps one
                tracker.add(placement)
            elif step[0] == "nothing":
                tracker.saw_nothing(1, now + step[1] * MS + step[2])
            elif step[0] == "tracks":
                tracker.tracks(now + step[1] * MS)
            else:
                tracker.clear()
        assert kept.counts == fresh.counts
        assert [(t.track_id, t.time_ns, t.window, t.placement) for t in kept] == [
            (t.track_id, t.time_ns, t.window, t.placement) for t in fresh
        ]


def test_a_repeat_kept_by_the_tracker_ends_2_ms_out_at_the_window_and_at_a_new_frame():
    """The repeat the tracker keeps ends where looking again ends it: 2 ms and a nanosecond
    before the frame it repeats, a nanosecond before the window, and once a new frame has
    moved the window past that frame."""
    still, moved = _POINTS
    tracker = Tracker(CAMERA, TrackingConfig(oosm_window_ms=4.0))
    tracker.add(placed(1_000 * MS, 1, still))
    tracker.add(placed(1_001 * MS, 2, still))  # a repeat of the frame at 1 000 ms, kept
    tracker.add(placed(998 * MS - 1, 3, still))  # 2 ms and 1 ns before it: a (late) frame
    assert (tracker.counts["duplicates"], tracker.counts["late_fused"]) == (1, 1)

    tracker = Tracker(CAMERA, TrackingConfig(oosm_window_ms=4.0))
    tracker.add(placed(1_000 * MS, 1, still))
    tracker.add(placed(1_004 * MS, 2, moved))  # the window now starts at 1 000 ms
    tracker.add(placed(1_001 * MS, 3, still))  # a repeat of the frame at 1 000 ms, kept
    tracker.add(placed(1_000 * MS - 1, 4, still))  # within 2 ms of it, before the window
    assert (tracker.counts["duplicates"], tracker.counts["late_dropped"]) == (1, 1)
    tracker.add(placed(1_007 * MS, 5, moved))  # a new frame: the window starts at 1 003 ms
    tracker.add(placed(1_001 * MS + MS // 2, 6, still))  # what was a repeat is late now
    assert (tracker.counts["duplicates"], tracker.counts["late_dropped"]) == (1, 2)


def test_a_repeat_kept_by_the_tracker_ends_at_a_frame_forgotten_for_the_frames_bound():
    """Past the bound on a key's frames, frames within the window are forgotten too: a repeat
    at or before the newest of them is late, though within 2 ms of the frame it repeats."""
    still = _POINTS[0]
    tracker = Tracker(CAMERA, TrackingConfig(oosm_window_ms=4.0))
    t0 = 1_000 * MS
    tracker.add(placed(t0, 1, still))
    for k in range(1, MAX_FRAMES + 1):  # frames of nothing, each a nanosecond on
        tracker.saw_nothing(1, t0 + k)
    tracker.add(placed(t0 + 5_000, 2, still))  # a new image: the frame at t0 + 1 is forgotten
    tracker.add(placed(t0 + 5_001, 3, still))  # a repeat of it, kept
    tracker.add(placed(t0 + 1, 4, still))  # at the forgotten frame: late
    assert (tracker.counts["duplicates"], tracker.counts["late_dropped"]) == (1, 1)
