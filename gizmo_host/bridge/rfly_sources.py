"""The RflySim side of the world model: which UDP ports to hear, and what to ask CopterSim for.

``RflySimSetup`` is the checked ``[rflysim]`` section with its Config.json sensors resolved.
``rfly_receivers`` builds rfly_link's receivers on the port map's ports for one vehicle:

- its state, ``30100 + 2N - 1`` (SOut2Simulator 168 B or the 112 B state), always;
- its reply port, ``31000 + N - 1``, when odometry or IMU replies are requested;
- each distance sensor (TypeID 5) of the Config.json, on the port its ``SendProtocol`` names;
- RflySim3D's port 20006 for the gimbal status, when the camera is on the gimbal.

``SensorRequester`` asks CopterSim (its control port ``30100 + 2(N - 1)``) to stream odometry
and IMU replies, and asks again every ``refresh_s`` while none arrive (CopterSim forgets the
request when it restarts). Receivers bind ``bind`` (loopback by default) and accept only
``sim_host``, whatever the bind.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from dataclasses import dataclass
from functools import partial
from typing import Any

from fusion.config import MOUNT_POSITION_LIMITS_M
from fusion.simclock import SIM_MAX_SKEW_PPM, SimClockEstimator
from gizmo_core import ConfigError
from gizmo_host.bridge.rfly_adapter import RflyAdapter, RflyPoseStream
from gizmo_host.timing import Scheduler
from rfly_link import io as rio
from rfly_link import ports
from rfly_link.config_json import VisionSensorConfig
from rfly_link.io.clients import CopterSimClient, UdpSender
from rfly_link.io.sockinfo import is_wildcard
from rfly_link.messages import TypeId

LOGGER = logging.getLogger(__name__)
REQUEST_REFRESH_S = 1.0
MAX_SIM_SKEW_PPM = 10_000.0  # [rflysim] max_skew_ppm's top: 1 %
_BODY_MOUNTS = (0, 1)  # TargetMountType: rigidly on the vehicle (centre, bottom centre)


@dataclass(frozen=True, slots=True)
class RflySimSetup:
    """One vehicle's RflySim streams, checked (``copter_id`` on the port map, rates 0..1000)."""

    copter_id: int
    bind: str = "127.0.0.1"
    sim_host: str = "127.0.0.1"
    request_odometry_hz: int = 0  # 0: no request; the state port gives the pose
    request_imu_hz: int = 0
    # Config.json entries of this vehicle's ranging sensors: distance (TypeID 5), LiDAR (20, 21)
    range_sensors: tuple[VisionSensorConfig, ...] = ()
    gimbal: bool = False  # hear the gimbal status on 20006
    gimbal_seq_id: int | None = None  # only this gimbal's status (None: any on this vehicle)
    poses: bool = True  # False: the world's pose comes from elsewhere (the autopilot)
    # How much slower than the host's the simulation time may run and be followed
    # (``fusion.simclock``): every stream's sim clock, sensors' too.
    max_skew_ppm: float = SIM_MAX_SKEW_PPM

    def __post_init__(self) -> None:
        # A capture's record comes here unchecked by the config (its reader names the key).
        if not 0 <= self.max_skew_ppm <= MAX_SIM_SKEW_PPM:
            raise ValueError(
                f"max_skew_ppm: expected 0 to {MAX_SIM_SKEW_PPM:g}, got {self.max_skew_ppm!r}"
            )
        for sensor in self.range_sensors:
            # A ranging sensor is placed by its mount on the body: one on the ground, on
            # another sensor or with its attitude in the ground frame (TargetMountType 2-4),
            # or more than 100 m from the vehicle's centre, would range along another line.
            position = sensor.sensor_pos_xyz_m
            if sensor.target_mount_type not in _BODY_MOUNTS or not all(
                low <= p <= high
                for p, (low, high) in zip(position, MOUNT_POSITION_LIMITS_M, strict=True)
            ):
                raise ConfigError(
                    f"rflysim.config: VisionSensors[{sensor.index}] (SeqID {sensor.seq_id}): "
                    "expected a ranging sensor rigidly on the vehicle (TargetMountType 0 or 1) "
                    f"within 100 m of its centre, got TargetMountType "
                    f"{sensor.target_mount_type}, SensorPosXYZ {list(position)}",
                    "rflysim.config",
                )

    @property
    def pose_source(self) -> RflyPoseStream:
        """Odometry when it is requested (the configured source), otherwise the state; none
        when the pose comes from elsewhere."""
        if not self.poses:
            return RflyPoseStream.NONE
        return RflyPoseStream.ODOMETRY if self.request_odometry_hz else RflyPoseStream.STATE

    @property
    def allowed_senders(self) -> list[str]:
        """Only ``sim_host`` may send, on every bind (loopback included: another address in
        127/8 is another process's); the drops are counted as ``sender_not_allowed``."""
        return [self.sim_host]

    def adapter(self) -> RflyAdapter:
        return RflyAdapter(
            self.copter_id,
            pose_source=self.pose_source,
            gimbal_seq_id=self.gimbal_seq_id,
            estimator=partial(SimClockEstimator, max_skew_ppm=self.max_skew_ppm),
        )


