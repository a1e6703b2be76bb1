"""Every host setting, defined once: section, name, type, default, range, unit, flag and doc.

Like ``FIELDS`` for the frame (``gizmo_host.wire.protocol``), this table is the single source:
the TOML validation (``gizmo_host.app.host_config``), the command-line flags and their ``--help``
(``add_flags``), and the settings table in docs/settings.md (``python -m gizmo_host.app.settings``,
checked by a test) all read it. Defaults that a component owns are read from that component's
config (``LinkConfig``, ``PipelineConfig``, fusion's ``WorldConfig``), never written again.
Rules over a whole table (exactly one of ``hfov_deg`` or ``fx_px``, ``backoff_min_s`` not
above ``backoff_max_s``) are ``RULES``, declared below the rows; fusion's own configs keep
their invariants for programmatic users, but a user's file is checked here first.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fusion import CameraConfig, WorldConfig
from fusion.camera import MIN_FOV_DEG
from fusion.config import MOUNT_POSITION_LIMITS_M, MOUNT_RPY_LIMITS_DEG
from fusion.simclock import SIM_MAX_SKEW_PPM
from fusion.tracking import TrackingConfig
from fusion.tracking.config import MIN_DWELL_S
from gizmo_host import setting
from gizmo_host.live import event_loop, wakeup_slice
from gizmo_host.live.link_config import LinkConfig, PipelineConfig
from gizmo_host.publish import unix_socket
from gizmo_host.setting import (
    LIVE,
    Rule,
    Setting,
    at_most_one,
    exactly_one,
    not_above,
    only_with,
    required,
)
from gizmo_host.zenoh.config import LINE_BYTES_LIMITS, MAX_ROS2_DOMAIN, ROS2_MODES, ZenohConfig
from gizmo_host.zenoh.config import MODES as ZENOH_MODES

MIN_PERIOD_S = 0.01  # the shortest timer period or interval any setting may ask for
MAX_PERIOD_S = 3600.0
MAX_MS = MAX_PERIOD_S * 1000  # beyond an hour a time no longer means anything
MAX_UNIX_PATH_BYTES = 107  # sun_path holds 108 bytes with the terminating NUL

__all__ = [
    "BY_KEY",
    "CAMERA_SETTINGS",
    "HOST_SETTINGS",
    "LIVE",
    "MAX_MS",
    "MAX_PERIOD_S",
    "MAX_UNIX_PATH_BYTES",
    "MIN_PERIOD_S",
    "RULES",
    "RUN",
    "SECTIONS",
    "SETTINGS",
    "TRACKING_SETTINGS",
    "WORLD_SETTINGS",
    "Rule",
    "Setting",
    "add_flags",
    "default",
    "flag_names",
    "markdown_table",
    "overrides_from",
    "section_keys",
]

RUN = frozenset({"run"})
POSE_SOURCES = ("rflysim", "mavlink")
LANDING_PROFILES = ("ardupilot", "px4", "off")


def _default(cls: type, name: str) -> Any:
    """A component config's own default for ``name`` (written there, read here)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
    raise KeyError(name)


def _link(name: str) -> Any:
    return _default(LinkConfig, name)


def _pipe(name: str) -> Any:
    return _default(PipelineConfig, name)


def _period(section: str, name: str, default: float, doc: str, **kw: Any) -> Setting:
    return Setting(section, name, "float", default, doc, MIN_PERIOD_S, MAX_PERIOD_S, "s", **kw)


