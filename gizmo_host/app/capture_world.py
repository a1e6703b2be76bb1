"""The world model's settings in a capture: the ``gizmo-host.world`` metadata record.

``gizmo-host record`` writes the resolved ``[camera]``, ``[world]``, selector and ``[rflysim]``
(with its Config.json range sensors), one JSON text per key; ``gizmo-host replay --offline``
reads them back (``world_setup_from``), so replay needs neither the TOML nor the Config.json
file. The datagrams themselves reach the world through
``gizmo_host.app.world_build.DatagramRouter``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from gizmo_core import ConfigError, Selector
from gizmo_host.app.world_config import (
    WorldSetup,
    camera_from_table,
    tracking_from_table,
    world_from_table,
)
from gizmo_host.bridge.rfly_sources import RflySimSetup
from gizmo_host.errors import CaptureError
from gizmo_host.jsonl import json_text
from rfly_link.config_json import VisionSensorConfig

_KEYS = ("camera", "world", "selector", "rflysim")


# -- settings as metadata ------------------------------------------------------------------


def world_metadata(setup: WorldSetup) -> dict[str, str]:
    """The ``gizmo-host.world`` record for ``setup``."""
    rflysim: dict[str, Any] | None = None
    if setup.rflysim is not None:
        rflysim = dataclasses.asdict(setup.rflysim)
        if rflysim["poses"]:
            del rflysim["poses"]  # the default: records stay as they were before the key
    values: dict[str, Any] = {
        "camera": dataclasses.asdict(setup.camera),
        "world": dataclasses.asdict(setup.world),
        "selector": dataclasses.asdict(setup.selector),
        "rflysim": rflysim,
    }
    if setup.pose_source == "mavlink":  # otherwise it follows from [rflysim]
        values["pose_source"] = setup.pose_source
    return {key: json_text(value) for key, value in values.items()}


def world_setup_from(record: Mapping[str, str], where: str) -> WorldSetup:
    """The settings in a ``gizmo-host.world`` record; ``CaptureError`` naming the key."""
    values: dict[str, Any] = {}
    for key in _KEYS:
        try:
            values[key] = json.loads(record[key])
        except KeyError:
            raise CaptureError(f"{where}: {key}: expected a value, got none") from None
        except ValueError as exc:
            raise CaptureError(f"{where}: {key}: expected JSON: {exc}") from None
    key = "camera"
    try:
        camera = camera_from_table(values["camera"])
        key = "world"
        world = world_from_table(values["world"])
        key = "selector"
        selector = Selector(**values["selector"])
        key = "rflysim"
        raw = values["rflysim"]
        rflysim = None if raw is None else _rflysim(raw)
    except KeyError as exc:
        raise CaptureError(f"{where}: {key}: expected a value for {exc}, got none") from None
    except (ConfigError, TypeError, ValueError, AttributeError) as exc:
        raise CaptureError(f"{where}: {key}: {exc}") from None
    pose_source = "rflysim" if rflysim is not None and rflysim.poses else None
    if "pose_source" in record:  # the autopilot's poses (not in the capture: MAVLink is live)
        pose_source = "mavlink"
    tracking = tracking_from_table({}, pose_source)  # as a live run without [tracking]
    return WorldSetup(camera, world, selector, rflysim, pose_source, tracking)


def _rflysim(raw: dict[str, Any]) -> RflySimSetup:
    if "range_sensors" not in raw and "distance_sensors" in raw:  # captures before LiDAR
        raw["range_sensors"] = raw.pop("distance_sensors")
    sensors = tuple(_sensor(entry) for entry in raw.pop("range_sensors"))
    return RflySimSetup(**raw, range_sensors=sensors)


def _sensor(entry: dict[str, Any]) -> VisionSensorConfig:
    tuples = {k: tuple(v) for k, v in entry.items() if isinstance(v, list)}
    return VisionSensorConfig(**{**entry, **tuples})
