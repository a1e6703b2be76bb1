"""The host's settings as values (``HostConfig``): one frozen section per TOML table.

Each field's default comes from the settings table (``gizmo_host.app.settings``); reading a
file and flags into these, checked, is :mod:`gizmo_host.app.host_config`, which re-exports them.
The field annotations stay strings (``from __future__ import annotations``): the loader checks
each value against its field's type as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gizmo_core import ConfigError, Selector
from gizmo_host.app.settings import default
from gizmo_host.app.world_config import RflySimConfig, WorldSetup, resolve_world
from gizmo_host.live.link_config import LinkConfig, PipelineConfig
from gizmo_host.stream.store import parse_selector
from gizmo_host.zenoh.config import ZenohConfig


@dataclass(frozen=True, slots=True)
class SerialConfig:
    path: str | None = default("serial.path")
    baudrate: int = default("serial.baudrate")
    silent_after_s: float = default("serial.silent_after_s")
    backoff_min_s: float = default("serial.backoff_min_s")
    backoff_max_s: float = default("serial.backoff_max_s")
    transport_delay_ms: float | None = default("serial.transport_delay_ms")


@dataclass(frozen=True, slots=True)
class ClockConfig:
    max_skew_ppm: float = default("clock.max_skew_ppm")
    phase_error_threshold_ms: float = default("clock.phase_error_threshold_ms")
    lock_after_ms: float = default("clock.lock_after_ms")


@dataclass(frozen=True, slots=True)
class StoreConfig:
    ttl_ms: float = default("store.ttl_ms")
    reset_hold_ms: float = default("store.reset_hold_ms")
    ttl_ms_by_type: Mapping[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class VerdictConfig:
    select: str = default("verdict.select")
    interval_s: float = default("verdict.interval_s")


@dataclass(frozen=True, slots=True)
class PublishConfig:
    stdout: bool = default("publish.stdout")
    unix_socket: str | None = default("publish.unix_socket")
    unix_max_buffer_bytes: int = default("publish.unix_max_buffer_bytes")
    unix_max_clients: int = default("publish.unix_max_clients")
    udp: str | None = default("publish.udp")
    stats_interval_s: float = default("publish.stats_interval_s")


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    event_loop: str = default("runtime.event_loop")
    wakeup_slice_us: int = default("runtime.wakeup_slice_us")


@dataclass(frozen=True, slots=True)
class MavlinkConfig:
    """``[mavlink]``: the autopilot link, on with a ``url`` unless ``enabled = false``; see
    docs/mavlink.md."""

    enabled: bool = default("mavlink.enabled")
    url: str | None = default("mavlink.url")
    send_to: str | None = default("mavlink.send_to")
    target_system: int = default("mavlink.target_system")
    target_component: int = default("mavlink.target_component")
    pose: bool = default("mavlink.pose")
    landing_target: str = default("mavlink.landing_target")
    rate_hz: float = default("mavlink.rate_hz")
    signing_key_file: str | None = default("mavlink.signing_key_file")

    @property
    def on(self) -> bool:
        return self.enabled and self.url is not None

    @property
    def gives_pose(self) -> bool:
        return self.on and self.pose


@dataclass(frozen=True, slots=True)
class FoxgloveConfig:
    """``[foxglove]``: the live Foxglove view (off unless ``enabled``); see docs/foxglove.md."""

    enabled: bool = default("foxglove.enabled")
    listen: str = default("foxglove.listen")
    client_backlog: int = default("foxglove.client_backlog")


@dataclass(frozen=True, slots=True)
class HostConfig:
    """Every host setting, checked: one section per TOML table."""

    serial: SerialConfig = field(default_factory=SerialConfig)
    clock: ClockConfig = field(default_factory=ClockConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)
    publish: PublishConfig = field(default_factory=PublishConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    rflysim: RflySimConfig = field(default_factory=RflySimConfig)
    mavlink: MavlinkConfig = field(default_factory=MavlinkConfig)
    world: Mapping[str, Any] = field(default_factory=dict)  # checked by world_setup()
    tracking: Mapping[str, Any] = field(default_factory=dict)  # checked by world_setup()
    camera: Mapping[str, Any] | None = None  # None: no [camera], no world model
    zenoh: ZenohConfig = field(default_factory=ZenohConfig)
    foxglove: FoxgloveConfig = field(default_factory=FoxgloveConfig)

    @property
    def selector(self) -> Selector:
        return parse_selector(self.verdict.select)

    def world_setup(self) -> WorldSetup | None:
        """The world model's settings, resolved (Config.json read); None when it is off."""
        return resolve_world(
            self.camera,
            self.world,
            self.rflysim,
            self.store,
            self.selector,
            mavlink_pose=self.mavlink.gives_pose,
            tracking_table=self.tracking,
        )

    def link(self) -> LinkConfig:
        """The serial link's settings (``serial.path`` must be set)."""
        serial = self.serial
        if serial.path is None:
            raise ConfigError(
                "serial.path: expected a device path (--serial PATH or [serial] path)",
                "serial.path",
            )
        return LinkConfig(
            serial.path,
            baudrate=serial.baudrate,
            silent_after_s=serial.silent_after_s,
            backoff_min_s=serial.backoff_min_s,
            backoff_max_s=serial.backoff_max_s,
        )

    def pipeline(self) -> PipelineConfig:
        delay_ms = self.serial.transport_delay_ms
        return PipelineConfig(
            ttl_ms=self.store.ttl_ms,
            ttl_ms_by_type=dict(self.store.ttl_ms_by_type),
            reset_hold_ms=self.store.reset_hold_ms,
            max_skew_ppm=self.clock.max_skew_ppm,
            phase_error_threshold_ms=self.clock.phase_error_threshold_ms,
            lock_after_ms=self.clock.lock_after_ms,
            transport_delay_ns=None if delay_ms is None else round(delay_ms * 1e6),
            verdict_interval_s=self.verdict.interval_s,
        )
