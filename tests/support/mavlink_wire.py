"""A fake autopilot wire on a manual clock for the MAVLink session tests: bytes both ways, and the
message builders they share.
"""

from __future__ import annotations

import random
import struct

from pymavlink.dialects.v20 import common as mavlink

from gizmo_host.mavlink import AutopilotSession, MavlinkPoseSource
from gizmo_host.mavlink.session import DEFAULT_STREAMS
from gizmo_host.rigs.autopilot.standin import StandinAutopilot
from gizmo_host.timing import ManualScheduler
from tests.support.mavlink_rig import circling

MS = 1_000_000


S = 1_000_000_000


AUTOPILOT = ("127.0.0.1", 14580)  # the stand-in's datagrams come from here


class Wire:
    """Host <-> stand-in on the manual clock, ``down_ms`` to the autopilot, ``up_ms`` back. Each
    stand-in message is one datagram from ``source`` (``None``: a byte stream); every datagram
    the session sends is kept in ``sent_to`` with its address."""

    def __init__(
        self,
        *,
        skew_ppm: float = 0.0,
        boot_at_start_ms: float = 7_000.0,
        streams=DEFAULT_STREAMS,
        source=AUTOPILOT,
        session_kw=None,
        **kw,
    ):
        self.clock = ManualScheduler()
        self.address = source
        self.sent_to: list[tuple[bytes, object]] = []
        self.conflicts: list[tuple[int, str]] = []
        self.tamper = None  # bytes -> bytes | None: what the autopilot's datagram becomes
        self.down_ms = self.up_ms = 1.0  # or (lo, hi): uniform per message
        self.random = random.Random(5)
        self._last_due = [0, 0]
        self.cut = False
        self.links: list[tuple[bool, int, str]] = []
        self.link_listeners: list = []  # (up, host_ns, reason) -> None, as the world is told
        self.session = AutopilotSession(
            self._to_autopilot,
            self.clock,
            streams=streams,
            on_link=self._on_link,
            on_conflict=lambda *a: self.conflicts.append(a),
            **(session_kw or {}),
        )
        self.poses = []
        self.source = MavlinkPoseSource(self.session, self.poses.append)
        self.autopilot = StandinAutopilot(
            None,
            circling,
            send=self._to_host,
            scheduler=self.clock,
            clock=self.clock.now_ns,
            skew_ppm=skew_ppm,
            boot_at_start_ms=boot_at_start_ms,
            **kw,
        )
        self.session.start()
        self.autopilot.start()

    def _on_link(self, up: bool, host_ns: int, reason: str) -> None:
        self.links.append((up, host_ns, reason))
        for listener in self.link_listeners:
            listener(up, host_ns, reason)

    def _due(self, delay_ms, direction: int) -> int:
        """``delay_ms`` from now: a number, or (lo, hi) drawn per message, order kept."""
        if isinstance(delay_ms, tuple):
            delay_ms = self.random.uniform(*delay_ms)
        due = max(self._last_due[direction], self.clock.now_ns() + round(delay_ms * MS))
        self._last_due[direction] = due
        return due

    def _to_autopilot(self, data: bytes, to=None) -> bool:
        self.sent_to.append((data, to))
        if to != self.address:
            return self.address is None  # a udpin link sends to the bound autopilot only
        if not self.cut:
            due = self._due(self.down_ms, 0)
            self.clock.call_at_ns(due, lambda: self.autopilot.feed(data, self.clock.now_ns()))
        return True

    def _to_host(self, data: bytes) -> bool:
        if self.tamper is not None:
            data = self.tamper(data)
            if data is None:
                return True
        if not self.cut:
            due = self._due(self.up_ms, 1)
            self.clock.call_at_ns(
                due, lambda: self.session.feed(data, self.clock.now_ns(), self.address)
            )
        return True

    def inject(self, data: bytes, source=AUTOPILOT) -> None:
        """A datagram from ``source`` now (a spoofer, a second vehicle, junk)."""
        self.session.feed(data, self.clock.now_ns(), source)

    def run(self, seconds: float) -> None:
        self.clock.advance(round(seconds * S))

    def mapping_error_ms(self) -> float:
        now = self.clock.now_ns()
        mapped = self.session.estimator.to_autopilot_ns(now)
        assert mapped is not None
        return (mapped - self.autopilot.boot_ns(now)) / MS


PAIR = (mavlink.MAVLINK_MSG_ID_ATTITUDE_QUATERNION, mavlink.MAVLINK_MSG_ID_LOCAL_POSITION_NED)


def _v2(msg_id: int, payload: bytes, system: int = 1, component: int = 1) -> bytes:
    header = struct.pack("<BBBBBBB", 0xFD, len(payload), 0, 0, 0, system, component)
    return header + struct.pack("<I", msg_id)[:3] + payload + b"\x00\x00"
