"""``PoseLinkStatus``: the pose source's own link (the autopilot's MAVLink) down holds the world
``link_down`` while a pose is required; up again, only the poses decide."""

from __future__ import annotations

from fusion import CameraConfig, LinkStatus, PoseLinkStatus, PoseSample, WorldConfig, WorldModel
from gizmo_core import LinkState

MS = 1_000_000
CAMERA = CameraConfig(width_px=640, height_px=480, hfov_deg=90.0)


def _pose(host_ns: int) -> PoseSample:
    return PoseSample(host_ns, host_ns, 0, (0.0, 0.0, -5.0), (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def _reasons(world: WorldModel, now_ns: int) -> set[str]:
    return {r.value for r in world.snapshot(now_ns).reasons}


def test_the_pose_link_down_is_link_down_until_it_is_up_again() -> None:
    world = WorldModel(CAMERA, WorldConfig(pose_required=True))
    world.apply(LinkStatus(0, LinkState.UP))  # the board's link is up throughout
    world.apply(PoseLinkStatus(0, False, "not heard yet"))
    assert {"link_down", "no_pose"} <= _reasons(world, 10 * MS)
    world.apply(PoseLinkStatus(20 * MS, True, "heartbeat"))
    world.apply(_pose(30 * MS))
    assert "link_down" not in _reasons(world, 40 * MS)
    world.apply(PoseLinkStatus(50 * MS, False, "no heartbeat for 3 s"))
    assert "link_down" in _reasons(world, 60 * MS)  # before the pose goes stale


def test_without_a_required_pose_the_pose_link_holds_nothing() -> None:
    world = WorldModel(CAMERA, WorldConfig(pose_required=False))
    world.apply(LinkStatus(0, LinkState.UP))
    world.apply(PoseLinkStatus(0, False))
    assert "link_down" not in _reasons(world, 10 * MS)