HOST_SETTINGS: tuple[Setting, ...] = (
    Setting("serial", "path", "str", None, "serial device, e.g. /dev/gizmo0", optional=True,
            flag="--serial", metavar="PATH", what="a device path"),
    Setting("serial", "baudrate", "int", _link("baudrate"), "baud rate", 50, 20_000_000,
            flag="--baud", metavar="N"),
    _period("serial", "silent_after_s", _link("silent_after_s"),
            "link SILENT after this long without a valid frame", flag="--silent-after-s"),
    _period("serial", "backoff_min_s", _link("backoff_min_s"), "first reopen delay"),
    _period("serial", "backoff_max_s", _link("backoff_max_s"),
            "longest reopen delay (the delay doubles up to it)"),
    Setting("serial", "transport_delay_ms", "float", None,
            "minimum frame transport delay (unset: 35 bytes' time at the baud rate, 3.04 ms at "
            "115200, on a pty too; a pty that delivers each frame at once: set 0)",
            0, 1000, "ms", optional=True, flag="--transport-delay-ms"),
    Setting("clock", "max_skew_ppm", "float", _pipe("max_skew_ppm"),
            "the largest device clock drift believed (followed up to it, learned across the "
            "epochs late runs open; a board's clock slower than it holds `clock_jump`, "
            "`clock.skew_beyond_bound`)", 0, 10_000, "ppm"),
    Setting("clock", "phase_error_threshold_ms", "float", _pipe("phase_error_threshold_ms"),
            "a frame further off the device clock's mapping is early or late (5 that agree "
            "confirm a step)", 0.01, 1000, "ms"),
    Setting("clock", "lock_after_ms", "float", _pipe("lock_after_ms"),
            "the first device clock epoch is trusted (LOCKED) after this long and 10 frames; "
            "later ones (the skew known) after 3 frames over 66 ms", 100, 60_000, "ms"),
    Setting("store", "ttl_ms", "float", _pipe("ttl_ms"),
            "a result older than this is stale", 1, MAX_MS, "ms", flag="--ttl-ms"),
    Setting("store", "ttl_ms_by_type", "table", {},
            "per result type (name or number): its own TTL", 1, MAX_MS, "ms"),
    Setting("store", "reset_hold_ms", "float", _pipe("reset_hold_ms"),
            "HOLD this long after a device reset, beyond the clock's re-lock: for a board "
            "whose detectors report on frames its camera takes while exposure settles after "
            "a boot (0: the re-lock and the forgotten results guard a reset)", 0, MAX_MS, "ms"),
    Setting("verdict", "select", "str", "any",
            "verdict target: 'any' or source=N,type=N|NAME,id=N, each key once", flag="--select",
            metavar="SELECTOR"),
    _period("verdict", "interval_s", _pipe("verdict_interval_s"),
            "a verdict is re-published at least this often"),
    Setting("publish", "stdout", "bool", True, "print JSON Lines on stdout",
            flag="--no-stdout", commands=RUN),
    Setting("publish", "unix_socket", "str", None, "also serve JSON Lines on this Unix socket",
            optional=True, flag="--unix-socket", aliases=("--socket",), metavar="PATH",
            commands=RUN, what="a socket path"),
    Setting("publish", "unix_max_buffer_bytes", "int", unix_socket.DEFAULT_MAX_BUFFER_BYTES,
            "a socket client further behind than this (its expired lines skipped) is dropped",
            4096, 64 * 1024 * 1024, "bytes", what="a number of bytes"),
    Setting("publish", "unix_max_clients", "int", unix_socket.DEFAULT_MAX_CLIENTS,
            "socket clients served at once (a file descriptor and up to unix_max_buffer_bytes "
            "each); one more takes the slot of a client 4 KiB behind, or is refused (counted, "
            "logged, shown by doctor)", 1, unix_socket.MAX_CLIENTS, "",
            what="a number of clients"),
    Setting("publish", "udp", "str", None, "also send JSON Lines datagrams to HOST:PORT",
            optional=True, flag="--udp", metavar="HOST:PORT", commands=RUN),
    Setting("publish", "stats_interval_s", "float", 10.0, "stats line period, 0 for none",
            MIN_PERIOD_S, 24 * MAX_PERIOD_S, "s", off=True, flag="--stats-interval-s",
            metavar="S"),
    Setting("runtime", "event_loop", "str", "auto",
            "auto (uvloop when installed), asyncio or uvloop", flag="--event-loop",
            choices=event_loop.EVENT_LOOPS, commands=RUN),
    Setting("runtime", "wakeup_slice_us", "int", wakeup_slice.DEFAULT_SLICE_US,
            "ask Linux 6.12 or later for scheduler slices this short, so a frame arriving on "
            "a busy machine wakes the reader sooner; 0 asks nothing (docs/run.md)",
            wakeup_slice.MIN_SLICE_US, wakeup_slice.MAX_SLICE_US, "us", off=True,
            flag="--wakeup-slice-us", metavar="US", commands=RUN, what="a slice in microseconds"),
    Setting("rflysim", "copter_id", "int", None, "the vehicle's CopterID", 1, 450,
            optional=True, flag="--rflysim-copter-id", metavar="N", what="a CopterID"),
    Setting("rflysim", "config", "str", None, "RflySim Config.json (sensors, camera)",
            optional=True, flag="--rflysim-config", metavar="FILE", what="a file path"),
    Setting("rflysim", "bind", "str", "127.0.0.1", "local IPv4 address for RflySim",
            flag="--rflysim-bind", metavar="IPV4", commands=RUN),
    Setting("rflysim", "sim_host", "str", "127.0.0.1", "the simulator's IPv4 address",
            flag="--rflysim-sim-host", metavar="IPV4", commands=RUN),
    Setting("rflysim", "request_odometry_hz", "int", 0,
            "ask CopterSim for odometry at this rate and take the pose from it (0: the pose "
            "comes from the state port)", 1, 1000, "Hz", off=True,
            flag="--rflysim-request-odometry-hz", metavar="HZ", what="a rate in Hz"),
    Setting("rflysim", "request_imu_hz", "int", 0, "ask CopterSim for IMU replies", 1, 1000,
            "Hz", off=True, flag="--rflysim-request-imu-hz", metavar="HZ", commands=RUN,
            what="a rate in Hz"),
    Setting("rflysim", "max_skew_ppm", "float", SIM_MAX_SKEW_PPM,
            "the simulation time may run this much slower than the host's and be followed "
            "(slower holds `clock_jump`); a latency creeping up as fast is followed too, as "
            "fresh data (docs/world-safety.md)", 0, 10_000, "ppm"),
)  # fmt: skip


