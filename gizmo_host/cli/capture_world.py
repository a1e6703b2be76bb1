"""The world model in a capture: its settings as metadata, and recorded datagrams through it.

``gizmo-host record`` and ``gizmo-host replay --offline`` share this, so that replay feeds the
world exactly as the recorder's live host did:

- ``world_metadata`` / ``world_setup_from``: the resolved ``[camera]``, ``[world]``, selector
  and ``[rflysim]`` (with its Config.json distance sensors) as the ``gizmo-host.world``
  record, one JSON text per key; replay needs neither the TOML nor the Config.json file;
- ``DatagramRouter``: the ports ``gizmo-host run``'s receivers hear for these settings, each
  with the receiver's own sans-I/O pipeline (decode, fragment reassembly) and sender filter,
  turning a datagram into rfly_link events without a socket;
- ``OfflineReplay``: ``capture.offline.OfflineHost`` plus the live ``WorldService`` on a
  manual clock (``FakeScheduler``). The host's timers and the world's (snapshot ticks,
  on-change checks, deadlines) run in one time order, so the output is deterministic.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Coroutine, Iterable, Iterator, Mapping
from typing import Any

from fusion import CameraConfig, Selector, WorldConfig, WorldSnapshot
from fusion import ConfigError as FusionConfigError
from gizmo_host.app.world import DatagramRouter, apply_events, build_world, world_stats
from gizmo_host.app.world_config import WorldSetup
from gizmo_host.capture.lines import HostMessage, encode_line
from gizmo_host.capture.offline import OfflineHost
from gizmo_host.capture.reader import CaptureInfo, CaptureMessage, Datagram, HostLine
from gizmo_host.errors import CaptureError
from gizmo_host.live.rfly_sources import RflySimSetup
from gizmo_host.live.timing import FakeScheduler
from gizmo_host.live.world import WorldService
from rfly_link.config import VisionSensorConfig

_KEYS = ("camera", "world", "selector", "rflysim")


# -- settings as metadata ------------------------------------------------------------------


def world_metadata(setup: WorldSetup) -> dict[str, str]:
    """The ``gizmo-host.world`` record for ``setup``."""
    rflysim: dict[str, Any] | None = None
    if setup.rflysim is not None:
        rflysim = dataclasses.asdict(setup.rflysim)
    values = {
        "camera": dataclasses.asdict(setup.camera),
        "world": dataclasses.asdict(setup.world),
        "selector": dataclasses.asdict(setup.selector),
        "rflysim": rflysim,
    }
    return {key: json.dumps(value, separators=(",", ":")) for key, value in values.items()}


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
        camera = CameraConfig(**values["camera"])
        key = "world"
        world = WorldConfig.from_mapping(values["world"])
        key = "selector"
        selector = Selector(**values["selector"])
        key = "rflysim"
        raw = values["rflysim"]
        rflysim = None if raw is None else _rflysim(raw)
    except KeyError as exc:
        raise CaptureError(f"{where}: {key}: expected a value for {exc}, got none") from None
    except (FusionConfigError, TypeError, ValueError, AttributeError) as exc:
        raise CaptureError(f"{where}: {key}: {exc}") from None
    return WorldSetup(camera, world, selector, rflysim)


def _rflysim(raw: dict[str, Any]) -> RflySimSetup:
    if "range_sensors" not in raw and "distance_sensors" in raw:  # captures before LiDAR
        raw["range_sensors"] = raw.pop("distance_sensors")
    sensors = tuple(_sensor(entry) for entry in raw.pop("range_sensors"))
    return RflySimSetup(**raw, range_sensors=sensors)


def _sensor(entry: dict[str, Any]) -> VisionSensorConfig:
    tuples = {k: tuple(v) for k, v in entry.items() if isinstance(v, list)}
    return VisionSensorConfig(**{**entry, **tuples})


# -- offline replay ------------------------------------------------------------------------


class OfflineReplay:
    """A capture through the host and, when it ran one, the world model: ``replay(messages)``."""

    def __init__(self, info: CaptureInfo, where: str = "capture") -> None:
        self.world: WorldService | None = None
        self.router: DatagramRouter | None = None
        self._scheduler: FakeScheduler | None = None
        listener = None
        extra = None
        if info.world is not None:
            setup = world_setup_from(info.world, f"{where}: gizmo-host.world")
            self._scheduler = FakeScheduler(0)
            self.world, self.router = build_world(
                setup, self._scheduler, receivers=False, requests=False
            )
            listener = self._on_host
            extra = self._world_stats
        self.host = OfflineHost(info.settings, listener=listener, extra_stats=extra)
        if self.world is not None:
            self.world.add_listener(self._on_snapshot)

    def replay(self, messages: Iterable[CaptureMessage]) -> Iterator[bytes]:
        """Every line for ``messages``, then the final ``stats`` line."""
        for message in messages:
            yield from self.feed(message)
        end_ns = self.host.now_ns
        if end_ns is not None and self.world is not None:
            self._advance(end_ns)
        yield from self.host.finish()

    def feed(self, message: CaptureMessage) -> list[bytes]:
        host = self.host
        if isinstance(message, HostLine):
            host.apply(message)
            return []
        if self.world is None:
            return host.feed(message)
        self._advance(message[0])
        host.apply(message)
        if isinstance(message, Datagram) and self.router is not None:
            events = self.router.feed(message.port, message.sender, message.data, message.rx_ns)
            apply_events(self.world, events)
        return host.take()

    def _advance(self, t: int) -> None:
        """The host's timers and the world's, in time order up to ``t`` (the world's first
        at equal times: they were armed earlier)."""
        host, scheduler = self.host, self._scheduler
        assert scheduler is not None and self.world is not None
        if host.now_ns is None:  # as ``record`` does: the world starts, then the link
            host.start(t)
            scheduler.advance(t - scheduler.now_ns())
            _run_now(self.world.start())
        while True:
            host_due = host.next_due_ns()
            world_due = min(scheduler.pending(), default=None)
            host_first = host_due is not None and (world_due is None or host_due < world_due)
            due = host_due if host_first else world_due
            if due is None or due > t:
                break
            scheduler.advance(max(0, due - scheduler.now_ns()))  # runs the world's due timers
            if host_first:
                host.run_due(due)
        scheduler.advance(max(0, t - scheduler.now_ns()))
        host.advance(t)

    def _on_host(self, message: HostMessage) -> None:
        assert self.world is not None
        self.world.on_gizmo(message)

    def _on_snapshot(self, snapshot: WorldSnapshot) -> None:
        self.host.emit_line(encode_line(snapshot.to_dict()))

    def _world_stats(self) -> dict[str, Any]:
        assert self.world is not None
        return {"world": world_stats(self.world, self.router)}


def _run_now(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine that never waits (``WorldService.start`` without receivers)."""
    try:
        coroutine.send(None)
    except StopIteration:
        return
    coroutine.close()
    raise RuntimeError("expected a coroutine that completes without waiting")
