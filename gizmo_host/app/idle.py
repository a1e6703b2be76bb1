"""Settings that would do nothing: each one is reported, never silently ignored.

The rule for every optional section: **its presence turns it on**. ``[camera]`` turns the
world model on (with ``[world]`` and ``[rflysim]``), a ``[mavlink]`` url the autopilot link,
``[zenoh]`` (or any ``--zenoh-*`` flag) the fleet publisher and ``[foxglove]`` the live view.
``enabled = false`` is the one way to keep a section written and off. A section that is on but
lacks what it needs is a mistake, refused with exit status 2 by the checks of
``gizmo_host.app.host_config`` and ``gizmo_host.app.world_config`` (``[mavlink]`` without a url,
``[world]`` or ``[rflysim]`` without ``[camera]``, ``[rflysim]`` addresses or requests
without a ``copter_id``, a Zenoh client without an endpoint). What is left is a key that was
written but does nothing because something else turned its part off; ``idle_settings`` names
each one, ``gizmo-host run`` and ``record`` log one warning line per section at start, and
``gizmo-host doctor`` reports them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from typing import Any

from gizmo_host.app.host_config import FoxgloveConfig, HostConfig, MavlinkConfig, PublishConfig
from gizmo_host.app.world_config import RflySimConfig
from gizmo_host.zenoh.config import ZenohConfig

LOGGER = logging.getLogger("gizmo_host.settings")
_MAVLINK, _ZENOH = MavlinkConfig(), ZenohConfig()  # the defaults
# The world's keys that only the ground plane reads
_GROUND_PLANE_KEYS = ("ground_z_ned_m", "max_ground_range_m", "target_max_height_m", "flat_targets")


def _changed(section: str, value: Any, default: Any, skip: Iterable[str] = ()) -> list[str]:
    """The keys of ``value`` (a section's dataclass) set to something else than ``default``."""
    return [
        f"{section}.{f.name}"
        for f in dataclasses.fields(value)
        if f.name not in skip and getattr(value, f.name) != getattr(default, f.name)
    ]


def _notice(keys: list[str], why: str) -> list[str]:
    if not keys:
        return []
    verb = "does" if len(keys) == 1 else "do"
    return [f"{', '.join(keys)} {verb} nothing: {why}"]


def idle_settings(config: HostConfig, *, publishes: bool = True) -> list[str]:
    """One line per group of keys that do nothing as ``config`` stands (empty: all in use).
    ``publishes``: the command's only output is what ``[publish]`` and the views give (run)."""
    out: list[str] = []
    for name, default in (("zenoh", _ZENOH), ("foxglove", FoxgloveConfig()), ("mavlink", _MAVLINK)):
        section = getattr(config, name)
        if not section.enabled:
            keys = _changed(name, section, default, skip=("enabled",))
            out += _notice(keys, f"[{name}] enabled = false")
    out += _world(config)
    mavlink = config.mavlink
    if mavlink.on and mavlink.landing_target == "off" and mavlink.rate_hz != _MAVLINK.rate_hz:
        out += _notice(["mavlink.rate_hz"], 'landing_target = "off" sends no LANDING_TARGET')
    zenoh = config.zenoh
    if zenoh.enabled and zenoh.ros2 != "rmw_zenoh" and zenoh.ros2_domain != _ZENOH.ros2_domain:
        out += _notice(["zenoh.ros2_domain"], f'ros2 = "{zenoh.ros2}" (only rmw_zenoh keys use it)')
    publish = config.publish
    if publish.unix_socket is None:
        keys = [
            k
            for k in _changed("publish", publish, PublishConfig())
            if k.startswith("publish.unix_max_")
        ]
        out += _notice(keys, "no [publish] unix_socket to serve")
    if publishes and not (
        publish.stdout
        or publish.unix_socket
        or publish.udp
        or zenoh.enabled
        or config.foxglove.enabled
    ):
        out += _notice(
            ["publish.stdout = false"],
            "no other output either (unix_socket, udp, [zenoh], [foxglove]): nothing is published",
        )
    return out


def _world(config: HostConfig) -> list[str]:
    world, camera, rflysim = config.world, config.camera, config.rflysim
    if world.get("enabled") is False:
        keys = [f"world.{k}" for k in world if k != "enabled"]
        if camera is not None:
            keys.append("[camera]")
        keys += _changed("rflysim", rflysim, RflySimConfig())
        keys += [f"tracking.{k}" for k in config.tracking]
        return _notice(keys, "[world] enabled = false")
    out: list[str] = []
    if world.get("ground_plane") is False:
        keys = [f"world.{k}" for k in _GROUND_PLANE_KEYS if k in world]
        out += _notice(keys, "[world] ground_plane = false")
    if config.tracking.get("enabled") is False:
        keys = [f"tracking.{k}" for k in config.tracking if k != "enabled"]
        if keys:
            return out + _notice(keys, "[tracking] enabled = false")
    if (
        camera is not None
        and rflysim.copter_id is None
        and rflysim.config is not None
        and camera.get("rflysim_sensor") is None
    ):
        out += _notice(["rflysim.config"], "no [rflysim] copter_id or [camera] rflysim_sensor")
    return out


def log_idle_settings(config: HostConfig, *, publishes: bool = True) -> list[str]:
    """``idle_settings``, each logged as one warning line (stderr, or the journal)."""
    notices = idle_settings(config, publishes=publishes)
    for notice in notices:
        LOGGER.warning("setting: %s", notice)
    return notices