def _w(name: str, doc: str, low: float | None = 0, high: float | None = MAX_MS,
       unit: str = "ms", kind: str = "float", **kw: Any) -> Setting:  # fmt: skip
    return Setting("world", name, kind, _default(WorldConfig, name), doc, low, high, unit, **kw)


# The jump rule's position allowance for an autopilot's pose where [world] leaves it out (the
# reason, measured, is in app/world_config.py); fusion's own default fits RflySim's exact pose.
AUTOPILOT_POSE_JUMP_M = 0.1

# [world]: the model's own defaults (fusion's WorldConfig); each key its own range. ttl_ms,
# ttl_ms_by_type and reset_hold_ms are inherited from [store] unless set here.
WORLD_SETTINGS: tuple[Setting, ...] = (
    Setting("world", "enabled", "bool", None, "false: no world model even with [camera] "
            "([world], [camera] and [rflysim] keys are then reported as doing nothing)",
            optional=True),
    _w("rate_hz", "snapshot rate", 0.01, 100, "Hz"),
    _w("publish_on_change", "publish at once when a verdict changes", None, None, "",
       kind="bool"),
    _w("ttl_ms", "a target is fresh this long after its capture (default: [store])", 0, MAX_MS,
       open_low=True),
    _w("ttl_ms_by_type", "per result type: its own TTL (default: [store])", 0, MAX_MS,
       kind="table", open_low=True),
    _w("reset_hold_ms", "HOLD this long after a device reset (default: [store])"),
    _w("max_wait_ms", "a measurement newer than the newest pose waits this long"),
    _w("max_extrapolation_ms", "then it may be placed this far past the newest pose"),
    _w("max_pose_gap_ms", "two poses further apart bracket nothing", open_low=True),
    _w("pose_ttl_ms", "the newest pose older than this: pose_stale", open_low=True),
    _w("pose_history", "poses held", 2, 1_000_000, "", kind="int"),
    _w("pose_jump_m", "the jump rule: a position step beyond what the velocities carry by "
       f"this (plus the terms below; unset: {_default(WorldConfig, 'pose_jump_m')} for "
       f"RflySim's exact pose, {AUTOPILOT_POSE_JUMP_M} for an autopilot's estimate, which "
       "jitters)", 0, 1000, "m",
       open_low=True),
    _w("pose_jump_m_s", "the jump rule: a velocity changed by this plus max_accel_m_s2 over "
       "the span; half of it is the velocities' error over the span", 0, 1000, "m/s",
       open_low=True),
    _w("pose_stamp_error_ms", "the jump rule: a pose's stamp this far from its numbers' "
       "instant (times the speed flown)", 0, 1000),
    _w("max_accel_m_s2", "the jump rule: a velocity's change, and a quarter of it times the "
       "span squared off the trapezoid", 0, 1000, "m/s2", open_low=True),
    _w("max_speed_m_s", "the jump rule: a step without velocities, and extrapolation, at most "
       "this fast", 0, 10_000, "m/s", open_low=True),
    _w("max_angular_rate_deg_s", "the jump rule: the attitude turning at most this fast", 0,
       100_000, "deg/s", open_low=True),
    _w("jump_hold_ms", "HOLD pose_jump this long after a pose jump"),
    _w("conflict_hold_ms", "HOLD pose_conflict this long after two senders or two poses for "
       "one time"),
    _w("pose_required", "HOLD without a pose (default: true with [rflysim] copter_id)", None,
       None, "", kind="bool"),
    _w("imu_max_age_ms", "an IMU rate older than the newest pose by more is not used"),
    _w("gimbal_max_age_ms", "gimbal angles this far from the capture still apply (a still "
       "gimbal's); a capture after the newest status waits this long for the next"),
    _w("gimbal_max_rate_deg_s", "gimbal statuses differing faster: the angle is unknown", 0,
       3600, "deg/s", open_low=True),
    _w("ground_plane", "place targets on the ground plane when nothing ranges them", None, None,
       "", kind="bool"),
    _w("ground_z_ned_m", "the ground's height (NED z)", -100_000, 100_000, "m"),
    _w("max_ground_range_m", "grazing rays meet the ground too far to trust", 0, 100_000, "m"),
    _w("laser_beam_half_angle_deg", "a laser return counts for a target this close to its axis, "
       "its whole beam within the target's box", 0, 45, "deg", open_low=True),
    _w("gimbal_laser_beam_half_angle_deg", "the same for the gimbal's laser", 0, 45, "deg",
       open_low=True),
    _w("gimbal_laser_max_range_m", "a gimbal laser range beyond it is junk (counted)", 0,
       1e7, "m", open_low=True),
    _w("range_max_age_ms", "a laser reading this far from the capture still ranges it (those "
       "for the range's trend up to two or three times as far: docs/world.md)"),
    _w("lidar_cone_half_angle_deg", "LiDAR points this close to a target's ray (and within its "
       "box) range it", 0, 45, "deg", open_low=True),
    _w("lidar_min_points", "LiDAR points needed for a range", 1, 1_000_000, "", kind="int"),
    _w("lidar_max_age_ms", "a LiDAR scan this far from the capture still applies"),
    _w("range_min_target_m", "a sensor range at which the target's box would be narrower is "
       "not the target's (counted)", 0, 1000, "m"),
    _w("target_max_height_m", "with the ground plane on, a sensor range nearer than it by more "
       "than a target this tall (and 1 m of ground) conflicts: no position", 0, 1000, "m"),
    _w("flat_targets", "targets lie flat on the ground (landing pads, markings): a ground-plane "
       "fix puts a box's centre on the plane; false: targets may stand (people, cars), placed "
       "between the plane and a standing target's centre, that spread in their covariance",
       None, None, "", kind="bool"),
    _w("max_targets", "targets held", 1, 1_000_000, "", kind="int"),
    _w("max_pending", "measurements waiting for a pose or a gimbal status; past it the oldest "
       "is dropped (counted)", 1, 1_000_000, "", kind="int"),
    _w("forget_after_ms", "a target unseen this long leaves the list"),
    _w("source_stale_ms", "per source (vision, pose, imu, ...): stale after this", 0, MAX_MS,
       kind="table", open_low=True),
    _w("source_dead_ms", "a source silent this long is dead"),
)  # fmt: skip


