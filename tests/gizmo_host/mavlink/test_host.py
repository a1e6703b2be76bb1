"""``[mavlink]`` in the host: its settings, the link plugged into ``Host`` (poses into the world,
``link`` lines, the ``mavlink`` stats key), and the autopilot that never answers."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from gizmo_core import ConfigError
from gizmo_host.app.host import Host
from gizmo_host.app.host_config import config_from_mapping
from gizmo_host.cli.main import main
from gizmo_host.rigs.autopilot.standin import StandinAutopilot
from tests.support.mavlink_rig import circling, until
from tests.support.schemas import validate_message

CAMERA = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0, "mount_rpy_deg": [0, -90, 0]}


def _config(**mavlink: Any) -> Any:
    return config_from_mapping(
        {
            "serial": {"path": "/nonexistent/gizmo0"},
            "publish": {"stdout": False, "stats_interval_s": 0.2},
            "camera": CAMERA,
            "mavlink": {"url": "udpin:127.0.0.1:0", **mavlink},
        }
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"mavlink": {"url": "bogus:1"}}, "mavlink.url: expected udpin"),
        ({"mavlink": {"url": "udpout:h:1", "send_to": "h:2"}}, "mavlink.send_to: only for"),
        ({"mavlink": {"url": "udpin:h:1", "send_to": "h"}}, "mavlink.send_to: expected HOST:PORT"),
        ({"mavlink": {"pose": False}}, "mavlink.url: expected"),
        ({"mavlink": {"url": "udpin:h:1", "target_system": 256}}, "mavlink.target_system"),
        ({"mavlink": {"url": "udpin:h:1", "landing_target": "apm"}}, "mavlink.landing_target"),
        ({"mavlink": {"url": "udpin:h:1", "rate_hz": 0}}, "mavlink.rate_hz"),
        ({"mavlink": {"url": "udpin:h:1", "landing_target": "px4"}}, "[camera]"),
        (
            {"camera": CAMERA, "rflysim": {"copter_id": 1}, "mavlink": {"url": "udpin:h:1"}},
            "world.pose_source: expected",
        ),
        (
            {
                "camera": CAMERA,
                "world": {"pose_source": "rflysim"},
                "mavlink": {"url": "udpin:h:1"},
            },
            "[rflysim] copter_id",
        ),
        (
            {
                "camera": CAMERA,
                "rflysim": {"copter_id": 1},
                "world": {"pose_source": "rflysim"},
                "mavlink": {"url": "udpin:h:1", "landing_target": "px4"},
            },
            "autopilot's local frame",
        ),
    ],
)
def test_mavlink_settings_mistakes_name_the_key(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_mapping(document)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_pose_source_defaults_to_the_one_configured_and_chooses_between_two() -> None:
    only = config_from_mapping({"camera": CAMERA, "mavlink": {"url": "udpin:h:1"}}).world_setup()
    assert only is not None and only.pose_source == "mavlink" and only.world.pose_required
    both = {"camera": CAMERA, "rflysim": {"copter_id": 1}, "mavlink": {"url": "udpin:h:1"}}
    chosen = config_from_mapping({**both, "world": {"pose_source": "mavlink"}}).world_setup()
    assert chosen is not None and chosen.rflysim is not None
    assert chosen.pose_source == "mavlink" and chosen.rflysim.pose_source.value == "none"
    rfly = config_from_mapping({**both, "world": {"pose_source": "rflysim"}}).world_setup()
    assert rfly is not None and rfly.rflysim is not None
    assert rfly.rflysim.pose_source.value == "state"
    no_pose = {"url": "udpin:h:1", "pose": False}
    without = config_from_mapping({"camera": CAMERA, "mavlink": no_pose})
    setup = without.world_setup()
    assert setup is not None and setup.pose_source is None


def test_a_bad_mavlink_flag_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--serial", "/dev/null", "--mavlink-url", "udp:1.2.3.4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--mavlink-url: mavlink.url: expected" in err
    assert "Traceback" not in err


@pytest.mark.realtime
def test_host_takes_the_autopilots_pose_after_the_clock_locks_and_reports_the_link() -> None:
    """One host, one stand-in autopilot over loopback: the link line comes UP, the world HOLDs
    clock_not_locked until the TIMESYNC mapping locks, then its vehicle is the autopilot's
    (against the stand-in's truth), and the stats line carries the clock and the rates."""
    config = _config(landing_target="px4")
    host = Host.serving(config)
    seen: list[Any] = []
    host.add_sink(seen.append)
    assert host.mavlink is not None and host.world is not None

    async def scenario() -> None:
        async with host:
            link = host.mavlink
            assert link is not None
            await until(lambda: link.transport.local_port is not None)
            autopilot = StandinAutopilot(
                f"udpout:127.0.0.1:{link.transport.local_port}", circling, skew_ppm=80.0
            )
            task = asyncio.ensure_future(autopilot.run())
            try:
                await until(lambda: link.session.locked and link.poses.counts["poses"] > 60)
                await until(lambda: any(_stats_locked(m) for m in seen))
                # UP once the new binding has settled (bind_settle_s), with no second voice
                await until(lambda: any(_is_link(m) for m in seen))
                now = host.scheduler.now_ns()
                snapshot = host.world.snapshot(now)  # type: ignore[union-attr]
                vehicle = snapshot.vehicle
                assert vehicle is not None
                truth = circling(vehicle.time_ns)
                error = math.dist(vehicle.position_ned_m, truth.position_ned_m)
                assert error < 0.05, error
                assert autopilot.heard_heartbeat
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    links = [m for m in seen if _is_link(m)]
    assert links and links[0]["state"] == "UP" and links[0]["path"].startswith("mavlink:udpin:")
    for line in [*links, *(m for m in seen if _stats_locked(m))]:
        validate_message(json.loads(json.dumps(line)))  # as the outputs write them
    snapshots = [m for m in seen if hasattr(m, "reasons")]
    reasons = [{r.value for r in s.reasons} for s in snapshots]
    assert any("clock_not_locked" in r for r in reasons)  # the poses came before the lock
    assert "clock_not_locked" not in reasons[-1]
    stats = [m for m in seen if _stats_locked(m)][-1]["mavlink"]
    assert stats["link"] == "UP" and stats["timesync"]["rtt_ms"] is not None
    assert stats["received"]["ATTITUDE_QUATERNION"] > 20 and "rates_hz" in stats
    assert stats["landing_target"]["sent"] == 0  # no vision: HOLD, nothing sent


def _stats_locked(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("type") != "stats":
        return False
    timesync = message.get("mavlink", {}).get("timesync", {})
    return bool(timesync.get("status") == "locked")


@pytest.mark.realtime
def test_an_autopilot_that_never_answers_is_a_hold_and_a_down_link_never_a_crash() -> None:
    config = _config(url="udpout:127.0.0.1:9", landing_target="px4")  # the discard port: nobody
    host = Host.serving(config)
    seen: list[Any] = []
    host.add_sink(seen.append)

    async def scenario() -> None:
        async with host:
            await until(lambda: sum(isinstance(m, dict) and m["type"] == "stats" for m in seen) > 2)

    asyncio.run(scenario())
    stats = [m for m in seen if isinstance(m, dict) and m.get("type") == "stats"][-1]["mavlink"]
    assert stats["link"] == "DOWN" and stats["timesync"]["status"] == "converging"
    assert stats["counts"]["timesync_requests"] > 0  # it kept asking
    snapshots = [m for m in seen if hasattr(m, "reasons")]
    assert snapshots and all(not s.proceed for s in snapshots)
    assert {"no_pose", "link_down"} <= {r.value for r in snapshots[-1].reasons}
    assert host.world is not None and host.world.model.stats()["poses"] == 0


def _is_link(message: object) -> bool:
    return isinstance(message, dict) and message.get("type") == "link"
