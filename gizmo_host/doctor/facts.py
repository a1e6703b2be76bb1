"""What ``gizmo-host doctor`` found on the machine: plain, frozen values, no behaviour.

Every field that could not be read is ``None`` (not known), never a guess; the checks say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class UsbIds:
    vendor: str
    product: str
    serial: str | None


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """The serial device node and what udev and the kernel say about it."""

    path: str
    exists: bool
    is_link: bool = False
    target: str | None = None  # the node the path resolves to
    is_char: bool = False
    mode: int | None = None
    owner: str | None = None
    group: str | None = None
    gid: int | None = None
    rdev: tuple[int, int] | None = None
    driver: str | None = None  # /sys/class/tty/NAME/device/driver
    usb: UsbIds | None = None
    rule_files: tuple[str, ...] = ()  # gizmo-host udev rules installed
    rule_names_device: bool | None = None  # a rule matches this adapter's serial (None: unknown)
    open_errno: int | None = None  # opening it read-only here: None when it opened
    open_error: str | None = None  # the startup diagnostics' explanation of that error


@dataclass(frozen=True, slots=True)
class AccessFacts:
    user: str
    is_root: bool
    groups: tuple[str, ...]  # this process's groups
    group_members: tuple[str, ...]  # members of the device's group in /etc/group
    unit_path: str | None  # the installed gizmo-host@.service, None when not installed
    device_allow: tuple[str, ...] = ()  # its DeviceAllow= values (drop-ins included)


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int
    name: str
    how: str  # "open" or "flock"


@dataclass(frozen=True, slots=True)
class HolderFacts:
    holders: tuple[Holder, ...]
    unreadable: int  # processes whose descriptors this user cannot read
    grabbers_running: tuple[Holder, ...] = ()  # known port grabbers running, holding or not


@dataclass(frozen=True, slots=True)
class StreamFacts:
    """The serial stream as read for ``seconds`` at ``baudrate`` (read only, never written)."""

    baudrate: int
    seconds: float
    skipped: str | None = None  # why it was not read (None: it was)
    bytes_in: int = 0
    frames_ok: int = 0
    crc_errors: int = 0
    header_errors: int = 0
    bytes_discarded: int = 0
    lost: int = 0
    resets: int = 0
    clock_status: str | None = None
    skew_ppm: float | None = None
    latency_ms: tuple[float, ...] = ()  # the board's age_ms of each frame
    rates_tried: dict[int, int] = field(default_factory=dict)  # other baud rate -> frames


@dataclass(frozen=True, slots=True)
class RflyFacts:
    config: str | None  # [rflysim] config
    config_error: str | None = None
    camera_issues: tuple[str, ...] = ()  # [camera] against the Config.json sensor
    datagrams: dict[str, int] = field(default_factory=dict)  # "name port" -> datagrams heard
    odometry_answered: bool | None = None  # None: not asked


@dataclass(frozen=True, slots=True)
class MavlinkFacts:
    url: str | None  # [mavlink] url; None: not configured
    target_system: int | None = None  # [mavlink] target_system (0: any autopilot)
    error: str | None = None
    heartbeat: bool = False
    autopilot: str | None = None
    rtt_ms: float | None = None
    offset_ms: float | None = None
    rates_hz: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SocketPeer:
    pid: int | None  # None: the kernel did not say
    name: str | None  # /proc/PID/comm (None: not readable)
    unread_bytes: int | None


@dataclass(frozen=True, slots=True)
class SocketClients:
    """What the running host said to the doctor's own connection (its ``socket`` object)."""

    error: str | None = None  # why it could not be asked (None: it answered)
    refused: bool = False  # the doctor itself was refused: every slot is taken
    clients: int = 0  # other clients connected (the doctor's own connection not counted)
    max_clients: int | None = None
    refused_total: int = 0  # clients refused since the host started
    evicted: int = 0
    dropped: int = 0
    peers: tuple[SocketPeer, ...] = ()  # the other clients


@dataclass(frozen=True, slots=True)
class ServiceFacts:
    unit: str  # gizmo-host@NAME.service
    systemctl: dict[str, str] | None  # `systemctl show` properties; None: no systemd here
    socket_path: str
    socket_mode: int | None = None  # None: no socket
    socket_group: str | None = None
    clients: SocketClients | None = None  # None: no socket to ask


@dataclass(frozen=True, slots=True)
class Facts:
    device: DeviceFacts
    access: AccessFacts
    holders: HolderFacts
    stream: StreamFacts
    rfly: RflyFacts
    mavlink: MavlinkFacts
    service: ServiceFacts
    extra: dict[str, Any] = field(default_factory=dict)
    settings: tuple[str, ...] | None = None  # settings that would do nothing (None: no file)
