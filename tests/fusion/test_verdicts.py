"""Every HOLD reason, triggered and then cleared, on an injected clock."""

import pytest

from fusion import LinkStatus, WorldConfig, WorldModel
from gizmo_core import Decision, HoldReason, LinkState, Selector
from gizmo_core.clock import ClockStatus
from tests.support.fusion_inputs import (
    FORWARD_DOWN_45,
    MS,
    not_detected,
    observation,
    pose,
    up,
    world,
)

H = HoldReason


def poses(w, start_ms, end_ms, step_ms=10, **kw):
    for t in range(start_ms, end_ms + 1, step_ms):
        w.apply(pose(t * MS, **kw))


def ready(**config):
    """A world with the link up and 100 Hz poses from 0 to 1000 ms."""
    w = world(**config)
    w.apply(up(0))
    poses(w, 0, 1000)
    return w


def verdict(w, now_ms):
    s = w.snapshot(now_ms * MS)
    return s.verdict, set(s.reasons)


def test_no_data_then_a_target_proceeds():
    w = ready()
    assert verdict(w, 100) == (Decision.HOLD, {H.NO_DATA})
    w.apply(observation(500 * MS))
    s = w.snapshot(530 * MS)
    assert (s.verdict, s.reasons, s.selected) == (Decision.PROCEED, (), "1:1:1")
    t = s.targets[0]
    assert t.bearing_ned is not None and t.position_ned_m is not None


def test_a_fresh_world_holds_for_link_down_before_any_link_status():
    w = world()
    assert verdict(w, 0) == (Decision.HOLD, {H.NO_DATA, H.LINK_DOWN})


def test_lost_flag_then_tracked_again():
    w = ready()
    w.apply(observation(500 * MS, lost=True))
    assert verdict(w, 530) == (Decision.HOLD, {H.LOST})
    t = w.snapshot(530 * MS).targets[0]
    assert t.key == "1:1:1" and t.capture_ns == 500 * MS and t.reasons == (H.LOST,)
    assert t.bearing_ned is None and t.position_ned_m is None and t.bearing_camera is None
    w.apply(observation(533 * MS))
    assert verdict(w, 560) == (Decision.PROCEED, set())


def test_not_detected_frame_of_another_key_ends_the_target_then_a_detection_clears_it():
    w = ready()
    w.apply(observation(500 * MS))
    assert verdict(w, 525)[0] is Decision.PROCEED
    w.apply(not_detected(533 * MS))
    assert verdict(w, 555) == (Decision.HOLD, {H.LOST})
    w.apply(observation(566 * MS))
    assert verdict(w, 590) == (Decision.PROCEED, set())


def test_not_detected_from_another_source_does_not_end_the_target():
    w = ready()
    w.apply(observation(500 * MS, source_id=1))
    w.apply(not_detected(533 * MS, source_id=2))
    assert verdict(w, 555) == (Decision.PROCEED, set())


def test_stale_exactly_after_the_ttl_of_capture():
    w = ready(ttl_ms=250.0)
    w.apply(observation(500 * MS))
    assert w.snapshot(750 * MS).verdict is Decision.PROCEED
    s = w.snapshot(750 * MS + 1)
    assert (s.verdict, s.reasons) == (Decision.HOLD, (H.STALE,))
    assert w.next_deadline_ns() == 750 * MS + 1 or w.next_deadline_ns() > 750 * MS
    poses(w, 1010, 1100)
    w.apply(observation(1050 * MS))
    assert verdict(w, 1080) == (Decision.PROCEED, set())


def test_ttl_by_result_type():
    w = ready(ttl_ms=250.0, ttl_ms_by_type={1: 50.0})
    w.apply(observation(500 * MS))
    assert verdict(w, 551) == (Decision.HOLD, {H.STALE})


def test_next_deadline_is_the_ttl_expiry():
    w = ready(ttl_ms=250.0, pose_ttl_ms=1000.0)
    w.apply(observation(900 * MS))
    assert w.next_deadline_ns() == 1150 * MS + 1


@pytest.mark.parametrize("state", [LinkState.DOWN, LinkState.CONNECTING, LinkState.SYNCING])
def test_link_down_then_up_and_nothing_from_before_the_down_proceeds(state):
    w = ready(ttl_ms=1000.0)
    w.apply(observation(500 * MS))
    w.apply(LinkStatus(530 * MS, state))
    assert verdict(w, 540) == (Decision.HOLD, {H.LINK_DOWN})
    w.apply(LinkStatus(560 * MS, LinkState.UP))
    # Back up, but the only result came over the link before it went down.
    assert verdict(w, 570) == (Decision.HOLD, {H.LINK_DOWN})
    w.apply(observation(580 * MS))
    assert verdict(w, 600) == (Decision.PROCEED, set())


