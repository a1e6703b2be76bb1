"""CopterSim on loopback for end-to-end tests: a free CopterID and its 168 B state datagram."""

from __future__ import annotations

import os
import random

import pytest

from gizmo_host.rigs.free_ports import port_is_free
from rfly_link import messages as m
from rfly_link import ports

HOVER_NED_M = (10.0, 5.0, -20.0)


def free_copter_id() -> int:
    """A CopterID whose state and reply ports are both free here (the port map fixes them).

    The IDs are shared out among pytest-xdist's workers (``gwN`` takes those ``N`` modulo the
    worker count): a probe only sees the ports bound so far, so two workers starting a host at
    once could otherwise both pick one ID, and the second host's bind fails."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    mine = int(worker[2:]) % workers if worker[2:].isdigit() else 0
    ids = [i for i in range(300, ports.MAX_COPTERS + 1) if i % workers == mine]
    random.Random().shuffle(ids)  # concurrent runs on one machine pick different ids
    for copter_id in ids[:60]:
        wanted = (ports.coptersim_state_port(copter_id), ports.coptersim_reply_port(copter_id))
        if all(port_is_free(port) for port in wanted):
            return copter_id
    pytest.skip("no free CopterSim ports on 127.0.0.1")


def state_datagram(
    copter_id: int, sim_time_s: float, position_ned_m: tuple[float, float, float] = HOVER_NED_M
) -> bytes:
    """CopterSim's SOut2Simulator (168 B), level and still, through rfly_link's own encoder."""
    return m.SOut2Simulator(
        copter_id=copter_id,
        vehicle_type=3,
        velocity_ned_m_s=(0.0, 0.0, 0.0),
        euler_rad=(0.0, 0.0, 0.0),
        quaternion_wxyz=(1.0, 0.0, 0.0, 0.0),
        runned_time_s=sim_time_s,
        position_ned_m=position_ned_m,
    ).encode()