def rfly_receivers(setup: RflySimSetup, **kwargs: Any) -> list[rio.UdpReceiver]:
    """The receivers ``setup`` needs, not started (``kwargs`` go to each ``UdpReceiver``)."""
    common: dict[str, Any] = {
        "host": setup.bind,
        "allowed_senders": setup.allowed_senders,
        **kwargs,
    }
    # The loop serves the small-message ports; only LiDAR frames (megabytes) get a thread.
    small = {"thread": False, **common}
    copter = setup.copter_id
    receivers = [rio.message_receiver(ports.coptersim_state_port(copter), "state", **small)]
    if setup.request_odometry_hz or setup.request_imu_hz:
        receivers.append(
            rio.message_receiver(ports.coptersim_reply_port(copter), "replies", **small)
        )
    distance = [s for s in setup.range_sensors if s.type_id == TypeId.DISTANCE]
    lidar = [s for s in setup.range_sensors if s.type_id != TypeId.DISTANCE]
    receivers += rio.vision_sensor_receivers(distance, **small)
    receivers += rio.vision_sensor_receivers(lidar, **common)
    if setup.gimbal:
        receivers.append(rio.rflysim3d_receiver(**small))
    return receivers


def reply_address(bind: str, sim_host: str) -> str:
    """The address CopterSim should send replies to: ``bind``, or for a wildcard bind the
    local address the route to ``sim_host`` leaves from."""
    if not is_wildcard(bind):
        return "127.0.0.1" if bind == "localhost" else bind
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((sim_host, ports.coptersim_control_port(1)))  # no datagram is sent
        address: str = probe.getsockname()[0]
        return address
    except OSError:
        return "127.0.0.1"
    finally:
        probe.close()


class SensorRequester:
    """Keeps CopterSim streaming odometry and IMU replies to our reply port."""

    def __init__(
        self,
        setup: RflySimSetup,
        *,
        refresh_s: float = REQUEST_REFRESH_S,
        reply_port: int = 0,
        control_port: int = 0,
    ) -> None:
        """``reply_port``: where replies go (0: the port map's ``31000 + N - 1``);
        ``control_port``: where CopterSim listens (0: the port map's ``30100 + 2(N - 1)``)."""
        self._setup = setup
        self._control_port = control_port
        self._refresh_ns = round(refresh_s * 1e9)
        self._refresh_s = refresh_s
        self._reply_ip = reply_address(setup.bind, setup.sim_host)
        self._reply_port = reply_port or ports.coptersim_reply_port(setup.copter_id)
        self._sender: UdpSender | None = None
        self.requests_sent = 0

    def close(self) -> None:
        if self._sender is not None:
            self._sender.close()
            self._sender = None

    async def run(self, scheduler: Scheduler, adapter: RflyAdapter) -> None:
        """Request now, then again every ``refresh_s`` while a stream has been silent as long."""
        setup = self._setup
        self._sender = sender = UdpSender()
        client = CopterSimClient(
            setup.copter_id,
            sender,
            sim_host=setup.sim_host,
            control_port=self._control_port or None,
        )
        try:
            while True:
                now = scheduler.now_ns()
                odometry = (setup.request_odometry_hz, adapter.last_odometry_rx_ns)
                imu = (setup.request_imu_hz, adapter.last_imu_rx_ns)
                for (rate, last), request in (
                    (odometry, client.request_odometry),
                    (imu, client.request_imu),
                ):
                    silent = last is None or now - last > self._refresh_ns
                    if rate and silent and request(rate, self._reply_ip, self._reply_port):
                        self.requests_sent += 1
                await scheduler.sleep(self._refresh_s)
        finally:
            with contextlib.suppress(OSError):
                self.close()

    def stats(self) -> dict[str, Any]:
        sender = self._sender
        return {
            "requests_sent": self.requests_sent,
            "send_failed": 0 if sender is None else sender.stats.failed,
            "reply_to": f"{self._reply_ip}:{self._reply_port}",
        }
