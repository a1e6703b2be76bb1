"""Snapshots: JSON Schema against real snapshots, exact field names, bounds, source states."""

import json
import subprocess
import sys

import jsonschema
import numpy as np
import pytest

from fusion import (
    GimbalSample,
    ImuSample,
    InvalidInput,
    LaserRange,
    LidarPoints,
    LinkStatus,
    PointFrame,
    PoseSample,
    SensorMount,
    SourceState,
    VisionObservation,
    world_schema,
)
from fusion.snapshot import FORMAT_VERSION
from gizmo_core import HoldReason, LinkState
from gizmo_core.clock import ClockStatus
from tests.support.fusion_inputs import MS, not_detected, observation, pose, up, world
from tests.support.schemas import validate_schema

SCHEMA = world_schema()

TOP = [
    "type",
    "format_version",
    "seq",
    "host_ns",
    "wall_ns",
    "valid_until_ns",
    "verdict",
    "reasons",
    "selected",
    "vehicle",
]
VEHICLE = [
    "copter_id",
    "time_ns",
    "age_ms",
    "epoch",
    "position_ned_m",
    "quaternion_wxyz",
    "velocity_ned_m_s",
]
TARGET = [
    "key",
    "result_type",
    "id",
    "label",
    "confidence",
    "tracked",
    "capture_ns",
    "age_ms",
    "verdict",
    "reasons",
    "bearing_camera",
    "bearing_ned",
    "azimuth_deg",
    "elevation_deg",
    "angular_size_deg",
    "position_ned_m",
    "range_m",
    "range_source",
    "velocity_ned_m_s",
    "covariance_ned",
    "track_id",
    "track_state",
]


def checked(snapshot):
    d = snapshot.to_dict()
    validate_schema(d, SCHEMA)
    assert json.loads(json.dumps(d)) == d  # JSON-ready: no tuples, enums or numpy values
    return d


def busy_world():
    w = world(ttl_ms=250.0)
    w.apply(up(0))
    for t in range(0, 1001, 10):
        w.apply(pose(t * MS))
    w.apply(ImuSample(995 * MS, (0.0, 0.0, 0.1)))
    w.apply(GimbalSample(995 * MS, (0.0, -45.0, 0.0)))
    mount = SensorMount((0.1, 0.0, 0.05), (0.0, -45.0, 0.0))
    w.apply(LaserRange(995 * MS, 14.0, mount))
    w.apply(LidarPoints(990 * MS, np.zeros((4, 3)), PointFrame.WORLD_NED, 60.0))
    w.apply(observation(900 * MS, ident=1))
    w.apply(observation(950 * MS, source_id=2, ident=2, lost=True))
    w.apply(observation(960 * MS, source_id=3, ident=7, center=(-400, 300)))
    return w


def test_exact_field_names_and_schema_on_proceed_and_hold():
    d = checked(busy_world().snapshot(1000 * MS))
    assert list(d)[: len(TOP)] == TOP and list(d)[len(TOP) :] == ["sources", "targets"]
    assert d["type"] == "world" and d["format_version"] == FORMAT_VERSION == 1
    assert list(d["vehicle"]) == VEHICLE
    assert [list(t) for t in d["targets"]] == [TARGET] * 3
    assert [t["verdict"] for t in d["targets"]] == ["PROCEED", "HOLD", "PROCEED"]
    held = d["targets"][1]
    assert held["key"] == "2:1:2" and held["reasons"] == ["lost"] and held["capture_ns"] == 950 * MS
    assert all(held[k] is None for k in TARGET[10:])
    assert set(d["sources"]) == {"vision", "link", "pose", "imu", "gimbal", "laser", "lidar"}
    assert all(list(s) == ["state", "age_ms"] for s in d["sources"].values())


def test_schema_on_an_empty_world_and_after_every_kind_of_hold():
    w = world(pose_required=True)
    checked(w.snapshot(0))
    w.apply(LinkStatus(10 * MS, LinkState.SILENT, device_reset=True))
    w.apply(observation(10 * MS, clock_locked=False))
    w.apply(not_detected(20 * MS))
    d = checked(w.snapshot(500 * MS))
    assert d["vehicle"] is None and d["selected"] == "1:1:1" and d["verdict"] == "HOLD"


