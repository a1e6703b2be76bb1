"""Senders to CopterSim and RflySim3D: IMU/odometry requests, offboard, gimbal, sensors.

UDP sends on a non-blocking socket almost never block; when one would, or the network
refuses it, the send is counted as failed and ``False`` is returned instead of raising into
a control loop. Ports come from :mod:`rfly_link.ports` (CopterSim per CopterID, RflySim3D
per window); each can be overridden, which is also how the loopback tests point them at fake
peers.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

from rfly_link import commands, ports
from rfly_link import messages as m
from rfly_link.config_json import LoadedConfig


@dataclass(slots=True)
class SendStats:
    sent: int = 0
    failed: int = 0
    bytes: int = 0


class UdpSender:
    """A non-blocking UDP socket that sends encoded messages and counts failures."""

    def __init__(self, *, bind_host: str = "", bind_port: int = 0) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        self._sock.bind((bind_host, bind_port))
        self._sock.setblocking(False)
        self.stats = SendStats()

    def send(self, message: m.WireMessage | bytes, address: tuple[str, int]) -> bool:
        data = message if isinstance(message, bytes) else message.encode()
        try:
            self._sock.sendto(data, address)
        except OSError:
            self.stats.failed += 1
            return False
        self.stats.sent += 1
        self.stats.bytes += len(data)
        return True

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> UdpSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CopterSimClient:
    """Commands and sensor requests for one CopterSim vehicle (CopterID ``copter_id``)."""

    def __init__(
        self,
        copter_id: int,
        sender: UdpSender,
        *,
        sim_host: str = "127.0.0.1",
        control_port: int | None = None,
        px4_port: int | None = None,
    ) -> None:
        control = ports.coptersim_control_port(copter_id)  # ValueError off the port map
        self.copter_id = copter_id
        self.sender = sender
        self.address = (sim_host, control_port or control)
        self.px4_address = (sim_host, px4_port or ports.px4_control_port(copter_id))

    def send(self, message: m.WireMessage) -> bool:
        """Any control-port structure: SIL, DLL model inputs, uORB control, set-up requests."""
        return self.sender.send(message, self.address)

    def send_px4(self, message: m.WireMessage) -> bool:
        """A UDP-mode set point or reboot for CopterSim's PX4 (``20100 + 2(N - 1)``)."""
        return self.sender.send(message, self.px4_address)

    def request_sensor(
        self,
        sensor: m.CopterSimSensor,
        rate_hz: int,
        reply_ip: str,
        reply_port: int | None = None,
    ) -> bool:
        """Ask CopterSim to stream ``sensor`` at ``rate_hz`` (1-1000) to ``reply_ip:port``."""
        port = reply_port or ports.coptersim_reply_port(self.copter_id)
        request = m.SensorReqCopterSim.build(sensor, rate_hz, reply_ip, port)
        return self.sender.send(request, self.address)

    def request_imu(self, rate_hz: int, reply_ip: str, reply_port: int | None = None) -> bool:
        return self.request_sensor(m.CopterSimSensor.IMU, rate_hz, reply_ip, reply_port)

    def request_odometry(self, rate_hz: int, reply_ip: str, reply_port: int | None = None) -> bool:
        return self.request_sensor(m.CopterSimSensor.ODOMETRY, rate_hz, reply_ip, reply_port)

    def send_sil(self, message: m.SILIntFloat) -> bool:
        return self.send(message)

    def position_ned(
        self, north_m: float, east_m: float, down_m: float, yaw_rad: float = 0.0
    ) -> bool:
        return self.send_sil(
            m.SILIntFloat.position_ned(self.copter_id, north_m, east_m, down_m, yaw_rad)
        )

    def velocity_ned(
        self, vn_m_s: float, ve_m_s: float, vd_m_s: float, yaw_rate_rad_s: float = 0.0
    ) -> bool:
        return self.send_sil(
            m.SILIntFloat.velocity_ned(self.copter_id, vn_m_s, ve_m_s, vd_m_s, yaw_rate_rad_s)
        )

    def velocity_frd(
        self, vf_m_s: float, vr_m_s: float, vd_m_s: float, yaw_rate_rad_s: float = 0.0
    ) -> bool:
        return self.send_sil(
            m.SILIntFloat.velocity_frd(self.copter_id, vf_m_s, vr_m_s, vd_m_s, yaw_rate_rad_s)
        )

    def yaw(self, yaw_rad: float) -> bool:
        return self.send_sil(m.SILIntFloat.yaw(self.copter_id, yaw_rad))


class RflySim3DClient:
    """Requests and commands for RflySim3D windows (``20010 + window``)."""

    def __init__(
        self,
        sender: UdpSender,
        *,
        sim_host: str = "127.0.0.1",
        window_port: Callable[[int], int] = ports.rflysim3d_window_port,
    ) -> None:
        self.sender = sender
        self.sim_host = sim_host
        self.window_port = window_port

    def address(self, window_id: int = 0) -> tuple[str, int]:
        """Where window ``window_id`` listens (ValueError for a window off the port map)."""
        return (self.sim_host, self.window_port(window_id))

    def send(self, message: m.WireMessage, window_id: int = 0) -> bool:
        return self.sender.send(message, self.address(window_id))

    def send_vision_requests(self, config: LoadedConfig, window_id: int = 0) -> int:
        """Send every sensor request of a loaded Config.json; returns how many were sent."""
        return sum(self.send(request, window_id) for request in config.requests())

    def send_gimbal(self, request: m.VisionSensorReqNew, window_id: int = 0) -> bool:
        return self.send(request, window_id)

    def send_command(self, command: str, window_id: int = 0) -> bool:
        """A console command (see :mod:`rfly_link.commands` for builders)."""
        return self.send(m.console_command(command), window_id)

    def send_lan_command(self, command: str, group: str = ports.MULTICAST_GROUP) -> bool:
        """A console command to every RflySim3D on the LAN (multicast ``group:20009``)."""
        return self.sender.send(m.lan_command(command), (group, ports.RFLYSIM3D_LAN_PORT))

    def request_object_data(
        self, kind: commands.ObjectKind, name: str | int, window_id: int = 0
    ) -> bool:
        """Ask for periodic CameraData / CoptReqData / ObjReqData replies on port 20006."""
        return self.send_command(commands.request_object_data(kind, name), window_id)
