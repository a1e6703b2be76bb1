"""Settings that do nothing (issue 29): one rule for every optional section (its presence
turns it on; ``enabled = false`` turns it off and its other keys are reported), a key that
cannot act is a one-line warning (or exit status 2 where it is a mistake), and the doctor
reports them. A test per section; the Zenoh one publishes for real through a router."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import subprocess
import sys

import pytest

from gizmo_core import ConfigError
from gizmo_host.app.host import Host, Receivers, ReplayedLink
from gizmo_host.app.host_config import config_from_mapping, load_config
from gizmo_host.app.idle import idle_settings, log_idle_settings
from gizmo_host.rigs.demo.scene_rig import config_json

SERIAL = {"serial": {"path": "/dev/gizmo0"}}
CAMERA = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}
ROUTER = "tcp/127.0.0.1:7447"
CLI = [sys.executable, "-m", "gizmo_host.cli"]


def config(**sections):
    return config_from_mapping({**SERIAL, **sections})


def test_every_setting_in_use_reports_nothing():
    assert idle_settings(config()) == []
    assert idle_settings(config(camera=CAMERA, world={"rate_hz": 20})) == []


# -- [zenoh] --------------------------------------------------------------------------------


def test_a_zenoh_table_with_an_endpoint_and_no_enabled_is_on():
    zenoh = config(zenoh={"mode": "client", "connect": [ROUTER]}).zenoh
    assert zenoh.enabled is True
    assert idle_settings(config(zenoh={"mode": "client", "connect": [ROUTER]})) == []
    assert config().zenoh.enabled is False  # no table, no flag: off


def test_a_zenoh_table_turned_off_names_every_key_that_does_nothing():
    off = config(zenoh={"enabled": False, "mode": "client", "connect": [ROUTER]})
    assert off.zenoh.enabled is False
    assert idle_settings(off) == ["zenoh.mode, zenoh.connect do nothing: [zenoh] enabled = false"]


def test_a_flag_turns_zenoh_on_but_not_a_table_the_file_turned_off(tmp_path):
    path = tmp_path / "gizmo.toml"
    path.write_text('[serial]\npath = "/dev/gizmo0"\n')
    assert load_config(str(path), {"zenoh": {"vehicle": "uav1"}}).zenoh.enabled is True
    path.write_text('[serial]\npath = "/dev/gizmo0"\n[zenoh]\nenabled = false\n')
    flagged = load_config(str(path), {"zenoh": {"vehicle": "uav1"}})
    assert flagged.zenoh.enabled is False
    assert idle_settings(flagged) == ["zenoh.vehicle does nothing: [zenoh] enabled = false"]


def test_zenohs_ros2_domain_without_rmw_zenoh_does_nothing():
    bridged = config(zenoh={"ros2": "bridge", "ros2_domain": 7})
    assert idle_settings(bridged) == [
        'zenoh.ros2_domain does nothing: ros2 = "bridge" (only rmw_zenoh keys use it)'
    ]


def test_a_present_zenoh_table_publishes_through_a_real_router():
    """The issue's case end to end: ``[zenoh]`` with a router's endpoint and no ``enabled``
    line; a subscriber on the router gets the host's lines."""
    pytest.importorskip("zenoh")
    from tests.support.zenoh_router import router, session, wait_until

    async def main(endpoint: str) -> list[tuple[str, bytes]]:
        got: list[tuple[str, bytes]] = []
        viewer = session("client", connect=endpoint)
        subscriber = viewer.declare_subscriber(
            "gizmo/**", lambda s: got.append((str(s.key_expr), s.payload.to_bytes()))
        )
        host = Host(
            config(
                publish={"stdout": False},
                zenoh={"mode": "client", "connect": [endpoint], "vehicle": "uav1"},
            ),
            link=ReplayedLink(),
            world=Receivers(),
            outputs=True,
        )
        await host.start()
        loop = asyncio.get_running_loop()
        try:
            connected = lambda: host.stats()["publish"]["zenoh"]["connected"]  # noqa: E731
            await loop.run_in_executor(None, wait_until, connected)
            # The first puts may precede the subscription's arrival; the version line, put at
            # the start, may arrive alone: wait for a stats line itself.
            has_stats = lambda: any(key == "gizmo/uav1/stats" for key, _ in got)  # noqa: E731
            for n in range(20):
                host.publish({"type": "stats", "n": n})
                with contextlib.suppress(AssertionError):
                    await loop.run_in_executor(None, wait_until, has_stats, 0.5)
                    break
        finally:
            await host.stop()
            subscriber.undeclare()
            viewer.close()
        return got

    with router() as endpoint:
        got = asyncio.run(main(endpoint))
    by_key = dict(got)
    assert json.loads(by_key["gizmo/uav1/stats"])["type"] == "stats"
    assert json.loads(by_key["gizmo/uav1/version"])["type"] == "version"


# -- [foxglove] -----------------------------------------------------------------------------


def test_a_foxglove_table_is_on_and_one_turned_off_names_its_keys():
    assert config(foxglove={"listen": "127.0.0.1:0"}).foxglove.enabled is True
    off = config(foxglove={"enabled": False, "listen": "127.0.0.1:9000"})
    assert off.foxglove.enabled is False
    assert idle_settings(off) == ["foxglove.listen does nothing: [foxglove] enabled = false"]


# -- [mavlink] ------------------------------------------------------------------------------


