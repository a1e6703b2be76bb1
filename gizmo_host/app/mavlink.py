"""``[mavlink]`` in the host: the autopilot link plugged into :class:`~gizmo_host.app.host.Host`.

One :class:`MavlinkLink` per host, built by ``Host`` itself when ``[mavlink] url`` is set, so
``run``, ``record`` and the demo all get it. It owns the transport (``gizmo_host.mavlink``),
the :class:`~gizmo_host.mavlink.AutopilotSession` (HEARTBEAT as an onboard controller,
TIMESYNC, stream requests), the :class:`~gizmo_host.mavlink.MavlinkPoseSource` and, unless
``landing_target = "off"``, the :class:`~gizmo_host.mavlink.LandingTargetSender`. It plugs in
through the host's own seams only:

- poses go to the world model (``WorldService.apply``) when ``[world]`` takes its pose from
  the autopilot (``pose_source = "mavlink"``, or MAVLink the only source);
- every published world snapshot is offered to the sender (a world listener);
- a second voice for the autopilot (a spoofer with its ids, or a second autopilot that
  ``target_system = 0`` would also take) is a ``SourceConflict`` for the world: it HOLDs
  ``pose_conflict`` while the session says the conflict lasts, and one second more;
- the link's UP/DOWN transitions are published as ``link`` lines (the serial link's shape,
  ``path`` = ``"mavlink:" + the endpoint``), and the session's, clock's, pose's and sender's
  counters are the ``mavlink`` key of the ``stats`` line (``Host.add_stats``).

With ``signing_key_file``, the key is read once here (the config check already read it) and
every frame is signed and checked (``gizmo_host.mavlink.signing``).

A URL that does not parse is a config error before anything starts; an autopilot that never
answers is a transport that keeps retrying and a world that HOLDs ``link_down`` (a
:class:`fusion.PoseLinkStatus` while the autopilot's heartbeat is missing) and ``no_pose``;
once it is heard, ``clock_not_locked`` until the TIMESYNC mapping locks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from fusion import PoseLinkStatus, SourceConflict, WorldSnapshot
from gizmo_host.app.host_config import MavlinkConfig
from gizmo_host.bridge.world_service import WorldService
from gizmo_host.mavlink import (
    AutopilotSession,
    LandingTargetSender,
    MavlinkPoseSource,
    MavlinkTransport,
    parse_url,
)
from gizmo_host.mavlink.signing import Signer, read_key_file
from gizmo_host.timing import Scheduler

Publish = Callable[[dict[str, Any]], None]


class MavlinkLink:
    """The autopilot link of one host (see the module docstring)."""

    def __init__(
        self,
        config: MavlinkConfig,
        scheduler: Scheduler,
        publish: Publish,
        *,
        world: WorldService | None = None,
        pose_to_world: bool = False,
    ) -> None:
        if config.url is None:
            raise ValueError("mavlink.url: expected the autopilot's connection string")
        self.config = config
        self.endpoint = parse_url(config.url, config.send_to)
        self.path = f"mavlink:{self.endpoint.describe()}"
        self._scheduler = scheduler
        self._publish = publish
        self.transport = MavlinkTransport(self.endpoint, self._feed, clock=scheduler.now_ns)
        key_file = config.signing_key_file
        self.session = AutopilotSession(
            self.transport.send,
            scheduler,
            target_system=config.target_system,
            target_component=config.target_component,
            signer=None if key_file is None else Signer(read_key_file(key_file)),
            on_link=self._on_link,
            on_conflict=self._on_conflict,
        )
        self._world = world if pose_to_world and config.pose else None
        on_pose = None if self._world is None else self._world.apply
        self.poses = MavlinkPoseSource(self.session, on_pose, on_conflict=self._on_conflict)
        self.sender: LandingTargetSender | None = None
        if config.landing_target != "off":
            self.sender = LandingTargetSender(
                self.session,
                config.landing_target,
                attitude_at=self.poses.attitude_at,
                rate_hz=config.rate_hz,
            )
            if world is not None:
                world.add_listener(self._on_snapshot)
        self._task: asyncio.Task[None] | None = None
        self._up = False
        self.transitions = 0

    # -- wiring ----------------------------------------------------------------------------

    def _feed(self, data: bytes, host_ns: int, source: tuple[str, int] | None) -> None:
        self.session.feed(data, host_ns, source)

    def _on_conflict(self, host_ns: int, detail: str) -> None:
        if self._world is not None:
            self._world.apply(SourceConflict(host_ns, "pose", f"mavlink: {detail}"))

    def _on_snapshot(self, snapshot: WorldSnapshot) -> None:
        if self.sender is not None:
            self.sender.offer(snapshot, self._scheduler.now_ns())

    def _on_link(self, up: bool, host_ns: int, reason: str) -> None:
        previous = "UP" if self._up else "DOWN"
        self._up = up
        self.transitions += 1
        if self._world is not None:
            self._world.apply(PoseLinkStatus(host_ns, up, reason))
        self._publish(
            {
                "type": "link",
                "state": "UP" if up else "DOWN",
                "previous": previous,
                "host_ns": host_ns,
                "reason": reason,
                "path": self.path,
                "transitions": self.transitions,
            }
        )

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Open the link (retrying in the background) and start the session's timers."""
        if self._task is not None:
            return
        if self._world is not None:  # the world's pose link is down until a heartbeat
            self._world.apply(PoseLinkStatus(self._scheduler.now_ns(), False, "not heard yet"))
        self.session.start()
        self._task = asyncio.create_task(self.transport.run(), name="mavlink transport")

    async def stop(self) -> None:
        self.session.stop()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- counters --------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The ``mavlink`` key of the ``stats`` line."""
        out: dict[str, Any] = {
            "path": self.path,
            "transport": self.transport.stats(),
            **self.session.stats(self._scheduler.now_ns()),
            "pose": self.poses.stats(),
        }
        if self.sender is not None:
            out["landing_target"] = self.sender.stats()
        return {"mavlink": out}
