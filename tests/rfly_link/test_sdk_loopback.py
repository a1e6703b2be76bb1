"""Every SDK message through the real receivers over loopback UDP (issue 13 acceptance).

Each receiver decodes as the port it stands for (``MessagePipeline(logical_port)``) while bound
to an ephemeral port. A case either comes out as a frame equal to what was sent, or is counted
as a drop with the right cause; datagrams of one sender arrive in order on loopback, so the
drops sent before the last frame are counted by the time that frame arrives.
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
from collections.abc import Awaitable, Callable, Sequence

import pytest

import rfly_link
from gizmo_host.cli import rfly as cli
from rfly_link import io as rio
from rfly_link import messages as m
from rfly_link import ports
from rfly_link.ports import PortRole

WAIT_S = 5.0
ROLE_PORT = {
    PortRole.COPTERSIM_REQUEST: ports.COPTERSIM_REQUEST_PORT,
    PortRole.TIME_STAMP: ports.TIME_STAMP_PORT,
    PortRole.RFLYSIM3D_OUT: ports.RFLYSIM3D_OUT_PORT,
    PortRole.START_SIGNAL: ports.START_SIGNAL_PORT,
    PortRole.RFLYSIM3D_IN: ports.rflysim3d_window_port(1),
    PortRole.PX4_CONTROL: ports.px4_control_port(2),
    PortRole.PX4_STATE: ports.px4_state_port(2),
    PortRole.COPTERSIM_CONTROL: ports.coptersim_control_port(2),
    PortRole.COPTERSIM_STATE: ports.coptersim_state_port(2),
    PortRole.COPTERSIM_REPLY: ports.coptersim_reply_port(2),
    PortRole.PX4_EXT: ports.px4_ext_port(2),
    PortRole.CUSTOM_DATA: ports.CUSTOM_DATA_PORT,
}
UNMAPPED_PORT = 5000


def example(cls: type[m.WireMessage]) -> m.WireMessage:
    """A value with a distinct non-zero entry in every field (the last allowed checksum)."""
    values: list[object] = []
    for i, f in enumerate(cls.LAYOUT.fields):
        if i == 0 and cls.CHECKSUMS:
            values.append(cls.CHECKSUMS[-1])
        elif f.name in cls.FIXED:
            values.append(cls.FIXED[f.name])
        elif f.is_text:
            values.append(f"{f.name[:4]}{i}".encode()[: f.count])
        else:
            bounds = f.bounds
            one = [float(i) + 0.5 + k for k in range(f.count)] if f.is_float else None
            if one is None:
                assert bounds is not None
                one = [min(bounds[1], i + k + 1) for k in range(f.count)]
            values.append(tuple(one) if f.is_array else one[0])
    return cls(*values)


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 30))


async def exchange(
    logical_port: int, drops: Sequence[bytes], frames: Sequence[m.WireMessage]
) -> tuple[list[m.WireMessage], dict[str, int]]:
    """Send ``drops`` then ``frames`` to a receiver standing for ``logical_port``."""
    receiver = rio.UdpReceiver(rio.MessagePipeline(logical_port), port=0)
    async with receiver:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            target = ("127.0.0.1", receiver.bound_port)
            for data in drops:
                tx.sendto(data, target)
            for msg in frames:
                tx.sendto(msg.encode(), target)
            got = [(await asyncio.wait_for(receiver.get(), WAIT_S)).value for _ in frames]
            return got, receiver.stats.drops


@pytest.mark.parametrize("role", list(ROLE_PORT), ids=lambda r: r.value)
def test_every_message_of_a_port_comes_out_of_its_receiver(role: PortRole) -> None:
    sent = [example(cls) for cls, roles in ports.MESSAGE_ROLES.items() if role in roles]
    assert sent

    async def main() -> None:
        got, drops = await exchange(ROLE_PORT[role], [], sent)
        assert got == sent
        assert [type(v) for v in got] == [type(v) for v in sent]
        assert drops == {}

    run(main)


def test_ue4_ext_act_144_is_received_and_the_80_byte_layout_is_counted() -> None:
    # Issue 13 item 2: the SDK sends <2i1d16d (144 B).
    ext = m.UE4ExtAct(copter_id=3, runned_time_s=2.5, action_ext=tuple(0.1 * i for i in range(16)))
    assert len(ext.encode()) == 144
    old_80 = ext.encode()[:16] + bytes(64)

    async def main() -> None:
        got, drops = await exchange(ROLE_PORT[PortRole.RFLYSIM3D_IN], [old_80], [ext])
        assert got == [ext]
        assert drops == {"wrong_length": 1}

    run(main)


def test_crash_report_on_the_state_port_is_a_crash() -> None:
    # Issue 13 item 3: RflySim3D also sends the 12 B crash to 30100 + 2N - 1.
    crash = m.CopterSimCrash(copter_id=2, target_id=5)

    async def main() -> None:
        got, drops = await exchange(ROLE_PORT[PortRole.COPTERSIM_STATE], [], [crash])
        assert got == [crash] and type(got[0]) is m.CopterSimCrash
        assert drops == {}

    run(main)


@pytest.mark.parametrize(
    ("msg", "role", "lookalike"),
    [
        (m.StartSignal(copter_id=4), PortRole.START_SIGNAL, m.CopterSimCrash),
        (m.HILStateShort(gps_home_int=(1, 2, 3)), PortRole.PX4_STATE, m.UE4PosScale),
    ],
    ids=["start_signal", "hil_state_short"],
)
def test_shared_length_and_checksum_decode_by_port_and_never_by_guess(
    msg: m.WireMessage, role: PortRole, lookalike: type[m.WireMessage]
) -> None:
    # Issue 13 item 4: sendStartMsg came out as CopterSimCrash, SendHILData as UE4PosScale.
    async def main() -> None:
        got, drops = await exchange(ROLE_PORT[role], [], [msg])
        assert got == [msg] and type(got[0]) is type(msg)
        sentinel = m.ImuReply()  # unique length and marker: decodes anywhere off the map
        got, drops = await exchange(UNMAPPED_PORT, [msg.encode()], [sentinel])
        assert got == [sentinel]
        assert drops == {"ambiguous": 1}
        # The look-alike's own port reads the same bytes as the look-alike, as it must.
        other_role = next(iter(ports.MESSAGE_ROLES[lookalike] - ports.MESSAGE_ROLES[type(msg)]))
        got, _ = await exchange(ROLE_PORT[other_role], [], [msg])
        assert type(got[0]) is lookalike

    run(main)


def test_structures_without_a_checksum_are_counted_off_their_port() -> None:
    state = m.NetDataShort(copter_id=2, crash_target=-1, runned_time_s=1.0)
    other_payload = bytearray(state.encode())
    other_payload[4:8] = (112).to_bytes(4, "little")
    custom = m.CustomData(checksum=99, copter_id=1)

    async def main() -> None:
        drops = [bytes(other_payload)]
        got, counted = await exchange(ROLE_PORT[PortRole.COPTERSIM_STATE], drops, [state])
        assert got == [state] and counted == {"inconsistent": 1}
        drops = [state.encode(), custom.encode(), m.HILCmdData().encode()]
        got, counted = await exchange(UNMAPPED_PORT, drops, [m.ImuReply()])
        assert counted == {"ambiguous": 3}
        got, counted = await exchange(ROLE_PORT[PortRole.CUSTOM_DATA], [], [custom])
        assert got == [custom]

    run(main)


def test_structures_on_a_port_of_another_role_are_counted() -> None:
    drops = [
        m.PX4ExtMsg().encode(),  # 48 B with the IMU's marker: a 40100-series message
        m.SensorReqCopterSim().encode(),  # a request, sent to the control port
        m.OutCopterData().encode(),  # the model's output, on the state port
        bytes(48),  # no 48 B structure travels on a reply port, whatever its marker
    ]

    async def main() -> None:
        got, counted = await exchange(ROLE_PORT[PortRole.COPTERSIM_REPLY], drops, [m.ImuReply()])
        assert got == [m.ImuReply()]
        assert counted == {"wrong_port": 3, "wrong_length": 1}

    run(main)


def test_gizmo_host_rfly_prints_every_received_type() -> None:
    roles = (PortRole.TIME_STAMP, PortRole.PX4_STATE, PortRole.PX4_EXT, PortRole.COPTERSIM_STATE)
    sent = {
        role: [example(c) for c, rs in ports.MESSAGE_ROLES.items() if role in rs] for role in roles
    }

    async def main() -> str:
        receivers = [rio.UdpReceiver(rio.MessagePipeline(ROLE_PORT[r]), port=0) for r in roles]
        out = io.StringIO()
        listening = asyncio.create_task(
            cli.listen(receivers, count=sum(map(len, sent.values())), out=out)
        )
        while not all(r.bound_port for r in receivers):  # bound once started
            await asyncio.sleep(0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            for receiver, role in zip(receivers, roles, strict=True):
                for msg in sent[role]:
                    tx.sendto(msg.encode(), ("127.0.0.1", receiver.bound_port))
        await asyncio.wait_for(listening, WAIT_S)
        return out.getvalue()

    output = asyncio.run(asyncio.wait_for(main(), 30))
    lines = [json.loads(line) for line in output.splitlines()]
    printed = sorted(line["value"]["type"] for line in lines)
    assert printed == sorted(type(msg).__name__ for msgs in sent.values() for msg in msgs)
    time_stamp = next(line["value"] for line in lines if line["value"]["type"] == "RflyTimeStmp")
    assert time_stamp == example(m.RflyTimeStmp).to_dict()


def test_coptersim_client_sends_control_and_px4_structures_to_their_ports() -> None:
    from rfly_link.io.clients import CopterSimClient, UdpSender

    def received(sock: socket.socket, port: int) -> m.WireMessage:
        return rfly_link.decode(sock.recv(65535), port=port)

    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as px4,
        UdpSender() as sender,
    ):
        for sock in (control, px4):
            sock.bind(("127.0.0.1", 0))
            sock.settimeout(WAIT_S)
        client = CopterSimClient(
            2, sender, control_port=control.getsockname()[1], px4_port=px4.getsockname()[1]
        )
        assert client.address[1] != ports.coptersim_control_port(2)  # overridden for the test
        assert CopterSimClient(2, sender).px4_address[1] == ports.px4_control_port(2)
        params = m.PX4DynModiParams.from_params(2, {5: 1.5})
        offboard = m.OffboardShortData(ctrl_mode=m.OffboardMode.VELOCITY_NED, controls=(1, 0, 0, 0))
        assert client.send(params) and client.send_px4(offboard)
        assert received(control, ports.coptersim_control_port(2)) == params
        assert received(px4, ports.px4_control_port(2)) == offboard
        assert sender.stats.sent == 2