def test_a_mavlink_table_turned_off_opens_no_link_and_names_its_keys():
    pytest.importorskip("pymavlink")
    off = config(mavlink={"enabled": False, "url": "udpin:127.0.0.1:14550", "pose": False})
    assert not off.mavlink.on
    assert Host.in_rig(off).mavlink is None
    assert idle_settings(off) == ["mavlink.url, mavlink.pose do nothing: [mavlink] enabled = false"]
    assert Host.in_rig(config(mavlink={"url": "udpin:127.0.0.1:0"})).mavlink is not None


def test_a_mavlink_table_without_a_url_is_a_mistake_and_a_rate_without_a_target_does_nothing():
    with pytest.raises(ConfigError, match=r"mavlink\.url: expected the autopilot's connection"):
        config(mavlink={"rate_hz": 10.0})
    pytest.importorskip("pymavlink")
    idle = config(mavlink={"url": "udpin:127.0.0.1:14550", "rate_hz": 10.0})
    assert idle_settings(idle) == [
        'mavlink.rate_hz does nothing: landing_target = "off" sends no LANDING_TARGET'
    ]


# -- [world], [camera], [rflysim] -----------------------------------------------------------


def test_a_world_turned_off_names_the_camera_and_every_world_key():
    off = config(world={"enabled": False, "rate_hz": 20}, camera=CAMERA)
    assert off.world_setup() is None
    assert idle_settings(off) == ["world.rate_hz, [camera] do nothing: [world] enabled = false"]


def test_ground_plane_keys_without_the_ground_plane_do_nothing():
    world = {"ground_plane": False, "flat_targets": False, "ground_z_ned_m": -3.0, "rate_hz": 20}
    assert idle_settings(config(camera=CAMERA, world=world)) == [
        "world.ground_z_ned_m, world.flat_targets do nothing: [world] ground_plane = false"
    ]
    on = {"flat_targets": False, "ground_z_ned_m": -3.0}
    assert idle_settings(config(camera=CAMERA, world=on)) == []


def test_a_world_table_without_a_camera_is_a_mistake():
    with pytest.raises(ConfigError, match=r"camera: expected a \[camera\] table"):
        config(world={"rate_hz": 20})


def test_rflysim_addresses_without_a_copter_id_are_a_mistake():
    with pytest.raises(ConfigError, match=r"rflysim.copter_id: expected .* rflysim.sim_host"):
        config(camera=CAMERA, rflysim={"sim_host": "192.168.1.20"})


def test_a_sim_skew_bound_without_a_copter_id_is_a_mistake():
    with pytest.raises(ConfigError, match=r"rflysim.copter_id: expected .* rflysim.max_skew_ppm"):
        config(camera=CAMERA, rflysim={"max_skew_ppm": 2000})
    for wrong in (-1, 10_001, "2000"):
        with pytest.raises(ConfigError, match=r"rflysim.max_skew_ppm"):
            config(camera=CAMERA, rflysim={"copter_id": 1, "max_skew_ppm": wrong})


def test_a_rflysim_config_that_nothing_reads_does_nothing(tmp_path):
    (tmp_path / "Config.json").write_text(config_json({}))
    idle = config(camera=CAMERA, rflysim={"config": str(tmp_path / "Config.json")})
    assert idle_settings(idle) == [
        "rflysim.config does nothing: no [rflysim] copter_id or [camera] rflysim_sensor"
    ]


# -- [publish] ------------------------------------------------------------------------------


def test_socket_limits_without_a_socket_and_no_output_at_all_are_reported():
    limits = config(publish={"unix_max_clients": 4, "unix_max_buffer_bytes": 8192})
    assert idle_settings(limits) == [
        "publish.unix_max_buffer_bytes, publish.unix_max_clients do nothing: no [publish] "
        "unix_socket to serve"
    ]
    silent = config(publish={"stdout": False})
    assert idle_settings(silent) == [
        "publish.stdout = false does nothing: no other output either (unix_socket, udp, "
        "[zenoh], [foxglove]): nothing is published"
    ]
    assert idle_settings(silent, publishes=False) == []  # record: the capture is the output


# -- saying so ------------------------------------------------------------------------------


def test_each_idle_group_is_one_warning_line(caplog):
    both = config(
        zenoh={"enabled": False, "connect": [ROUTER]},
        foxglove={"enabled": False, "listen": "127.0.0.1:9000"},
    )
    with caplog.at_level(logging.WARNING, logger="gizmo_host.settings"):
        log_idle_settings(both)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and all("\n" not in line for line in lines)
    assert lines[0].startswith("setting: zenoh.connect does nothing")


@pytest.mark.subprocess
def test_the_doctor_reports_them_and_run_refuses_a_mistake_with_status_2(tmp_path):
    path = tmp_path / "gizmo.toml"
    path.write_text(f'[zenoh]\nenabled = false\nconnect = ["{ROUTER}"]\n')
    done = subprocess.run(
        [*CLI, "doctor", "--config", str(path), "--serial", str(tmp_path / "missing"),
         "--seconds", "0.1", "--json"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    report = json.loads(done.stdout)
    check = next(c for c in report["checks"] if c["name"] == "settings")
    assert check["status"] == "warn"
    assert "zenoh.connect does nothing: [zenoh] enabled = false" in check["evidence"]
    path.write_text('[camera]\nwidth_px = 640\nheight_px = 480\nhfov_deg = 90\n'
                    '[rflysim]\nsim_host = "192.168.1.20"\n')  # fmt: skip
    done = subprocess.run(
        [*CLI, "run", "--serial", "/dev/null", "--config", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "rflysim.copter_id" in done.stderr