def _t(name: str, doc: str, low: float, high: float, unit: str, kind: str = "float",
       **kw: Any) -> Setting:  # fmt: skip
    default = kw.pop("default") if "default" in kw else _default(TrackingConfig, name)
    return Setting("tracking", name, kind, default, doc, low, high, unit,
                   commands=frozenset(), **kw)  # fmt: skip


# [tracking]: targets tracked over time (fusion.tracking, docs/tracking.md): fusion's own
# TrackingConfig defaults; on unless enabled = false (then each measurement stands alone).
TRACKING_SETTINGS: tuple[Setting, ...] = (
    Setting("tracking", "enabled", "bool", True, "track targets (false: the per-frame path)",
            commands=frozenset()),
    _t("box_sigma_px", "the detector's box-centre noise, σ", 0, 100, "px", open_low=True),
    _t("attitude_sigma_deg", "the vehicle's attitude noise frame to frame, σ per axis (unset: "
       f"{_default(TrackingConfig, 'attitude_sigma_deg')} for an autopilot's estimate, 0 for "
       "RflySim's pose, the simulator's own state)", 0, 10, "deg", default=None, optional=True),
    _t("position_sigma_m", "the vehicle's position noise frame to frame, σ per axis (unset: "
       f"{_default(TrackingConfig, 'position_sigma_m')} for an autopilot's estimate, 0 for "
       "RflySim's pose)", 0, 10, "m", default=None, optional=True),
    _t("range_sigma_m", "a laser, gimbal laser or LiDAR range's noise, σ", 0, 100, "m"),
    _t("ground_height_sigma_m", "how far off the ground plane a target may be, σ", 0, 100,
       "m"),
    _t("capture_time_sigma_ms", "the capture time's error against the pose's (the board's ms "
       "clock and its mapping, the pose's timestamps), σ: times the camera's velocity and "
       "angular rate", 0, 1000, "ms"),
    _t("gate_probability", "the χ² gate: 0.999 is 13.8 for a ground-plane fix (2 dof), 16.3 "
       "for a ranged one", 0.5, 1, "", open_high=True),
    _t("confirm_hits", "confirmed after this many hits ...", 1, 32, "", kind="int"),
    _t("confirm_window", "... of its key's last this many frames", 1, 32, "", kind="int"),
    _t("delete_after_ms", "no hit this long: the track is deleted", 0, MAX_MS, "ms",
       open_low=True),
    _t("oosm_window_ms", "a late measurement this much older than the newest is fused "
       "exactly (replayed); older: counted and dropped", 0, 10_000, "ms"),
    _t("max_tracks", "tracks held", 1, 100_000, "", kind="int"),
    _t("cv_accel_m_s2", "constant-velocity mode: random acceleration, σ", 0, 100, "m/s2"),
    _t("cv_true_accel_m_s2", "constant-velocity mode: the random acceleration a straight run "
       "really has, σ; the reported covariance assumes it (the gains use cv_accel_m_s2)",
       0, 100, "m/s2"),
    _t("ct_accel_m_s2", "coordinated-turn mode: random acceleration, σ", 0, 100, "m/s2"),
    _t("ct_speed_accel_m_s2", "coordinated-turn mode: random acceleration along the velocity "
       "(speeding up, braking), σ; every way below 1 m/s", 0, 100, "m/s2"),
    _t("turn_accel_rad_s2", "turn-rate change, σ", 0, 100, "rad/s2"),
    _t("vertical_accel_m_s2", "vertical random acceleration, σ", 0, 100, "m/s2"),
    # from 1 ms: the mode switching's rate is 1/dwell (rt32: 5e-324 made it inf, NaN after,
    # and no track was ever confirmed: HOLD for good)
    _t("cv_dwell_s", "mean time a straight run lasts", MIN_DWELL_S, 3600, "s"),
    _t("ct_dwell_s", "mean time a turn (or a change of speed) lasts", MIN_DWELL_S, 3600, "s"),
    _t("initial_speed_m_s", "a new track's velocity, σ per axis", 0, 1000, "m/s",
       open_low=True),
    _t("initial_turn_rate_deg_s", "a new track's turn rate, σ", 0, 3600, "deg/s"),
)  # fmt: skip


