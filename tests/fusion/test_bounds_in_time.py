"""Bounds on what the world holds must still cover the time a capture needs (red team rt57).

A bound that counts items covers less time the faster they come: a gimbal status history of 64
at 1 kHz was 64 ms, under a board's latency, and one laser buffer that every distance sensor
shared was pushed out by an altimeter. The data was good and the selected target HOLD (or lost
its position) for as long as the fast stream lasted. Truth here is each scene's own geometry.
"""

from __future__ import annotations

import math

import numpy as np

from fusion import CameraConfig, LaserRange, WorldConfig, WorldModel
from fusion.inputs import SensorMount
from fusion.tracking import TrackingConfig
from gizmo_core import Selector
from tests.support.fusion_inputs import MS, observation, pose, up
from tests.support.gimbal_scenes import T0, Scene, Target, proceed_errors, run

LEVEL_FORWARD = CameraConfig(
    width_px=640, height_px=480, hfov_deg=90.0, on_gimbal=False,
    mount_rpy_deg=(0.0, 0.0, 0.0), mount_position_frd_m=(0.0, 0.0, 0.0),
)  # fmt: skip


def test_gimbal_statuses_at_1_khz_cover_a_board_latency_of_100_ms() -> None:
    """Before: every line HOLD ``pose_gap``, the capture older than the oldest status held."""
    spot = np.array([20.0, 0.5, 0.0])
    scene = Scene(
        [Target(7, lambda t: spot, box_radius_m=0.6)], duration_s=2.0, status_hz=1000.0,
        transit_ms=100.0, laser=False, selector=Selector(id=7),
    )  # fmt: skip
    _, lines = run(scene)
    settled = [line for now, line in lines if 0.5 < (now - T0) / 1e9 <= 2.0]
    assert len(settled) > 70
    assert {line.verdict.value for line in settled} == {"PROCEED"}, {
        reason.value for line in settled for reason in line.reasons
    }
    assert max(error for error, _ in proceed_errors(scene, lines)) < 0.3


def test_a_fast_altimeter_does_not_push_out_the_forward_lasers_readings() -> None:
    """A drone hovers 15 m ahead at the vehicle's height, out of the ground plane's reach: only
    the forward laser (10 Hz) ranges it. An altimeter reads at 1 kHz from 1 s to 3 s. Before,
    its readings pushed the forward laser's out of the one buffer they shared: the target's
    lines lost their position (PROCEED on a bearing alone, or HOLD ``coasting``)."""
    forward, down = SensorMount(), SensorMount(rpy_deg=(0.0, -90.0, 0.0))
    half_deg = math.degrees(math.atan(1.0 / 15.0))  # a 1 m radius, 15 m away
    width = round(2 * half_deg / 90 * 2000)  # board units: 2000 across 90°
    height = round(width * 639 / 479)  # the same pixels down
    inputs = [(T0 - MS, up(T0 - MS))]
    inputs += [(T0 + k * 10 * MS + MS, pose(T0 + k * 10 * MS)) for k in range(401)]
    inputs += [
        (T0 + k * 100 * MS + 5 * MS, LaserRange(T0 + k * 100 * MS + 3 * MS, 15.0, forward, 1))
        for k in range(40)
    ]
    inputs += [
        (T0 + k * MS + 2 * MS, LaserRange(T0 + k * MS, 10.0, down, 2)) for k in range(1000, 3000)
    ]
    for k in range(120):
        capture = T0 + round((k / 30 + 0.0037) * 1e9)
        box = observation(
            capture, rx_ns=capture + 40 * MS, result_type=3, ident=7, size=(width, height)
        )
        inputs.append((box.host_rx_ns, box))
    inputs.sort(key=lambda item: item[0])
    model = WorldModel(
        LEVEL_FORWARD, WorldConfig(pose_required=True), tracking=TrackingConfig(),
        selector=Selector(id=7),
    )  # fmt: skip
    truth = np.array([15.0, 0.0, -10.0])
    lines, i = [], 0
    for now in range(T0, T0 + 4_000 * MS, 20 * MS):
        while i < len(inputs) and inputs[i][0] <= now:
            model.apply(inputs[i][1])
            i += 1
        snapshot = model.snapshot(now)
        if 1.3 < (now - T0) / 1e9 <= 3.0:  # the altimeter's flood, once the track is settled
            lines.append((snapshot.verdict.value, snapshot.target(snapshot.selected)))
    assert len(lines) == 85
    assert {verdict for verdict, _ in lines} == {"PROCEED"}
    for _, line in lines:
        assert line.position_ned_m is not None, line.range_source
        assert np.linalg.norm(np.array(line.position_ned_m) - truth) < 0.3
