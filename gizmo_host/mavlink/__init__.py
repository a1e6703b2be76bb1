"""MAVLink to the autopilot: its pose in, LANDING_TARGET out (the ``mavlink`` extra).

pymavlink is imported in this package only (an import contract says so), and only for its
codec: the transports are our own, on the asyncio loop (``transport``), for pymavlink-style
URLs (``urls``). ``session`` keeps one autopilot link (heartbeats, stream requests, the
autopilot's clock on ours by TIMESYNC), ``pose`` turns its messages into fusion poses,
and ``landing`` sends LANDING_TARGET for the world's selected target. The autopilot's side,
played in tests and the demo, is a rig's (:mod:`gizmo_host.rigs.autopilot`). docs/mavlink.md
describes the whole.
"""

from .landing import Held, LandingFields, LandingTargetSender, Profile
from .pose import MavlinkPoseSource
from .session import AutopilotSession
from .transport import MavlinkTransport
from .urls import Endpoint, Kind, parse_url

__all__ = [
    "AutopilotSession",
    "Endpoint",
    "Held",
    "Kind",
    "LandingFields",
    "LandingTargetSender",
    "MavlinkPoseSource",
    "MavlinkTransport",
    "Profile",
    "parse_url",
]