def _c(name: str, kind: str, doc: str, low: float | None = None, high: float | None = None,
       unit: str = "", **kw: Any) -> Setting:  # fmt: skip
    fields = {f.name: f for f in dataclasses.fields(CameraConfig)}
    has_default = fields[name].default is not dataclasses.MISSING
    default = _default(CameraConfig, name) if has_default else None
    return Setting("camera", name, kind, default, doc, low, high, unit, commands=frozenset(),
                   optional=default is None, **kw)  # fmt: skip


# [camera]: fusion's CameraConfig defaults and mount limits; each key its own range, and the
# rules over the whole table below.
CAMERA_SETTINGS: tuple[Setting, ...] = (
    _c("width_px", "int", "image width (required, or from camera.rflysim_sensor)", 2, 100_000,
       "px"),
    _c("height_px", "int", "image height (required, or from camera.rflysim_sensor)", 2, 100_000,
       "px"),
    # from 0.01°: half of 5e-324° in radians is 0, and its tangent divided by (rt32)
    _c("hfov_deg", "float", "horizontal field of view, edge to edge (or fx_px)", MIN_FOV_DEG,
       180, "deg", open_high=True),
    _c("vfov_deg", "float", "vertical field of view (default: square pixels)", MIN_FOV_DEG, 180,
       "deg", open_high=True),
    _c("fx_px", "float", "focal length in pixels (instead of hfov_deg)", 0, 1e6, "px",
       open_low=True),
    _c("fy_px", "float", "vertical focal length in pixels (default fx_px)", 0, 1e6, "px",
       open_low=True),
    _c("cx_px", "float", "principal point x (default: the image centre)", -1e6, 1e6, "px"),
    _c("cy_px", "float", "principal point y (default: the image centre)", -1e6, 1e6, "px"),
    _c("mount_rpy_deg", "triple", "camera attitude from body FRD: roll, pitch, yaw, applied "
       "Z-Y-X", -360, 360, "deg", limits=MOUNT_RPY_LIMITS_DEG),
    _c("mount_position_frd_m", "triple", "camera position in body FRD", -100, 100, "m",
       limits=MOUNT_POSITION_LIMITS_M),
    _c("on_gimbal", "bool", "the gimbal status's angles replace mount_rpy_deg"),
    _c("rflysim_sensor", "int", "a Config.json camera or TypeID 30 sensor's SeqID: its size, "
       "field of view and mount", 1, 1_000_000, ""),
)  # fmt: skip

