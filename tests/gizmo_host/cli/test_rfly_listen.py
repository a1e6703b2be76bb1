"""``gizmo-host rfly`` hears every port it offers: the real command (``main(argv)``) in a thread,
real UDP over loopback, one printed event per case."""

from __future__ import annotations

import json
import random
import socket
import threading

import pytest

from gizmo_host.cli.main import main
from rfly_link import messages as m
from rfly_link import ports

WAIT_S = 10.0
COPTER = 7


def random_loopback() -> str:
    """A loopback address of its own (127.0.0.0/8), so fixed ports never clash with others'."""
    return f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"


def run_rfly(
    args: list[str],
    message: m.WireMessage,
    target: tuple[str, int],
    capsys: pytest.CaptureFixture[str],
) -> dict[str, object]:
    """Run ``gizmo-host rfly ARGS --count 1``, sending ``message`` to ``target`` until it exits
    (datagrams sent before its sockets are bound are lost, so it is repeated); the one event."""
    result: list[int] = []
    argv = ["rfly", *args, "--count", "1", "--duration", str(WAIT_S)]
    command = threading.Thread(target=lambda: result.append(main(argv)))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        if ports.port_role(target[1]) in (
            ports.PortRole.START_SIGNAL,
            ports.PortRole.COPTERSIM_REQUEST,
        ):
            tx.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        command.start()
        data = message.encode()
        while command.is_alive():
            tx.sendto(data, target)
            command.join(0.005)
    captured = capsys.readouterr()
    assert result == [0], captured.err
    (line,) = captured.out.splitlines()
    event: dict[str, object] = json.loads(line)
    return event


CASES = [
    # (options, message, port): every port beyond the state and reply ports of --copter.
    (["--copter", str(COPTER)], m.RflyTimeStmp(copter_id=COPTER, heart_count=42), 20005),
    (
        ["--copter", str(COPTER)],
        m.HILStateShort(position_ned_m=(1.0, 2.0, -3.0)),
        ports.px4_state_port(COPTER),
    ),
    (
        ["--copter", str(COPTER)],
        m.PX4ExtMsg(copter_id=COPTER, controls=(0.5,) * 8),
        ports.px4_ext_port(COPTER),
    ),
    (["--custom-data"], m.CustomData(copter_id=COPTER, values=(1.5,) * 16), 50000),
]


@pytest.mark.parametrize(("options", "message", "port"), CASES)
def test_every_unicast_port_prints_its_message(
    options: list[str], message: m.WireMessage, port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    host = random_loopback()
    event = run_rfly(["--bind", host, *options], message, (host, port), capsys)
    assert event["port"] == port
    assert event["value"] == json.loads(json.dumps(message.to_dict()))


MULTICAST_CASES = [
    (["--start-signal"], m.StartSignal(copter_id=COPTER), 20007),
    (
        ["--coptersim-requests"],
        m.CptSimCmd.switch(COPTER, m.CptSimTarget.MAP, "Grasslands"),
        20002,
    ),
]


@pytest.mark.parametrize(("options", "message", "port"), MULTICAST_CASES)
def test_every_multicast_port_prints_its_message(
    options: list[str], message: m.WireMessage, port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    # Sent to the group only: the receiver must have joined it (on the loopback interface).
    args = [*options, "--multicast-interface", "127.0.0.1"]
    event = run_rfly(args, message, (ports.MULTICAST_GROUP, port), capsys)
    assert event["port"] == port
    assert event["value"] == json.loads(json.dumps(message.to_dict()))
