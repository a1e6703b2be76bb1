"""Loopback UDP end to end through the receivers and clients: real sockets, no sleeps."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
import pytest

from rfly_link import commands, ports, sensors
from rfly_link import config_json as config
from rfly_link import io as rio
from rfly_link import messages as m
from rfly_link.io.clients import CopterSimClient, RflySim3DClient, UdpSender
from rfly_link.reassembly import fragment_payload

WAIT_S = 5.0

LIDAR = config.VisionSensorConfig(
    index=0,
    seq_id=2,
    type_id=20,
    target_copter=1,
    target_mount_type=0,
    data_width=720,
    data_height=16,
    data_check_freq=10,
    camera_fov_deg=0.0,
    send_protocol=(1, 127, 0, 0, 1, 0, 0, 1),  # port 0: an ephemeral port for the test
    sensor_pos_xyz_m=(0.0, 0.0, 0.0),
    has_eular_or_quat=True,
    eular_or_quat=0.0,
    sensor_ang_eular=(0.0, 0.0, 0.0),
    sensor_ang_quat=(1.0, 0.0, 0.0, 0.0),
    other_params=(60.0,) + (0.0,) * 15,
)


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 30))


def udp_socket(host: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((host, 0))
    return sock


async def recv(sock: socket.socket) -> tuple[bytes, None]:
    sock.setblocking(False)
    loop = asyncio.get_running_loop()  # sock_recv: sock_recvfrom is Python 3.11+
    return await asyncio.wait_for(loop.sock_recv(sock, 65535), WAIT_S), None


def test_lidar_frames_through_a_sensor_receiver() -> None:
    async def main() -> None:
        (receiver,) = rio.vision_sensor_receivers([LIDAR])
        async with receiver:
            assert receiver.stats.rcvbuf_granted > 0
            target = ("127.0.0.1", receiver.bound_port)
            raw = np.arange(3000 * 4, dtype=np.int16).reshape(3000, 4)
            payload = sensors.encode_point_cloud(
                sensors.PointLayout.PREFIX36_INT16_XYZS, raw, copter_id=1
            )
            with udp_socket() as tx:
                tx.sendto(b"junk that is not a fragment", target)
                bad = bytearray(fragment_payload(payload[:40], fragment_size=40)[0])
                tx.sendto(bytes(bad), target)  # a frame that fits no point-cloud layout
                for frame_id in (1, 2):
                    datagrams = fragment_payload(payload, frame_id=frame_id, fragment_size=5000)
                    for d in reversed(datagrams):  # any order
                        tx.sendto(d, target)
            first = await asyncio.wait_for(receiver.get(), WAIT_S)
            second = await asyncio.wait_for(receiver.get(), WAIT_S)
            stats = receiver.stats
        for event in (first, second):
            cloud = event.value
            assert isinstance(cloud, sensors.PointCloud)
            assert cloud.point_count == 3000 and cloud.copter_id == 1
            np.testing.assert_allclose(cloud.xyz_m[1], raw[1, :3] * 60 / 32767, rtol=1e-6)
            assert event.sensor is LIDAR and event.frame is not None
        assert [first.frame.frame_id, second.frame.frame_id] == [1, 2]
        summary = json.loads(json.dumps(first.to_dict()))
        assert summary["value"]["point_count"] == 3000 and summary["seq_id"] == 2
        assert summary["frame"]["payload_len"] == len(payload)
        assert stats.drops == {"unknown_checksum": 1, "inconsistent": 1}
        assert stats.events == 2 and stats.datagrams == 2 + 2 * len(datagrams)
        assert isinstance(stats.kernel_rcvbuf_errors, int)
        assert stats.socket_drops == 0

    run(main)


def test_allow_list_drops_and_counts_other_senders(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        receiver = rio.UdpReceiver(
            rio.MessagePipeline(20006), port=0, allowed_senders={"127.0.0.2"}
        )
        async with receiver:
            target = ("127.0.0.1", receiver.bound_port)
            crash = m.CopterSimCrash(copter_id=1, target_id=2).encode()
            with udp_socket("127.0.0.1") as stranger, udp_socket("127.0.0.2") as simulator:
                stranger.sendto(crash, target)
                simulator.sendto(crash, target)
                event = await asyncio.wait_for(receiver.get(), WAIT_S)
            assert event.sender[0] == "127.0.0.2"
            assert receiver.stats.drops == {"sender_not_allowed": 1}
        assert not [r for r in caplog.records if "allow-list" in r.message]

    run(main)


def test_non_loopback_bind_without_allow_list_warns(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, host="0.0.0.0")
        with caplog.at_level(logging.WARNING, logger="rfly_link.io"):
            async with receiver:
                pass
        assert any("without an allow-list" in r.message for r in caplog.records)

    run(main)


def test_coptersim_client_and_receivers_against_a_fake_coptersim() -> None:
    async def main() -> None:
        state_pipe = rio.MessagePipeline(ports.coptersim_state_port(2))
        reply_pipe = rio.MessagePipeline(ports.coptersim_reply_port(2))
        state_rx = rio.UdpReceiver(state_pipe, port=0)
        reply_rx = rio.UdpReceiver(reply_pipe, port=0)
        async with state_rx, reply_rx:
            with udp_socket() as coptersim, UdpSender() as sender:
                client = CopterSimClient(2, sender, control_port=coptersim.getsockname()[1])
                assert client.request_imu(250, "127.0.0.1", reply_rx.bound_port)
                data, _ = await recv(coptersim)
                request = m.SensorReqCopterSim.decode(data)
                assert (request.sensor_type, request.update_freq_hz) == (0, 250)
                assert request.reply_ip == "127.0.0.1" and request.port == reply_rx.bound_port
                assert client.request_odometry(50, "127.0.0.1")  # to its default reply port
                request = m.SensorReqCopterSim.decode((await recv(coptersim))[0])
                assert (request.sensor_type, request.update_freq_hz) == (1, 50)
                assert request.port == ports.coptersim_reply_port(2)
                assert client.velocity_ned(1.0, -2.0, 0.5, yaw_rate_rad_s=0.1)
                sil = m.SILIntFloat.decode((await recv(coptersim))[0])
                assert sil.copter_id == 2 and sil.in_floats[3:6] == (1.0, -2.0, 0.5)
                assert m.SilOffboard.HAS_VEL in sil.offboard

                imu = m.ImuReply(sequence=1, acceleration_frd_m_s2=(0.0, 0.0, -9.75))
                odom = m.OdomReply(copter_id=2, frame_type=1, flags=0b1111)
                coptersim.sendto(b"\x00" * 48, ("127.0.0.1", reply_rx.bound_port))
                coptersim.sendto(imu.encode(), ("127.0.0.1", reply_rx.bound_port))
                coptersim.sendto(odom.encode(), ("127.0.0.1", reply_rx.bound_port))
                state = m.SOut2SimulatorSimpleTime(copter_id=2, position_ned_m=(1.0, 2.0, -3.0))
                coptersim.sendto(state.encode(), ("127.0.0.1", state_rx.bound_port))
                got = [(await asyncio.wait_for(reply_rx.get(), WAIT_S)).value for _ in range(2)]
                assert got == [imu, odom]
                assert (await asyncio.wait_for(state_rx.get(), WAIT_S)).value == state
                assert reply_rx.stats.drops == {"wrong_length": 1}
                assert sender.stats.sent == 3 and sender.stats.failed == 0

    run(main)


def test_rflysim3d_client_and_20006_receiver_against_a_fake_rflysim3d() -> None:
    async def main() -> None:
        receiver = rio.rflysim3d_receiver(port=0)
        async with receiver:
            with udp_socket() as rflysim3d, UdpSender() as sender:
                window0 = rflysim3d.getsockname()[1]
                client = RflySim3DClient(sender, window_port=lambda w: window0 + w)
                gimbal = m.VisionSensorReqNew.for_sensor(3).with_angular_rate(5.0, -5.0)
                assert client.send_gimbal(gimbal)
                assert m.VisionSensorReqNew.decode((await recv(rflysim3d))[0]) == gimbal
                assert client.request_object_data(commands.ObjectKind.OBJECT, "Tree_01")
                cmd = m.UE4Command.decode((await recv(rflysim3d))[0])
                assert cmd.command == b"RflyReqObjData 2 Tree_01 0"
                loaded = config.parse_config(
                    '{"VisionSensors": [%s]}' % _example_sensor_json()  # noqa: UP031
                )
                assert client.send_vision_requests(loaded) == 1
                assert len((await recv(rflysim3d))[0]) == 144

                status = m.GimbalStatus(seq_id=3, other_params=(0.0,) * 7 + (88.0,) + (0.0,) * 8)
                obj = m.ObjReqDataQuat(seq_id=1, object_name=b"Tree_01", timestamp_s=2.0)
                for msg in (status, obj):  # the 112 B reply is ambiguous without the port
                    rflysim3d.sendto(msg.encode(), ("127.0.0.1", receiver.bound_port))
                first = await asyncio.wait_for(receiver.get(), WAIT_S)
                second = await asyncio.wait_for(receiver.get(), WAIT_S)
        assert first.value == status and first.value.laser_range_m == 88.0
        assert second.value == obj and second.port == 20006

    run(main)


def _example_sensor_json() -> str:
    from tests.support.rfly_config import EXAMPLE

    return json.dumps(EXAMPLE["VisionSensors"][0])


def test_queue_is_bounded_and_keeps_the_freshest() -> None:
    async def main() -> None:
        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, queue_size=2)
        async with receiver:
            target = ("127.0.0.1", receiver.bound_port)
            with udp_socket() as tx:
                for i in range(5):
                    tx.sendto(m.CopterSimCrash(copter_id=i).encode(), target)
                # Synchronise on the receiver having delivered all five, then read the queue.
                await asyncio.wait_for(receiver.wait_delivered(5), WAIT_S)
            kept = [receiver.get_nowait().value.copter_id for _ in range(2)]
        assert kept == [3, 4]
        assert receiver.stats.drops == {"queue_full": 3}

    run(main)


def test_sensor_receivers_from_config_skip_shared_memory() -> None:
    shared = dataclasses.replace(LIDAR, send_protocol=(0, 127, 0, 0, 1, 10105, 0, 0))
    receivers = rio.vision_sensor_receivers([LIDAR, shared])
    assert len(receivers) == 1 and receivers[0].port == 0
    copter_ports = [r.port for r in rio.coptersim_receivers(3)]
    assert copter_ports == [30105, 31002, 20105, 40105]
    assert [r.port for r in rio.coptersim_receivers(3, replies=False, px4=False)] == [30105]
    with pytest.raises(ValueError, match="copter_id"):
        rio.coptersim_receivers(0)


def test_multicast_group_on_loopback() -> None:
    async def main() -> None:
        receiver = rio.rflysim3d_receiver(
            port=0, multicast=True, host="127.0.0.1", multicast_interface="127.0.0.1"
        )
        try:
            await receiver.start()
        except OSError as exc:  # no multicast route in this environment
            pytest.skip(f"multicast unavailable: {exc}")
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
                tx.setsockopt(
                    socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1")
                )
                tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
                crash = m.CopterSimCrash(copter_id=7).encode()
                try:
                    tx.sendto(crash, (ports.MULTICAST_GROUP, receiver.bound_port))
                    event = await asyncio.wait_for(receiver.get(), WAIT_S)
                except (
                    OSError,
                    asyncio.TimeoutError,
                ) as exc:  # lo without MULTICAST in some sandboxes
                    pytest.skip(f"loopback multicast not delivered here: {exc!r}")
            assert event.value.copter_id == 7
        finally:
            await receiver.close()

    run(main)


def test_stranger_mid_frame_does_not_corrupt_an_in_place_frame() -> None:
    async def main() -> None:
        (receiver,) = rio.vision_sensor_receivers([LIDAR], allowed_senders={"127.0.0.2"})
        async with receiver:
            target = ("127.0.0.1", receiver.bound_port)
            raw = np.arange(2000 * 4, dtype=np.int16).reshape(2000, 4)
            payload = sensors.encode_point_cloud(sensors.PointLayout.PREFIX36_INT16_XYZS, raw)
            datagrams = fragment_payload(payload, frame_id=7, fragment_size=3000)
            with udp_socket("127.0.0.1") as stranger, udp_socket("127.0.0.2") as simulator:
                for i, d in enumerate(datagrams):
                    simulator.sendto(d, target)
                    if i == 1:  # lands in the slot offered for fragment 2, then is discarded
                        stranger.sendto(datagrams[2][:-7] + bytes(7), target)
                event = await asyncio.wait_for(receiver.get(), WAIT_S)
            assert receiver.stats.drops == {"sender_not_allowed": 1}
        np.testing.assert_array_equal(event.value.stencil, raw[:, 3])
        np.testing.assert_allclose(
            event.value.xyz_m, raw[:, :3].astype(float) * 60 / 32767, rtol=1e-6
        )

    run(main)


def test_cli_listens_and_prints_json_lines() -> None:
    import argparse
    import io

    from gizmo_host.cli import rfly as cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--copter", "1", "--copter", "2", "--count", "1"])
    receivers = cli.build_receivers(cli.parse_options(args))
    # Each vehicle's state, reply, PX4 state and PX4 actuator ports; one heartbeat port.
    expected = [30101, 31000, 20101, 40101, 30103, 31001, 20103, 40103, 20005]
    assert [r.port for r in receivers] == expected
    args = parser.parse_args(["--rflysim3d", "--multicast", "--multicast-interface", "10.1.2.3"])
    (rx3d,) = cli.build_receivers(cli.parse_options(args))
    assert rx3d.multicast_group == "224.0.0.10" and rx3d.multicast_interface == "10.1.2.3"
    assert cli.run(parser.parse_args([])) == 2  # nothing to listen to

    async def main() -> None:
        receiver = rio.UdpReceiver(rio.MessagePipeline(30101), port=0)
        out = io.StringIO()
        task = asyncio.create_task(cli.listen([receiver], count=1, out=out))

        async def bound() -> None:  # listen() starts the receiver: wait for its bind
            while receiver.bound_port == 0 and not task.done():
                await asyncio.sleep(0)

        await asyncio.wait_for(bound(), WAIT_S)
        state = m.SOut2Simulator(copter_id=1, position_ned_m=(1.0, 2.0, 3.0))
        with udp_socket() as tx:
            tx.sendto(state.encode(), ("127.0.0.1", receiver.bound_port))
            assert await asyncio.wait_for(task, WAIT_S) == 1
        line = json.loads(out.getvalue())
        assert line["value"]["type"] == "SOut2Simulator"
        assert line["value"]["position_ned_m"] == [1.0, 2.0, 3.0]

    run(main)


def test_message_pipeline_counts_a_structure_on_the_wrong_port() -> None:
    pipeline = rio.MessagePipeline(20006)
    imu = memoryview(m.ImuReply().encode())  # the IMU reply belongs on 31000 + N - 1
    assert pipeline.process(imu, ("127.0.0.1", 1), 0) == []
    assert pipeline.drop_counts() == {"wrong_port": 1}
    assert len(rio.MessagePipeline(31000).process(imu, ("127.0.0.1", 1), 0)) == 1


def test_sensor_pipeline_limits_frames_from_the_config_sizes() -> None:
    pipeline = rio.SensorPipeline(LIDAR)  # 720 x 16 rays -> 1 MiB a frame
    assert pipeline.reassembler.max_frame_bytes == 1024 * 1024
    # A 40-byte datagram claiming 200 fragments of 8 KiB (1.6 MB) is refused before allocating.
    claim = fragment_payload(bytes(8192 * 200), fragment_size=8192)[0]
    assert pipeline.process(memoryview(claim), ("127.0.0.1", 1), 0) == []
    assert pipeline.drop_counts() == {"frame_too_large": 1}
    assert pipeline.reassembler.stats.bytes_in_flight == 0
    unsized = dataclasses.replace(LIDAR, data_width=0)
    assert rio.SensorPipeline(unsized).reassembler.max_frame_bytes == 32 * 1024 * 1024


def _warnings(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_multicast_receiver_warns_for_the_address_actually_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        # host is loopback, but a multicast socket binds every address: it is open.
        receiver = rio.rflysim3d_receiver(
            port=0, multicast=True, host="127.0.0.1", multicast_interface="127.0.0.1"
        )
        with caplog.at_level(logging.WARNING, logger="rfly_link.io"):
            try:
                await receiver.start()
            except OSError as exc:  # no multicast route in this environment
                pytest.skip(f"multicast unavailable: {exc}")
            try:
                address = receiver.local_address
                assert address is not None and address[0] == "0.0.0.0"
            finally:
                await receiver.close()
        (message,) = _warnings(caplog, "without an allow-list")
        assert "0.0.0.0" in message

    run(main)


def test_multicast_interface_defaults_to_route_choice_or_the_bind_address() -> None:
    # Joining on loopback would never receive multicast from the simulator's machine.
    assert rio.rflysim3d_receiver(multicast=True).multicast_interface == "0.0.0.0"
    lan = rio.rflysim3d_receiver(multicast=True, host="192.168.1.5")
    assert lan.multicast_interface == "192.168.1.5"
    chosen = rio.rflysim3d_receiver(multicast=True, multicast_interface="10.0.0.2")
    assert chosen.multicast_interface == "10.0.0.2"


@pytest.mark.parametrize(
    ("destination", "host", "warns"),
    [
        ((192, 168, 1, 20), "127.0.0.1", True),
        ((127, 0, 0, 1), "127.0.0.1", False),
        ((127, 0, 0, 1), "localhost", False),
        ((192, 168, 1, 20), "0.0.0.0", False),
    ],
)
def test_sensor_receiver_warns_when_config_sends_elsewhere(
    caplog: pytest.LogCaptureFixture, destination: tuple[int, ...], host: str, warns: bool
) -> None:
    sensor = dataclasses.replace(LIDAR, send_protocol=(1, *destination, 0, 0, 1))

    async def main() -> None:
        (receiver,) = rio.vision_sensor_receivers(
            [sensor], host=host, allowed_senders={"127.0.0.1"}
        )
        with caplog.at_level(logging.WARNING, logger="rfly_link.io"):
            async with receiver:
                pass

    run(main)
    found = _warnings(caplog, "nothing will arrive")
    assert len(found) == (1 if warns else 0)
    if warns:
        assert "192.168.1.20" in found[0] and "127.0.0.1" in found[0]


def test_socket_errors_are_counted_as_such_and_receiving_goes_on() -> None:
    async def main() -> None:
        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0)
        async with receiver:
            with udp_socket() as gone:
                peer = gone.getsockname()
            # A connected UDP socket reports the ICMP "port unreachable" for its datagram as
            # ECONNREFUSED on the next receive: a real socket error in the reader thread. (The
            # one white-box step of this file: only a connected socket hears the ICMP error.)
            assert receiver._sock is not None
            receiver._sock.connect(peer)
            receiver._sock.send(b"probe")

            async def counted() -> None:
                while not receiver.stats.drops.get("socket_error"):
                    await asyncio.sleep(0.001)

            await asyncio.wait_for(counted(), WAIT_S)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as back:
                back.bind(peer)  # the connected peer again: its datagrams are accepted
                back.sendto(m.CopterSimCrash(copter_id=5).encode(), receiver._sock.getsockname())
                event = await asyncio.wait_for(receiver.get(), WAIT_S)
            drops = receiver.stats.drops
        assert event.value.copter_id == 5
        assert drops == {"socket_error": 1} and "decode_failed" not in drops

    run(main)


def test_socket_error_backoff_grows_from_a_millisecond_to_a_tenth_of_a_second() -> None:
    delays = [rio.SOCKET_ERROR_BACKOFF.delay_s(n) for n in range(1, 40)]
    assert delays[:4] == [0.001, 0.002, 0.004, 0.008]
    assert delays == sorted(delays) and delays[-1] == 0.1 and delays.count(0.1) == 32


def _rmem_max() -> int:
    with open("/proc/sys/net/core/rmem_max") as f:
        return int(f.read())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux SO_RCVBUF accounting")
def test_at_least_8_mib_is_requested_and_the_kernel_grant_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        (receiver,) = rio.vision_sensor_receivers([LIDAR])
        with caplog.at_level(logging.WARNING, logger="rfly_link.io"):
            async with receiver:
                stats = receiver.stats
        eight = 8 * 1024 * 1024
        assert stats.rcvbuf_requested == eight
        # Linux doubles the request and caps it at 2 * rmem_max unless SO_RCVBUFFORCE worked.
        assert stats.rcvbuf_granted in {2 * eight, min(2 * eight, 2 * _rmem_max())}
        short = receiver.rcvbuf_usable < eight
        assert receiver.rcvbuf_usable == stats.rcvbuf_granted // 2
        assert bool(_warnings(caplog, "receive buffer holds")) == short

    run(main)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux SO_RCVBUF accounting")
def test_rcvbuf_warning_compares_the_usable_half(caplog: pytest.LogCaptureFixture) -> None:
    # 1 GiB cannot be had even with SO_RCVBUFFORCE (the kernel caps the request at INT_MAX/2),
    # although the doubled value it reports (2 GiB - 2) is larger than the request.
    async def main() -> None:
        receiver = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, rcvbuf_bytes=2**30)
        with caplog.at_level(logging.WARNING, logger="rfly_link.io"):
            async with receiver:
                assert receiver.rcvbuf_usable < 2**30

    run(main)
    assert _warnings(caplog, "receive buffer holds")
    assert rio.usable_rcvbuf(8 * 1024 * 1024) == 4 * 1024 * 1024


def _strict_json(line: str) -> object:
    def reject(token: str) -> object:
        raise ValueError(f"non-JSON token {token}")

    return json.loads(line, parse_constant=reject)


def test_cli_output_is_strict_json_with_nan_as_null() -> None:
    from gizmo_host.cli import rfly as cli

    async def main() -> None:
        import io

        receiver = rio.UdpReceiver(rio.MessagePipeline(30101), port=0)
        out = io.StringIO()
        task = asyncio.create_task(cli.listen([receiver], count=1, out=out))

        async def bound() -> None:
            while receiver.bound_port == 0 and not task.done():
                await asyncio.sleep(0)

        await asyncio.wait_for(bound(), WAIT_S)
        nan = float("nan")
        state = m.SOut2Simulator(copter_id=1, position_ned_m=(nan, 2.0, float("inf")))
        with udp_socket() as tx:
            tx.sendto(state.encode(), ("127.0.0.1", receiver.bound_port))
            assert await asyncio.wait_for(task, WAIT_S) == 1
        line = _strict_json(out.getvalue())
        assert line["value"]["position_ned_m"] == [None, 2.0, None]

    run(main)


def _cli_run(argv: list[str]) -> int:
    import argparse

    from gizmo_host.cli import rfly as cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(argv))


def test_cli_config_and_file_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.rfly_config import EXAMPLE

    bad = dict(EXAMPLE)
    bad["VisionSensors"] = [dict(EXAMPLE["VisionSensors"][1], otherParams=[0] * 16)]
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(bad))
    assert _cli_run(["--config", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rfly: VisionSensors[0].otherParams[0]")
    assert _cli_run(["--config", str(path.with_name("missing.json"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No such file" in err[0] and "missing.json" in err[0]
    assert "Traceback" not in capsys.readouterr().err


def test_cli_bind_error_is_one_line_and_closes_started_receivers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 192.0.2.1 (TEST-NET-1) is not a local address: bind fails with EADDRNOTAVAIL.
    assert _cli_run(["--copter", "1", "--bind", "192.0.2.1", "--allow", "192.0.2.9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rfly: cannot listen:")
    assert "192.0.2.1" in err[0]

    from gizmo_host.cli import rfly as cli

    async def main() -> None:
        good = rio.UdpReceiver(rio.MessagePipeline(20006), port=0)
        bad = rio.UdpReceiver(rio.MessagePipeline(20006), port=0, host="192.0.2.1")
        with pytest.raises(OSError, match=r"cannot bind 192\.0\.2\.1"):
            await cli.listen([good, bad], count=1)
        assert good.local_address is None  # closed, reader thread joined

    run(main)


def test_clients_refuse_ids_off_the_port_map() -> None:
    with UdpSender() as sender:
        assert CopterSimClient(450, sender).address == ("127.0.0.1", 30998)
        with pytest.raises(ValueError, match=r"copter_id: expected 1\.\.450, got 451"):
            CopterSimClient(451, sender)
        rflysim3d = RflySim3DClient(sender)
        assert rflysim3d.address(89) == ("127.0.0.1", 20099)
        with pytest.raises(ValueError, match=r"window_id: expected 0\.\.89, got 90"):
            rflysim3d.address(90)  # 20100 is CopterSim's PX4 series


def test_lan_command_goes_to_the_lan_port_of_the_group(monkeypatch: pytest.MonkeyPatch) -> None:
    with udp_socket() as rflysim3d, UdpSender() as sender:
        # Unicast to a stand-in for every RflySim3D on the LAN (224.0.0.10:20009).
        monkeypatch.setattr(ports, "RFLYSIM3D_LAN_PORT", rflysim3d.getsockname()[1])
        assert RflySim3DClient(sender).send_lan_command("RflyClearCapture", group="127.0.0.1")
        rflysim3d.settimeout(WAIT_S)
        command = m.UE4CommandNet.decode(rflysim3d.recv(65535))
    assert command == m.lan_command("RflyClearCapture")