def test_link_silent_then_up_needs_a_result_read_after_the_silence():
    """Found by an attack through gizmo-host run: the result from before a silence PROCEEDed
    again once the link was back UP (the stream-level verdict held). Like a DOWN, a silence
    bars every result read before it, named as a silence (red team rt40: ``link_down``, for a
    link that never went down)."""
    w = ready(ttl_ms=1000.0)
    w.apply(observation(500 * MS))
    w.apply(LinkStatus(520 * MS, LinkState.SILENT))
    assert verdict(w, 530) == (Decision.HOLD, {H.LINK_SILENT})
    w.apply(LinkStatus(540 * MS, LinkState.UP))
    assert verdict(w, 550) == (Decision.HOLD, {H.LINK_SILENT})
    w.apply(observation(560 * MS, rx_ns=580 * MS))
    assert verdict(w, 590) == (Decision.PROCEED, set())


def test_a_result_from_before_a_silence_and_a_hang_up_names_both():
    w = ready(ttl_ms=1000.0)
    w.apply(observation(500 * MS))
    w.apply(LinkStatus(520 * MS, LinkState.SILENT))
    w.apply(LinkStatus(530 * MS, LinkState.DOWN))
    w.apply(LinkStatus(560 * MS, LinkState.UP))
    assert verdict(w, 570) == (Decision.HOLD, {H.LINK_SILENT, H.LINK_DOWN})
    w.apply(observation(580 * MS))
    assert verdict(w, 590) == (Decision.PROCEED, set())


def test_clock_not_locked_then_locked():
    w = ready()
    w.apply(observation(500 * MS, clock_locked=False))
    assert verdict(w, 530) == (Decision.HOLD, {H.CLOCK_NOT_LOCKED})
    w.apply(observation(533 * MS))
    assert verdict(w, 560) == (Decision.PROCEED, set())


def test_clock_jump_of_the_pose_stream_then_locked_again():
    w = ready()
    w.apply(pose(1010 * MS, clock_status=ClockStatus.JUMPED, epoch=1))
    w.apply(pose(1020 * MS, clock_status=ClockStatus.JUMPED, epoch=1))
    w.apply(observation(1015 * MS))
    assert verdict(w, 1030) == (Decision.HOLD, {H.CLOCK_JUMP})
    w.apply(pose(1030 * MS, epoch=1))
    assert verdict(w, 1035) == (Decision.PROCEED, set())


def test_device_reset_is_held_and_nothing_from_before_it_proceeds():
    w = ready(reset_hold_ms=100.0, ttl_ms=1000.0)
    w.apply(observation(500 * MS))
    w.apply(LinkStatus(520 * MS, LinkState.UP, device_reset=True))
    assert verdict(w, 530) == (Decision.HOLD, {H.DEVICE_RESET})
    # The hold ran out, but the result predates the reset.
    assert verdict(w, 621) == (Decision.HOLD, {H.DEVICE_RESET})
    w.apply(observation(630 * MS))
    assert verdict(w, 650) == (Decision.PROCEED, set())


def test_a_new_device_clock_epoch_is_a_reset():
    w = ready(reset_hold_ms=100.0, ttl_ms=1000.0)
    w.apply(observation(500 * MS, epoch=0, rx_ns=520 * MS))
    w.apply(observation(540 * MS, epoch=1, ident=2, rx_ns=560 * MS))
    s = w.snapshot(570 * MS)
    assert set(s.reasons) == {H.DEVICE_RESET}
    assert s.target("1:1:1").reasons == (H.DEVICE_RESET,)
    # After the hold, the new life's result proceeds and the old one never does.
    s = w.snapshot(700 * MS)
    assert s.target("1:1:2").verdict is Decision.PROCEED
    assert s.target("1:1:1").reasons == (H.DEVICE_RESET,)
    assert s.selected == "1:1:2" and s.verdict is Decision.PROCEED


def test_a_new_epoch_after_a_reconnection_is_not_a_reset_and_old_data_stays_barred():
    """The host starts a new device clock epoch on every reconnection: the DOWN bars what came
    before, and no reset hold follows unless the board says it restarted."""
    w = ready(reset_hold_ms=2000.0, ttl_ms=1000.0)
    w.apply(observation(500 * MS, epoch=0, rx_ns=520 * MS))
    w.apply(LinkStatus(600 * MS, LinkState.DOWN))
    w.apply(LinkStatus(700 * MS, LinkState.UP))
    assert verdict(w, 710) == (Decision.HOLD, {H.LINK_DOWN})  # the old result: barred
    w.apply(observation(720 * MS, epoch=1, ident=2, rx_ns=740 * MS))
    s = w.snapshot(750 * MS)
    assert s.verdict is Decision.PROCEED and s.selected == "1:1:2"
    assert w.stats()["device_resets"] == 0
    # The same epoch change with no outage in between is a reset.
    w.apply(observation(800 * MS, epoch=2, ident=3, rx_ns=820 * MS))
    assert verdict(w, 830) == (Decision.HOLD, {H.DEVICE_RESET})


