"""The world model's settings in a capture: the ``gizmo-host.world`` metadata record.

``gizmo-host record`` writes the resolved ``[camera]``, ``[world]``, selector and ``[rflysim]``
(with its Config.json range sensors), and ``[tracking]`` where it is not what a run without
the table resolves, one JSON text per key; ``gizmo-host replay --offline``
reads them back (``world_setup_from``), so replay needs neither the TOML nor the Config.json
file. The datagrams themselves reach the world through
``gizmo_host.app.world_build.DatagramRouter``.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from typing import Any

from fusion.simclock import SIM_MAX_SKEW_PPM
from gizmo_core import ConfigError, Selector
from gizmo_host.app.world_config import (
    WorldSetup,
    camera_from_table,
    tracking_from_table,
    world_from_table,
)
from gizmo_host.bridge.rfly_sources import RflySimSetup, rfly_receivers
from gizmo_host.errors import CaptureError
from gizmo_host.jsonl import json_text
from rfly_link.sensor_record import sensors_from_record

_KEYS = ("camera", "world", "selector", "rflysim")
# [rflysim] keys newer than the record, written only when they differ from their default
_RFLYSIM_DEFAULTS = (("poses", True), ("max_skew_ppm", SIM_MAX_SKEW_PPM))
_PLAIN = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
_PLAIN[type(None)] = "null"


# -- settings as metadata ------------------------------------------------------------------


def world_metadata(setup: WorldSetup) -> dict[str, str]:
    """The ``gizmo-host.world`` record for ``setup``."""
    rflysim: dict[str, Any] | None = None
    if setup.rflysim is not None:
        rflysim = dataclasses.asdict(setup.rflysim)
        for name, default in _RFLYSIM_DEFAULTS:  # records stay as they were before the key
            if rflysim[name] == default:
                del rflysim[name]
    values: dict[str, Any] = {
        "camera": dataclasses.asdict(setup.camera),
        "world": dataclasses.asdict(setup.world),
        "selector": dataclasses.asdict(setup.selector),
        "rflysim": rflysim,
    }
    if setup.pose_source == "mavlink":  # otherwise it follows from [rflysim]
        values["pose_source"] = setup.pose_source
    if setup.tracking != tracking_from_table({}, setup.pose_source):  # a [tracking] table
        tracking = setup.tracking
        values["tracking"] = (
            {"enabled": False} if tracking is None else dataclasses.asdict(tracking)
        )
    return {key: json_text(value) for key, value in values.items()}


def world_setup_from(record: Mapping[str, str], where: str) -> WorldSetup:
    """The settings in a ``gizmo-host.world`` record; ``CaptureError`` naming the key."""
    values: dict[str, Any] = {}
    for key in _KEYS:
        try:
            values[key] = json.loads(record[key])
        except KeyError:
            raise CaptureError(f"{where}: {key}: expected a value, got none") from None
        except (ValueError, RecursionError) as exc:  # nested beyond the parser: damage
            raise CaptureError(f"{where}: {key}: expected JSON: {exc}") from None
    key = "camera"
    try:
        camera = camera_from_table(values["camera"])
        key = "world"
        world = world_from_table(values["world"])
        key = "selector"
        selector = Selector(**_plain(Selector, values["selector"]))
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
    try:  # as the live run's [tracking] resolved, or as a run without the table
        tracking = tracking_from_table(json.loads(record.get("tracking", "{}")), pose_source)
    except (ConfigError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise CaptureError(f"{where}: tracking: {exc}") from None
    return WorldSetup(camera, world, selector, rflysim, pose_source, tracking)


def _rflysim(raw: dict[str, Any]) -> RflySimSetup:
    if "range_sensors" not in raw and "distance_sensors" in raw:  # captures before LiDAR
        raw["range_sensors"] = raw.pop("distance_sensors")
    sensors = sensors_from_record(raw.pop("range_sensors"), "range_sensors")
    setup = RflySimSetup(**_plain(RflySimSetup, raw), range_sensors=sensors)
    # Two receivers on one port cannot be live (the second bind fails); replayed, the later
    # took the port from the earlier (red team rt32: a sensor on the state port dropped
    # every pose)
    heard = [receiver.port for receiver in rfly_receivers(setup)]
    shared = sorted({port for port in heard if heard.count(port) > 1})
    if shared:
        raise ValueError(f"range_sensors: port {shared[0]} is another receiver's too")
    return setup


def _plain(cls: type, raw: object) -> dict[str, Any]:
    """``raw``, an object whose plain fields (a number, text or flag, or one of them or null)
    hold the kind ``cls`` declares: a capture is a file that may be damaged, and a value of
    the wrong kind would fail later, far from its key (``ValueError`` naming it)."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {raw!r}")
    hints = typing.get_type_hints(cls)
    for name, value in raw.items():
        kinds = typing.get_args(hints.get(name)) or (hints.get(name),)
        if not all(kind in _PLAIN for kind in kinds):
            continue  # not a plain field: its constructor checks it
        wanted = " or ".join(_PLAIN[kind] for kind in kinds)
        if float in kinds:
            kinds = (*kinds, int)  # JSON writes a whole number without its ".0"
        if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
            raise ValueError(f"{name}: expected {wanted}, got {value!r}")
    return raw
