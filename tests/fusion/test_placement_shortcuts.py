"""The placement's shortcuts for a camera at the body's origin (every repeat of an image at a
new capture time is placed afresh): each gives, bit for bit, what the plain computation gives."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from fusion import CameraModel, WorldConfig
from fusion import geometry as g
from fusion.placement import Placer
from tests.support.fusion_inputs import FORWARD_DOWN_45, MS, observation, pose

_ZERO = st.sampled_from([0.0, -0.0])
_COORD = st.one_of(_ZERO, st.floats(-50.0, 50.0))
_ANGLE = st.one_of(_ZERO, st.floats(-math.pi, math.pi))
_MOUNTS = st.one_of(
    st.tuples(_ZERO, _ZERO, _ZERO),  # at the origin, some zeros negative
    st.tuples(_COORD, _COORD, _COORD),
)


def _placer(mount: g.Vec3, *, plain: bool) -> Placer:
    camera = CameraModel(dataclasses.replace(FORWARD_DOWN_45, mount_position_frd_m=mount))
    placer = Placer(camera, WorldConfig(pose_required=True, ground_z_ned_m=0.0), rates=True)
    if plain:
        placer._at_origin = False  # the mount's offset rotated by each attitude
    return placer


@settings(max_examples=300)
@given(
    _MOUNTS,
    st.lists(
        st.tuples(_COORD, _COORD, st.floats(-60.0, -0.5), _ANGLE, _ANGLE, _ANGLE),
        min_size=2,
        max_size=4,
    ),
    st.integers(0, 30),
    st.tuples(st.integers(-900, 900), st.integers(-900, 900)),
)
def test_a_camera_at_the_origin_is_placed_as_one_whose_offset_is_rotated(
    mount, poses, capture_ms, centre
):
    """A mount at (+0.0, +0.0, +0.0) is placed without rotating it (any attitude leaves it
    there, and adding it turns a pose's -0.0 into +0.0 as before); a mount anywhere else,
    a negative zero included, is rotated: the geometry is bit for bit (``repr`` tells -0.0
    from 0.0) the plain placer's, at every capture between, on and past the poses."""
    placers = [_placer(mount, plain=False), _placer(mount, plain=True)]
    for k, (n, e, d, roll, pitch, yaw) in enumerate(poses):
        q = g.quat_from_euler_zyx(roll, pitch, yaw)
        for placer in placers:
            placer.history.add(pose(k * 10 * MS, position=(n, e, d), q=q, velocity=None))
    obs = observation(capture_ms * MS, center=centre)
    shortcut, plain = (p.place(obs, 1, True, True) for p in placers)
    assert repr(shortcut) == repr(plain)
    assert placers[0]._at_origin is (mount == (0.0, 0.0, 0.0) and "-" not in repr(mount))


def test_only_a_mount_at_positive_zeros_takes_the_shortcut() -> None:
    """(-0.0, -0.0, 0.0) is at the origin too, but an attitude can leave its -0.0 in the
    offset (a pose's -0.0 plus that stays -0.0): it is rotated, as any other mount."""
    q = g.quat_normalize((-0.5, -0.5, -0.5, 0.0))
    assert repr(g.quat_rotate(q, (-0.0, -0.0, 0.0))) == "(-0.0, 0.0, 0.0)"
    assert _placer((0.0, 0.0, 0.0), plain=False)._at_origin is True
    for mount in ((-0.0, -0.0, 0.0), (0.0, 0.0, -0.0), (1e-300, 0.0, 0.0)):
        assert _placer(mount, plain=False)._at_origin is False