def test_no_pose_when_a_pose_source_is_configured_then_poses_arrive():
    w = world(pose_required=True)
    w.apply(up(0))
    w.apply(observation(500 * MS))
    assert verdict(w, 530) == (Decision.HOLD, {H.NO_POSE})
    t = w.snapshot(530 * MS).targets[0]
    assert t.bearing_camera is None and t.reasons == (H.NO_POSE,)
    poses(w, 500, 600)
    assert verdict(w, 600) == (Decision.HOLD, {H.NO_POSE})  # never placed with a pose
    w.apply(observation(566 * MS))
    assert verdict(w, 600) == (Decision.PROCEED, set())


def test_without_a_pose_source_the_world_publishes_camera_bearings_only():
    w = world()
    w.apply(up(0))
    w.apply(observation(500 * MS, center=(0, 0)))
    s = w.snapshot(520 * MS)
    assert s.verdict is Decision.PROCEED and s.vehicle is None
    t = s.targets[0]
    assert t.bearing_camera == pytest.approx((1.0, 0.0, 0.0))
    assert t.bearing_ned is None and t.azimuth_deg is None and t.position_ned_m is None
    assert "pose" not in s.sources


def test_a_target_placed_before_the_first_pose_does_not_proceed_once_poses_arrive():
    w = world()
    w.apply(up(0))
    w.apply(observation(500 * MS))
    assert verdict(w, 510) == (Decision.PROCEED, set())  # camera bearings only
    poses(w, 450, 550)
    assert verdict(w, 551) == (Decision.HOLD, {H.NO_POSE})
    w.apply(observation(540 * MS))
    assert verdict(w, 552) == (Decision.PROCEED, set())


def test_pose_stale_when_the_newest_pose_is_too_old_then_fresh():
    w = ready(pose_ttl_ms=100.0)
    w.apply(observation(990 * MS))
    assert verdict(w, 1100) == (Decision.PROCEED, set())
    assert verdict(w, 1101) == (Decision.HOLD, {H.POSE_STALE})
    poses(w, 1010, 1200)
    w.apply(observation(1150 * MS))
    assert verdict(w, 1200) == (Decision.PROCEED, set())


def test_pose_gap_inside_the_history_then_a_later_capture_clears_it():
    w = world(max_pose_gap_ms=50.0, ttl_ms=1000.0)
    w.apply(up(0))
    poses(w, 0, 500)
    poses(w, 700, 1000)  # 200 ms without poses
    w.apply(observation(600 * MS, rx_ns=1000 * MS))
    assert verdict(w, 1001) == (Decision.HOLD, {H.POSE_GAP})
    w.apply(observation(990 * MS, rx_ns=1000 * MS))
    assert verdict(w, 1001) == (Decision.PROCEED, set())


def test_selector_picks_its_target_and_holds_no_data_without_one():
    w = WorldModel(FORWARD_DOWN_45, WorldConfig(), selector=Selector(result_type=5, id=11))
    w.apply(up(0))
    poses(w, 0, 1000)
    w.apply(observation(500 * MS))
    s = w.snapshot(520 * MS)
    assert (s.verdict, s.reasons, s.selected) == (Decision.HOLD, (H.NO_DATA,), None)
    assert s.targets[0].verdict is Decision.PROCEED  # listed, just not selected
    w.apply(observation(510 * MS, result_type=5, ident=11, label="pedestrian"))
    s = w.snapshot(540 * MS)
    assert (s.verdict, s.selected) == (Decision.PROCEED, "1:5:11")


def test_the_selected_target_prefers_one_that_may_proceed():
    w = ready()
    w.apply(observation(500 * MS, ident=1))
    w.apply(observation(510 * MS, source_id=2, ident=2, lost=True))
    s = w.snapshot(530 * MS)
    assert (s.selected, s.verdict) == ("1:1:1", Decision.PROCEED)
    assert s.target("2:1:2").verdict is Decision.HOLD


def test_a_lost_frame_of_one_key_ends_every_earlier_target_of_its_source():
    w = ready()
    w.apply(observation(500 * MS, ident=1))
    w.apply(observation(510 * MS, ident=2, lost=True))
    s = w.snapshot(530 * MS)
    assert s.verdict is Decision.HOLD
    assert [t.reasons for t in s.targets] == [(H.LOST,), (H.LOST,)]


def test_every_reason_at_once_is_listed_in_order():
    w = world(pose_required=True, reset_hold_ms=1000.0)
    w.apply(LinkStatus(0, LinkState.SILENT, device_reset=True))
    w.apply(observation(10 * MS, lost=True, clock_locked=False))
    s = w.snapshot(400 * MS)
    assert s.targets[0].reasons == (
        H.LOST,
        H.STALE,
        H.LINK_SILENT,
        H.CLOCK_NOT_LOCKED,
        H.DEVICE_RESET,
        H.NO_POSE,
    )