def test_the_schema_rejects_a_proceed_with_reasons_and_unknown_fields():
    d = busy_world().snapshot(1000 * MS).to_dict()
    bad = json.loads(json.dumps(d))
    bad["reasons"] = ["stale"]
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, SCHEMA)
    bad = json.loads(json.dumps(d))
    bad["targets"][0]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, SCHEMA)


def test_seq_counts_snapshots():
    w = busy_world()
    assert [w.snapshot(1000 * MS).seq for _ in range(3)] == [1, 2, 3]


def test_targets_are_bounded_and_forgotten():
    w = world(max_targets=4, forget_after_ms=1000.0)
    w.apply(up(0))
    for i in range(10):
        w.apply(observation(i * MS, ident=i))
    s = w.snapshot(20 * MS)
    assert sorted(t.key for t in s.targets) == ["1:1:6", "1:1:7", "1:1:8", "1:1:9"]
    assert w.stats()["targets_evicted"] == 6
    s = w.snapshot(1009 * MS)
    assert [t.key for t in s.targets] == ["1:1:9"]  # 6..8 unseen for over 1 s
    assert w.snapshot(1009 * MS + 1).targets == ()


def test_source_states():
    w = world(source_dead_ms=2000.0, reset_hold_ms=2000.0)
    s = w.snapshot(0)
    assert s.sources["link"].state is SourceState.DEAD and s.sources["link"].age_ms is None
    assert s.sources["vision"].state is SourceState.DEAD
    w.apply(up(0))
    w.apply(observation(0, rx_ns=10 * MS, clock_locked=False))
    s = w.snapshot(20 * MS)
    assert s.sources["link"].state is SourceState.OK
    assert s.sources["vision"].state is SourceState.RESYNC
    w.apply(observation(20 * MS, rx_ns=30 * MS))
    assert w.snapshot(40 * MS).sources["vision"].state is SourceState.OK
    assert w.snapshot(281 * MS).sources["vision"].state is SourceState.STALE
    assert w.snapshot(2031 * MS).sources["vision"].state is SourceState.DEAD
    w.apply(LinkStatus(2040 * MS, LinkState.SILENT))
    assert w.snapshot(2041 * MS).sources["link"].state is SourceState.STALE
    w.apply(LinkStatus(2050 * MS, LinkState.UP, device_reset=True))
    assert w.snapshot(2051 * MS).sources["link"].state is SourceState.RESYNC
    w.apply(pose(2060 * MS, clock_status=ClockStatus.JUMPED))
    assert w.snapshot(2061 * MS).sources["pose"].state is SourceState.RESYNC