# [mavlink]: the autopilot link (the ``mavlink`` extra), and [world] pose_source, which chooses
# between its pose and RflySim's (gizmo_host.app.mavlink, docs/mavlink.md).
MAVLINK_SETTINGS: tuple[Setting, ...] = (
    Setting("mavlink", "enabled", "bool", True, "false: no autopilot link, though [mavlink] "
            "is there (its other keys are reported as doing nothing)"),
    Setting("mavlink", "url", "str", None, "the autopilot: udpin:HOST:PORT, udpout:HOST:PORT, "
            "tcp:HOST:PORT or /dev/DEVICE[:BAUD]", optional=True, flag="--mavlink-url",
            metavar="URL", what="a connection string"),
    Setting("mavlink", "send_to", "str", None, "with a udpin: url, send to HOST:PORT (RflySim's "
            "CopterSim ports)", optional=True, flag="--mavlink-send-to", metavar="HOST:PORT"),
    Setting("mavlink", "target_system", "int", 0, "the autopilot's system id (0: any one "
            "autopilot; two heard is a conflict)", 0, 255, "", flag="--mavlink-target-system",
            metavar="N"),
    Setting("mavlink", "target_component", "int", 0, "its component id (0: any)", 0, 255, "",
            flag="--mavlink-target-component", metavar="N"),
    Setting("mavlink", "pose", "bool", True, "take the vehicle's pose from the autopilot",
            flag="--no-mavlink-pose"),
    Setting("mavlink", "landing_target", "str", "off", "send LANDING_TARGET for the selected "
            "target while PROCEED, in this autopilot's form", flag="--mavlink-landing-target",
            choices=LANDING_PROFILES),
    Setting("mavlink", "rate_hz", "float", 20.0, "LANDING_TARGET at most this often", 0.1, 100,
            "Hz", flag="--mavlink-rate-hz", metavar="HZ"),
    Setting("mavlink", "signing_key_file", "str", None, "MAVLink 2 signing: a file holding "
            "the 32-byte secret shared with the autopilot (never the key itself); unsigned "
            "frames are then refused", optional=True, flag="--mavlink-signing-key-file",
            metavar="PATH", what="a file path"),
    Setting("world", "pose_source", "str", None, "rflysim or mavlink: required when both give a "
            "pose (default: the one configured)", optional=True, flag="--pose-source",
            choices=POSE_SOURCES),
)  # fmt: skip


