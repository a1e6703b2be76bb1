"""``[zenoh]``: the session (mode, endpoints, scouting, a Zenoh configuration file of the
user's for TLS and access control), the vehicle's key prefix, ROS 2 and the line size limit.

Pure: no ``zenoh`` import. ``ZenohConfig`` checks itself when built (``__post_init__``), so a
TOML file, a flag and a test get the same one-line error naming the key. ``session_settings``
is what ``zenoh.Config.insert_json5`` is given, key by key, over ``config``'s file if any.
"""

from __future__ import annotations

import json
import re
import socket
from dataclasses import dataclass
from typing import Any

from gizmo_core import ConfigError

MODES = ("peer", "client")
ROS2_MODES = ("off", "bridge", "rmw_zenoh")
MESSAGE_TYPES = ("world", "result", "link", "verdict", "stats", "version")
ROOT = "gizmo"
# A key chunk: no key-expression syntax (/ * $ ? #), no whitespace, not empty.
_CHUNK = re.compile(r"^[^/*$?#\s]+$")
# "tcp/127.0.0.1:7447", "udp/[::1]:7447", ...: Zenoh's link protocols (another never opens)
_ENDPOINT = re.compile(r"^(tcp|udp|tls|quic|ws|unixsock-stream|unixpipe|serial|vsock)/\S+$")
MAX_ROS2_DOMAIN = 232  # ROS 2's domain ids (DDS' port arithmetic stops there)
MAX_LINE_BYTES = 64 * 1024  # the default: a world line with 64 targets is about 30 kB
LINE_BYTES_LIMITS = (1024, 16 * 1024 * 1024)


def _fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"zenoh.{key}: expected {expected}, got {value!r}", f"zenoh.{key}")


def _endpoints(key: str, value: Any) -> tuple[str, ...]:
    """A list of endpoints; a string (a flag's value) is a comma-separated list."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise _fail(key, 'a list of endpoints such as ["tcp/127.0.0.1:7447"]', value)
    out = []
    for item in items:
        text = item.strip() if isinstance(item, str) else item
        if not isinstance(text, str) or not _ENDPOINT.match(text):
            raise _fail(key, 'endpoints such as "tcp/127.0.0.1:7447"', item)
        out.append(text)
    return tuple(out)


def vehicle_chunk(name: str) -> str:
    """``name`` as one key chunk: what a key expression cannot hold becomes ``_``."""
    return re.sub(r"[/*$?#\s]", "_", name) or "_"


@dataclass(frozen=True, slots=True)
class ZenohConfig:
    """``enabled``: publish at all; ``vehicle``: the key prefix's chunk (None: the hostname);
    ``queue_lines``: what waits for the session's thread before the oldest is dropped;
    ``config``: a Zenoh configuration file (json5) the session starts from (TLS, mTLS,
    access control, ...), under ``mode``, ``multicast_scouting`` and, when given, the
    endpoints; ``max_line_bytes``: a longer line is not published, nor taken by the fleet
    view."""

    enabled: bool = False
    mode: str = "peer"
    connect: tuple[str, ...] = ()
    listen: tuple[str, ...] = ()
    multicast_scouting: bool = False
    vehicle: str | None = None
    ros2: str = "off"
    ros2_domain: int = 0
    queue_lines: int = 256
    config: str | None = None
    max_line_bytes: int = MAX_LINE_BYTES

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise _fail("mode", " or ".join(repr(m) for m in MODES), self.mode)
        object.__setattr__(self, "connect", _endpoints("connect", self.connect))
        object.__setattr__(self, "listen", _endpoints("listen", self.listen))
        if self.vehicle is not None and not _CHUNK.match(self.vehicle):
            raise _fail("vehicle", "a name without / * $ ? # or spaces", self.vehicle)
        if self.ros2 not in ROS2_MODES:
            raise _fail("ros2", " or ".join(repr(m) for m in ROS2_MODES), self.ros2)
        if self.config is not None and (not isinstance(self.config, str) or not self.config):
            raise _fail("config", "a Zenoh configuration file's path", self.config)
        low, high = LINE_BYTES_LIMITS
        if type(self.max_line_bytes) is not int or not low <= self.max_line_bytes <= high:
            raise _fail("max_line_bytes", f"a number of bytes from {low} to {high}",
                        self.max_line_bytes)  # fmt: skip
        if self.mode == "client" and not self.connect:
            raise ConfigError(
                "zenoh.connect: expected a router's endpoint in client mode, got none",
                "zenoh.connect",
            )

    @property
    def vehicle_name(self) -> str:
        return self.vehicle if self.vehicle is not None else vehicle_chunk(socket.gethostname())

    def session_settings(self) -> list[tuple[str, str]]:
        """``(path, json5 value)`` pairs for ``zenoh.Config.insert_json5``."""
        return session_settings(self.mode, self.connect, self.listen, self.multicast_scouting)


def session_settings(
    mode: str, connect: tuple[str, ...], listen: tuple[str, ...], multicast: bool
) -> list[tuple[str, str]]:
    """A session's settings: multicast scouting only when asked for (on a vehicle's network
    it would find every other robot's session), endpoints as given. Over a configuration
    file, these replace the file's mode and scouting, and its endpoints when given."""
    pairs = [
        ("mode", json.dumps(mode)),
        ("scouting/multicast/enabled", json.dumps(multicast)),
    ]
    if connect:
        pairs.append(("connect/endpoints", json.dumps(list(connect))))
    if listen:
        pairs.append(("listen/endpoints", json.dumps(list(listen))))
    return pairs


def key(vehicle: str, message_type: str) -> str:
    """``gizmo/<vehicle>/<type>``: where a host publishes its lines of ``message_type``."""
    return f"{ROOT}/{vehicle}/{message_type}"


def latest_key(vehicle: str) -> str:
    """The queryable that answers with the vehicle's newest world line."""
    return f"{ROOT}/{vehicle}/world/latest"


def vehicle_of(key_expr: str) -> str | None:
    """The vehicle of a ``gizmo/<vehicle>/...`` key, else None."""
    parts = key_expr.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == ROOT else None
