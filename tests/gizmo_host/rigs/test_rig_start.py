"""A demo rig whose picked port is taken before it binds it is built again with new picks (the
CI failure of stop 49: certify's rig lost its replies port to another socket and the whole
certification failed). The conflict is real: the test binds the port the rig picked, as
another program would, between the pick and the rig's bind."""

from __future__ import annotations

import asyncio
import socket

import pytest

from gizmo_host.errors import ServiceFailed
from gizmo_host.rigs import free_ports as free_ports_module
from gizmo_host.rigs.board.faults import FaultTimeline
from gizmo_host.rigs.demo import scene_rig
from gizmo_host.rigs.demo.scene_rig import START_ATTEMPTS, DemoRig, DemoSettings, start_rig
from gizmo_host.stream.events import ReceivedResult

pytestmark = pytest.mark.realtime

# free_ports(6) in DemoRig: boxes (the board binds it), distance, LiDAR, gimbal, replies (the
# host binds these), control (the stand-in binds it)
BOXES, REPLIES, CONTROL = 0, 4, 5


class Squatter:
    """Binds one of the rig's picks right after the pick, on the first ``times`` picks."""

    def __init__(self, index: int, times: int) -> None:
        self.index, self.times = index, times
        self.picks: list[list[int]] = []
        self.held: list[socket.socket] = []

    def free_ports(self, count: int = 1, kind: str = "udp", host: str = "127.0.0.1") -> list[int]:
        ports = free_ports_module.free_ports(count, kind, host)
        if count == 6:
            self.picks.append(ports)
            if len(self.held) < self.times:
                sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.bind((host, ports[self.index]))
                self.held.append(sock)
        return ports

    def close(self) -> None:
        for sock in self.held:
            sock.close()


@pytest.fixture
def squat(monkeypatch):
    made: list[Squatter] = []

    def make(index: int, times: int) -> Squatter:
        squatter = Squatter(index, times)
        monkeypatch.setattr(scene_rig, "free_ports", squatter.free_ports)
        made.append(squatter)
        return squatter

    yield make
    for squatter in made:
        squatter.close()


def _settings() -> DemoSettings:
    return DemoSettings("orbit", FaultTimeline(), board_duration_s=30.0)


@pytest.mark.parametrize("index", [BOXES, REPLIES, CONTROL], ids=["board", "host", "stand_in"])
def test_a_port_taken_before_its_bind_is_picked_again_and_the_rig_runs(squat, tmp_path, index):
    squatter = squat(index, times=1)
    built: list[DemoRig] = []

    async def scenario() -> int:
        frame = asyncio.Event()

        def build() -> DemoRig:
            rig = DemoRig(_settings(), tmp_path)
            rig.host.add_sink(lambda m: frame.set() if isinstance(m, ReceivedResult) else None)
            built.append(rig)
            return rig

        rig = await start_rig(build)
        try:
            await asyncio.wait_for(frame.wait(), 20)  # it runs: the host reads the board
            return rig.service.stats()["link"]["frames_ok"]
        finally:
            await rig.stop()

    frames = asyncio.run(scenario())
    assert len(built) == 2, "the rig is built once more after its port was taken"
    taken = squatter.picks[0][index]
    assert taken not in squatter.picks[1], (taken, squatter.picks)
    assert frames > 0


def test_a_port_taken_at_every_attempt_fails_naming_it(squat, tmp_path):
    squatter = squat(REPLIES, times=START_ATTEMPTS)
    built: list[DemoRig] = []

    def build() -> DemoRig:
        built.append(DemoRig(_settings(), tmp_path))
        return built[-1]

    with pytest.raises(ServiceFailed) as failed:
        asyncio.run(start_rig(build))
    assert len(built) == START_ATTEMPTS
    assert str(squatter.picks[-1][REPLIES]) in str(failed.value)
    assert "in use" in str(failed.value)


def _ephemeral_low() -> int:
    with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
        return int(f.read().split()[0])


@pytest.mark.parametrize("kind", ["udp", "tcp"])
def test_picks_are_distinct_free_and_below_the_ephemeral_range(kind):
    low = _ephemeral_low()
    if low < free_ports_module.PICK_TO:  # a machine with a wide range
        pytest.skip(f"the ephemeral range starts at {low}: the picks are the kernel's")
    picks = free_ports_module.free_ports(8, kind)
    assert len(set(picks)) == 8
    top = min(low, free_ports_module.PICK_TO)
    assert all(free_ports_module.PICK_FROM <= p < top for p in picks), picks
    for port in picks:  # free: each binds
        assert free_ports_module.port_is_free(port, kind)


def test_a_port_in_use_is_never_picked_and_too_few_is_an_error(monkeypatch):
    if _ephemeral_low() < free_ports_module.PICK_TO:
        pytest.skip("the picks are the kernel's here")
    first = free_ports_module.free_ports(1)[0]
    span = range(first, first + 3)
    if not all(free_ports_module.port_is_free(p) for p in span):
        pytest.skip(f"a port of {span} is in use")
    monkeypatch.setattr(free_ports_module, "PICK_FROM", span.start)
    monkeypatch.setattr(free_ports_module, "PICK_TO", span.stop)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as held:
        held.bind(("127.0.0.1", span[1]))
        for _ in range(20):
            assert sorted(free_ports_module.free_ports(2)) == [span[0], span[2]]
        with pytest.raises(OSError, match="no 3 free udp ports"):
            free_ports_module.free_ports(3)