def _z(name: str, kind: str, doc: str, low: float | None = None, high: float | None = None,
       unit: str = "", **kw: Any) -> Setting:  # fmt: skip
    return Setting("zenoh", name, kind, _default(ZenohConfig, name), doc, low, high, unit,
                   commands=RUN, **kw)  # fmt: skip


# [zenoh]: the fleet's transport (gizmo_host.zenoh, the zenoh extra; ros2: the ros2 extra).
ZENOH_SETTINGS: tuple[Setting, ...] = (
    _z("enabled", "bool", "publish every line on gizmo/<vehicle>/<type> over Zenoh: true "
       "once [zenoh] (or a --zenoh-* flag) is there; false turns it off", flag="--zenoh"),
    _z("mode", "str", "peer, or client (of a router: connect required)", flag="--zenoh-mode",
       choices=ZENOH_MODES),
    _z("connect", "list", "endpoints to reach, e.g. [\"tcp/192.168.1.10:7447\"]",
       flag="--zenoh-connect", metavar="ENDPOINT[,...]"),
    _z("listen", "list", "endpoints to listen on", flag="--zenoh-listen",
       metavar="ENDPOINT[,...]"),
    _z("multicast_scouting", "bool", "find peers by multicast (off: only the endpoints)"),
    _z("vehicle", "str", "the key prefix's vehicle name (unset: the hostname)", optional=True,
       flag="--zenoh-vehicle", metavar="NAME", what="a vehicle name"),
    _z("ros2", "str", "ROS 2 messages: off, bridge (zenoh-bridge-ros2dds keys) or rmw_zenoh",
       flag="--ros2", choices=ROS2_MODES),
    _z("ros2_domain", "int", "the ROS 2 domain id (rmw_zenoh keys)", 0, MAX_ROS2_DOMAIN),
    _z("queue_lines", "int", "lines waiting for the Zenoh thread before the oldest drops", 1,
       1_000_000),
    _z("config", "str", "a Zenoh configuration file (json5) the session starts from: TLS, "
       "mTLS, access control (mode, scouting and endpoints given here override it)",
       optional=True, flag="--zenoh-config", metavar="FILE", what="a file path"),
    _z("max_line_bytes", "int", "a longer line is not published, nor taken by gizmo-host "
       "fleet (--max-line-bytes there)", *LINE_BYTES_LIMITS, "bytes",
       what="a number of bytes"),
)  # fmt: skip