def test_inputs_are_checked_when_built():
    with pytest.raises(InvalidInput, match=r"PoseSample.quaternion_wxyz: expected a unit"):
        pose(0, q=(0.0, 0.0, 0.0, 0.0))
    with pytest.raises(InvalidInput, match=r"PoseSample.position_ned_m: expected 3 finite"):
        pose(0, position=(0.0, float("nan"), 0.0))
    # Finite but no vehicle's (red team: an altitude of 1.7e308 m was a pose, and PROCEEDed).
    with pytest.raises(InvalidInput, match=r"PoseSample.position_ned_m: expected 3 numbers within"):
        pose(0, position=(0.0, 0.0, -1.7e308))
    with pytest.raises(InvalidInput, match=r"PoseSample.velocity_ned_m_s: expected 3 numbers"):
        PoseSample(0, 0, 0, (0.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0), (3e38, 0.0, 0.0))
    with pytest.raises(InvalidInput, match=r"ImuSample.angular_rate_frd_rad_s: expected 3"):
        ImuSample(0, (0.0, 0.0, 1e3))
    assert pose(0, position=(1e7, -1e7, -9e6)).position_ned_m == (1e7, -1e7, -9e6)
    with pytest.raises(InvalidInput, match=r"VisionObservation.center_x: expected -1000..1000"):
        observation(0, center=(1001, 0))
    with pytest.raises(InvalidInput, match=r"VisionObservation.width: expected 0..2000"):
        observation(0, size=(-1, 0))
    with pytest.raises(InvalidInput, match=r"LaserRange.distance_m"):
        LaserRange(0, -1.0, SensorMount())
    with pytest.raises(InvalidInput, match=r"LidarPoints.points_m: expected an N×3 array"):
        LidarPoints(0, np.zeros((3, 4)), PointFrame.BODY_FRD, 60.0)
    with pytest.raises(InvalidInput, match=r"GimbalSample.fx_px"):
        GimbalSample(0, (0, 0, 0), fx_px=0.0)
    # A lost frame's box is not checked: it locates nothing.
    assert observation(0, center=(5000, 0), tracked=False).key == "1:1:1"
    near_unit = PoseSample(0, 0, 0, [1, 2, 3], np.array([1.0005, 0, 0, 0]))
    assert near_unit.quaternion_wxyz == (1.0, 0.0, 0.0, 0.0)
    assert near_unit.position_ned_m == (1.0, 2.0, 3.0)


def test_apply_rejects_what_is_not_an_input():
    with pytest.raises(TypeError, match="apply: expected a fusion input value, got dict"):
        world().apply({"type": "pose"})


def test_fusion_imports_no_io_and_neither_app_package_nor_scipy():
    code = (
        "import sys, fusion, fusion.world, fusion.simclock;"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('asyncio', 'socket', 'serialx', 'gizmo_host', 'rfly_link', 'scipy')];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_vision_observation_key_and_nothing_frames():
    obs = VisionObservation(2, 5, -3, "x", 50, True, False, True, 0, 0, 0, 0, 0, 0, 0, True)
    assert obs.key == "2:5:-3" and obs.positive and not obs.reports_nothing
    assert not_detected(0).reports_nothing


def test_valid_until_is_the_targets_stale_time_or_the_poses_whichever_is_first():
    w = world(ttl_ms=250.0, pose_ttl_ms=100.0)
    w.apply(up(0))
    w.apply(observation(900 * MS))
    alone = checked(w.snapshot(950 * MS))
    assert alone["verdict"] == "PROCEED" and alone["valid_until_ns"] == (900 + 250) * MS
    w = world(ttl_ms=250.0, pose_ttl_ms=100.0)  # with a pose source: its TTL may end first
    w.apply(up(0))
    for t in range(800, 941, 10):
        w.apply(pose(t * MS))
    w.apply(observation(900 * MS))
    posed = checked(w.snapshot(950 * MS))
    assert posed["verdict"] == "PROCEED" and posed["valid_until_ns"] == (940 + 100) * MS
    assert checked(w.snapshot(posed["valid_until_ns"]))["verdict"] == "PROCEED"  # inclusive
    assert checked(w.snapshot(posed["valid_until_ns"] + 1))["verdict"] == "HOLD"


def test_a_holds_valid_until_is_the_models_next_deadline_or_now():
    w = world(ttl_ms=250.0, reset_hold_ms=500.0)
    assert checked(w.snapshot(10 * MS))["valid_until_ns"] == 10 * MS  # nothing will change
    w.apply(LinkStatus(20 * MS, LinkState.UP, device_reset=True))
    w.apply(observation(30 * MS))
    held = checked(w.snapshot(40 * MS))
    assert held["verdict"] == "HOLD" and "device_reset" in held["reasons"]
    # the earliest moment anything can change: the target goes stale before the hold ends
    assert held["valid_until_ns"] == w.next_deadline_ns() == (30 + 250) * MS + 1


def test_the_schema_names_every_hold_reason():
    """The world's schema lists the one vocabulary's reasons, every one of them."""
    listed = SCHEMA["$defs"]["reasons"]["items"]["enum"]
    assert listed == [reason.value for reason in HoldReason]