# [foxglove]: the live Foxglove view (the foxglove extra). ``--foxglove [HOST:PORT]`` on run
# and demo sets both keys (gizmo_host.app.foxglove_view), so the rows have no flag of their own.
FOXGLOVE_SETTINGS: tuple[Setting, ...] = (
    Setting("foxglove", "enabled", "bool", False,
            "serve the live Foxglove view (--foxglove [HOST:PORT]): true once [foxglove] is "
            "there; false turns it off", commands=RUN),
    Setting("foxglove", "listen", "str", "127.0.0.1:8765",
            "the Foxglove WebSocket server's HOST:PORT (port 0: any free port)", commands=RUN,
            what="HOST:PORT"),
    Setting("foxglove", "client_backlog", "int", 256,
            "messages queued per viewer; beyond, the SDK drops that viewer's oldest", 16,
            65_536, "", commands=RUN),
)  # fmt: skip


def _required(row: Setting) -> Rule:
    return required(row.section, row.name, row.describe())


# Rules over a whole table: checked after every key passed its row (and, for [camera], after
# a Config.json sensor's values filled the keys the table leaves out).
RULES: tuple[Rule, ...] = (
    not_above("serial", "backoff_min_s", "backoff_max_s"),
    not_above("tracking", "confirm_hits", "confirm_window"),
    _required(CAMERA_SETTINGS[0]),
    _required(CAMERA_SETTINGS[1]),
    exactly_one("camera", "hfov_deg", "fx_px"),
    only_with("camera", "fy_px", "fx_px", " (use vfov_deg with hfov)"),
    at_most_one("camera", "vfov_deg", "fy_px"),
)

SETTINGS: tuple[Setting, ...] = (
    HOST_SETTINGS
    + WORLD_SETTINGS
    + TRACKING_SETTINGS
    + CAMERA_SETTINGS
    + MAVLINK_SETTINGS
    + ZENOH_SETTINGS
    + FOXGLOVE_SETTINGS
)
BY_KEY: Mapping[str, Setting] = MappingProxyType({s.key: s for s in SETTINGS})
SECTIONS: tuple[str, ...] = tuple(dict.fromkeys(s.section for s in SETTINGS))


def default(key: str) -> Any:
    """The default of ``section.name``."""
    return BY_KEY[key].default


def section_keys(section: str) -> list[str]:
    return [s.name for s in SETTINGS if s.section == section]


# -- the command line and docs/settings.md's table: the rows above, through gizmo_host.setting -----

_GROUPS = {
    "rflysim": "world model (with [camera])",
    "mavlink": "autopilot (MAVLink)",
    "zenoh": "fleet (Zenoh)",
}


def add_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The flags of ``command``'s settings, their help from the table."""
    setting.add_flags(parser, SETTINGS, command, _GROUPS)


def overrides_from(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The settings the flags set, as a settings document (unset flags left out)."""
    return setting.overrides_from(args, SETTINGS)


def flag_names() -> dict[str, str]:
    """``section.key`` -> its flag: an error in a flag's value names the flag."""
    return {s.key: s.flag for s in SETTINGS if s.flag is not None}


def markdown_table() -> str:
    """docs/settings.md's settings table (between its ``settings`` markers)."""
    return setting.markdown_table(SETTINGS, RULES)


if __name__ == "__main__":
    sys.stdout.write(markdown_table())
