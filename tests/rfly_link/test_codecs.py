"""Hypothesis round trips for every codec, and dispatch/robustness properties."""

from __future__ import annotations

import dataclasses
import json
import struct

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rfly_link
from rfly_link import messages as m
from rfly_link import ports, sensors, wire
from rfly_link.errors import DecodeError, DropCause
from rfly_link.ports import PortRole

# One port of each role (CopterID 1, window 0).
ROLE_PORT = {
    PortRole.COPTERSIM_REQUEST: 20002,
    PortRole.TIME_STAMP: 20005,
    PortRole.RFLYSIM3D_OUT: 20006,
    PortRole.START_SIGNAL: 20007,
    PortRole.RFLYSIM3D_IN: 20010,
    PortRole.PX4_CONTROL: 20100,
    PortRole.PX4_STATE: 20101,
    PortRole.COPTERSIM_CONTROL: 30100,
    PortRole.COPTERSIM_STATE: 30101,
    PortRole.COPTERSIM_REPLY: 31000,
    PortRole.PX4_EXT: 40101,
    PortRole.CUSTOM_DATA: 50000,
}


def field_strategy(f: wire.Field) -> st.SearchStrategy[object]:
    if f.code == "s":
        return st.binary(max_size=f.count).map(lambda b: b.rstrip(b"\0"))
    if f.code == "f":
        one: st.SearchStrategy[object] = st.floats(width=32, allow_nan=False)
    elif f.code == "d":
        one = st.floats(allow_nan=False)
    else:
        bounds = f.bounds
        assert bounds is not None
        one = st.integers(*bounds)
    if not f.is_array:
        return one
    if f.count <= 32:
        return st.tuples(*[one] * f.count)
    # Large batch arrays: a few random entries over zeros keeps examples small.
    zero = f.default()[0]

    def spread(entries: dict[int, object]) -> tuple[object, ...]:
        values = [zero] * f.count
        for index, value in entries.items():
            values[index] = value
        return tuple(values)

    return st.dictionaries(st.integers(0, f.count - 1), one, max_size=8).map(spread)


def message_strategy(cls: type[m.WireMessage]) -> st.SearchStrategy[m.WireMessage]:
    parts = []
    for i, f in enumerate(cls.LAYOUT.fields):
        if i == 0 and cls.CHECKSUMS and not cls.ANY_CHECKSUM:
            parts.append(st.sampled_from(cls.CHECKSUMS))
        elif f.name in cls.FIXED:
            parts.append(st.just(cls.FIXED[f.name]))
        else:
            parts.append(field_strategy(f))
    return st.tuples(*parts).map(lambda values: cls(*values))


ALL_MESSAGES = [*ports.MESSAGE_ROLES, m.DistanceSensor, m.OpticalFlow, m.BoxTarget]
ALL_MESSAGES.append(m.RadarTarget)


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
# 60-odd classes: few examples each keeps the suite fast; the tables share one codec.
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_every_message_round_trips(cls: type[m.WireMessage], data: st.DataObject) -> None:
    msg = data.draw(message_strategy(cls))
    raw = msg.encode()
    assert len(raw) == cls.LAYOUT.size
    assert cls.decode(raw) == msg
    d = msg.to_dict()
    assert d["type"] == cls.__name__
    assert set(cls.LAYOUT.names) <= set(d)
    json.dumps(d)  # JSON-ready


@pytest.mark.parametrize("cls", list(ports.MESSAGE_ROLES), ids=lambda c: c.__name__)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_dispatch_finds_every_message_on_each_of_its_ports(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    msg = data.draw(message_strategy(cls))
    for role in ports.MESSAGE_ROLES[cls]:
        assert rfly_link.decode(msg.encode(), port=ROLE_PORT[role]) == msg


@pytest.mark.parametrize("cls", list(ports.MESSAGE_ROLES), ids=lambda c: c.__name__)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_no_datagram_is_decoded_as_a_type_its_port_does_not_carry(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    raw = data.draw(message_strategy(cls)).encode()
    for role, port in ROLE_PORT.items():
        try:
            value = rfly_link.decode(raw, port=port)
        except DecodeError:
            assert role not in ports.MESSAGE_ROLES[cls]
        else:
            assert role in ports.MESSAGE_ROLES[type(value)]
    # Without a port (or on one outside the map) a shared length and marker is never a guess.
    for port in (None, 5000):
        try:
            value = rfly_link.decode(raw, port=port)
        except rfly_link.errors.AmbiguousDatagram as exc:
            assert cls.__name__ in exc.candidates or ports.identified_by_port(cls)
        else:
            assert not ports.identified_by_port(type(value))
            assert type(value) is cls or ports.identified_by_port(cls)


def _outcome(decoder: object, raw: bytes) -> object:
    """A decoder's value (its type and bytes: a NaN is not equal to itself), or its error's
    type, cause and message."""
    try:
        value = decoder(raw)  # type: ignore[operator]
    except DecodeError as exc:
        return (type(exc), exc.cause, str(exc))
    return (type(value), value.encode())


@pytest.mark.parametrize("cls", list(ports.MESSAGE_ROLES), ids=lambda c: c.__name__)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_a_ports_decoder_decodes_and_refuses_as_decode_does(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    """The receivers' per-port decoder (structures looked up once) against ``decode``, on
    every port role: a message, the same bytes with another marker, and cut short."""
    raw = data.draw(message_strategy(cls)).encode()
    marker = data.draw(st.binary(min_size=4, max_size=4))
    for port in (*ROLE_PORT.values(), 5000, 9):
        decoder = rfly_link.dispatch.PortDecoder(port)
        for sample in (raw, marker + raw[4:], raw[:-1]):
            expected = _outcome(lambda d, port=port: rfly_link.decode(d, port=port), sample)
            assert _outcome(decoder, sample) == expected
    for role in ports.MESSAGE_ROLES[cls]:
        value = rfly_link.dispatch.PortDecoder(ROLE_PORT[role])(raw)
        # decoded without __init__: a value it accepts as it is
        values = [getattr(value, name) for name in cls.LAYOUT.names]
        assert type(value) is cls and cls(*values).encode() == raw


def test_shared_layouts_are_ambiguous_without_port() -> None:
    state = m.SOut2SimulatorSimpleTime(copter_id=1).encode()
    with pytest.raises(rfly_link.errors.AmbiguousDatagram) as info:
        rfly_link.decode(state)
    assert set(info.value.candidates) == {"SOut2SimulatorSimpleTime", "UE4PosNew", "ObjReqDataQuat"}
    assert info.value.cause is DropCause.AMBIGUOUS
    assert isinstance(rfly_link.decode(state, port=20006), m.ObjReqDataQuat)
    assert isinstance(rfly_link.decode(state, port=30103), m.SOut2SimulatorSimpleTime)
    assert isinstance(rfly_link.decode(state, port=20011), m.UE4PosNew)
    full = m.SOut2Simulator().encode()
    with pytest.raises(rfly_link.errors.AmbiguousDatagram, match="SOut2Simulator, UE4PosFull"):
        rfly_link.decode(full)
    with pytest.raises(rfly_link.errors.AmbiguousDatagram, match="port 5000"):
        rfly_link.decode(full, port=5000)
    assert type(rfly_link.decode(full, port=20010)) is m.UE4PosFull


@pytest.mark.parametrize(
    ("msg", "port"),
    [
        (m.ImuReply(), 20006),  # the IMU reply travels only on 31000 + N - 1
        (m.ImuReply(), 30101),
        (m.SensorReqCopterSim(), 30101),  # a request goes to 30100 + 2(N-1), not the state port
        (m.SensorReqCopterSim(), 31000),
        (m.OdomReply(), 20006),
        (m.CopterSimCrash(), 31001),
        (m.SOut2SimulatorSimpleTime(copter_id=1), 31000),  # 112 B shared by three, none here
        (m.PX4ExtMsg(), 31000),  # 48 B with the IMU's marker, on 40100 + 2N - 1 only
        (m.RflyTimeStmp(), 30101),  # 32 B like UE4CmdGPS, but another marker
        (m.OutCopterData(), 30100),  # the model's output, not an input
    ],
)
def test_structure_on_a_port_of_another_role_is_rejected(msg: m.WireMessage, port: int) -> None:
    with pytest.raises(rfly_link.errors.WrongPort, match=f"port {port}") as info:
        rfly_link.decode(msg.encode(), port=port)
    assert info.value.cause is DropCause.WRONG_PORT
    # Without a port, or on a port outside RflySim's map, a unique length and checksum decide.
    if type(msg) not in (m.SOut2SimulatorSimpleTime, m.CopterSimCrash):
        assert type(rfly_link.decode(msg.encode())) is type(msg)
        assert type(rfly_link.decode(msg.encode(), port=5000)) is type(msg)


def test_same_checksum_other_length_is_not_the_imu() -> None:
    # docs/protocol-decisions.md: 1234567898 also appears in a 48-byte message on another port
    # (PX4ExtMsg).
    data = struct.pack("<i", 1234567898) + bytes(44)
    with pytest.raises(rfly_link.errors.WrongPort, match="PX4ExtMsg"):
        rfly_link.decode(data, port=31000)
    assert isinstance(rfly_link.decode(data, port=40101), m.PX4ExtMsg)
    with pytest.raises(rfly_link.errors.WrongLength):
        rfly_link.decode(struct.pack("<i", 1234567898) + bytes(40), port=40101)


def test_unknown_checksum_names_the_expected_values() -> None:
    data = struct.pack("<i", 42) + bytes(36)
    with pytest.raises(rfly_link.errors.UnknownChecksum, match="1234567898") as info:
        rfly_link.decode(data)
    assert info.value.cause is DropCause.UNKNOWN_CHECKSUM


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.sampled_from([None, 9, 5000, *ROLE_PORT.values()]))
def test_decode_of_random_bytes_only_raises_decode_error(data: bytes, port: int | None) -> None:
    try:
        value = rfly_link.decode(data, port=port)
    except DecodeError as exc:
        assert isinstance(exc.cause, DropCause)
    else:
        assert isinstance(value, m.WireMessage)
    if port is not None:
        expected = _outcome(lambda d: rfly_link.decode(d, port=port), data)
        assert _outcome(rfly_link.dispatch.PortDecoder(port), data) == expected


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.binary(max_size=600))
def test_decode_sensor_of_random_bytes_only_raises_decode_error(type_id: int, data: bytes) -> None:
    try:
        rfly_link.decode_sensor(type_id, data, scale_m=10.0, width=4, height=2)
    except DecodeError as exc:
        assert isinstance(exc.cause, DropCause)


def test_message_construction_validates_fields() -> None:
    with pytest.raises(ValueError, match=r"SILIntFloat\.in_ints: expected 8 values, got 2"):
        m.SILIntFloat(in_ints=(1, 2))
    with pytest.raises(ValueError, match=r"checksum: expected one of \(1234567888,\)"):
        m.OdomReply(checksum=1)
    with pytest.raises(ValueError, match=r"UE4LabelMsg\.text: at most 120 bytes"):
        m.UE4LabelMsg(text=b"x" * 121)
    with pytest.raises(ValueError, match=r"SensorReqCopterSim\.port"):
        m.SensorReqCopterSim(port=70000).encode()
    with pytest.raises(ValueError, match=r"update_freq_hz: expected 1\.\.1000"):
        m.SensorReqCopterSim.build(m.CopterSimSensor.IMU, 0, "127.0.0.1", 31000)


point_layouts = st.sampled_from(list(sensors.PointLayout))


@settings(max_examples=60, deadline=None)
@given(
    layout=point_layouts,
    n=st.integers(0, 50),
    seed=st.integers(0, 2**32 - 1),
    copter_id=st.integers(-(2**31), 2**31 - 1),
    scale=st.floats(0.1, 500.0),
)
@example(  # a coordinate at the int16 limit: not a number (found by the search, once)
    layout=sensors.PointLayout.PREFIX36_INT16_XYZS, n=45, seed=7859, copter_id=0, scale=1.0
)
def test_point_cloud_round_trip(
    layout: sensors.PointLayout, n: int, seed: int, copter_id: int, scale: float
) -> None:
    rng = np.random.default_rng(seed)
    if layout.scaled:
        raw = rng.integers(-32767, 32768, size=(n, layout.channels)).astype(np.int16)
    else:
        raw = rng.uniform(-100, 100, size=(n, layout.channels)).astype(np.float32)
    payload = sensors.encode_point_cloud(
        layout, raw, copter_id=copter_id, axis_type=2, position_m=(1, 2, 3)
    )
    cloud = rfly_link.decode_sensor(20, payload, scale_m=scale, channels=layout.channels)
    if n > 0:  # an empty cloud fits several layouts; the first one wins
        assert cloud.layout.prefix is layout.prefix
        assert cloud.layout.channels == layout.channels
    assert cloud.point_count == n
    factor = np.float32(scale / 32767) if layout.scaled else np.float32(1)
    expected = np.multiply(raw[:, :3], factor, dtype=np.float32)
    if layout.scaled:  # a coordinate at the int16 limit was clipped by the sender: unknown
        expected[np.abs(raw[:, :3].astype(np.int32)) >= 32767] = np.nan
    np.testing.assert_array_equal(cloud.xyz_m, expected)
    if layout.channels == 4:
        np.testing.assert_array_equal(cloud.stencil, raw[:, 3].astype(np.float32))
    if layout.names_vehicle:
        assert cloud.copter_id == copter_id and cloud.axis_type == 2
    else:
        assert cloud.copter_id is None and cloud.axis_type is None


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 40), extra=st.sampled_from([1, 2, 3, 5]), claimed=st.integers(-5, 10**6))
def test_point_count_inconsistent_with_length_is_rejected(n: int, extra: int, claimed: int) -> None:
    payload = bytearray(
        sensors.encode_point_cloud(
            sensors.PointLayout.PREFIX36_INT16_XYZS, np.zeros((n, 4), np.int16)
        )
    )
    payload += bytes(extra)  # no longer an exact fit
    with pytest.raises(rfly_link.errors.InconsistentPayload, match="fits no layout"):
        rfly_link.decode_sensor(20, bytes(payload), scale_m=1.0)
    struct.pack_into("<i", payload, 32, claimed)  # absurd count, never trusted for allocation
    try:
        cloud = rfly_link.decode_sensor(20, bytes(payload), scale_m=1.0)
    except rfly_link.errors.InconsistentPayload:
        pass
    else:
        assert cloud.point_count * cloud.layout.bytes_per_point + 36 == len(payload)


@settings(max_examples=60, deadline=None)
@given(
    type_id=st.sampled_from([1, 2, 3, 4, 8, 9, 40, 41]),
    width=st.integers(1, 8),
    height=st.integers(1, 8),
    seed=st.integers(0, 1000),
)
def test_raw_image_round_trip(type_id: int, width: int, height: int, seed: int) -> None:
    dtype, channels = {2: ("<u2", 1), 3: ("u1", 1), 40: ("u1", 1)}.get(type_id, ("u1", 3))
    shape = (height, width, channels) if channels > 1 else (height, width)
    pixels = np.random.default_rng(seed).integers(0, 255, size=shape).astype(dtype)
    image = rfly_link.decode_sensor(type_id, pixels.tobytes(), width=width, height=height, mode=2)
    assert image.encoding is sensors.ImageEncoding.RAW
    np.testing.assert_array_equal(image.to_numpy(), pixels)
    assert image.to_dict()["shape"] == list(shape)


def test_raw_image_wrong_size_and_missing_dimensions() -> None:
    with pytest.raises(rfly_link.errors.WrongLength, match="needs 48 B, got 47"):
        rfly_link.decode_sensor(1, bytes(47), width=4, height=4, mode=2)
    with pytest.raises(rfly_link.errors.InconsistentPayload, match="need width and height"):
        rfly_link.decode_sensor(3, bytes(16), mode=2)


def test_jpeg_and_png_kept_as_bytes_and_decoded_with_opencv() -> None:
    import cv2

    bgr = np.zeros((16, 24, 3), np.uint8)
    bgr[:, :12] = (255, 0, 0)
    ok, jpeg = cv2.imencode(".jpg", bgr)
    assert ok
    image = rfly_link.decode_sensor(1, jpeg.tobytes(), mode=1)
    assert image.encoding is sensors.ImageEncoding.JPEG and image.data == jpeg.tobytes()
    pixels = image.to_numpy()
    assert pixels.shape == (16, 24, 3)
    assert pixels[8, 2, 0] > 200 and pixels[8, 20, 0] < 50  # blue channel first: BGR

    depth = (np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000).astype(np.uint16)
    ok, png = cv2.imencode(".png", depth)
    image = rfly_link.decode_sensor(2, png.tobytes())  # sniffed without a mode
    assert image.encoding is sensors.ImageEncoding.PNG
    np.testing.assert_array_equal(image.to_numpy(), depth)

    broken = rfly_link.decode_sensor(1, b"\xff\xd8\xff" + bytes(20), mode=1)
    with pytest.raises(DecodeError, match="does not decode"):
        broken.to_numpy()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(-(2**31), 2**31 - 1),
            st.tuples(*[st.floats(width=32, allow_nan=False)] * 5),
        ),
        max_size=10,
    )
)
def test_box_targets_round_trip(entries: list[tuple[int, tuple[float, ...]]]) -> None:
    targets = [m.BoxTarget(cid, *vals) for cid, vals in entries]
    decoded = rfly_link.decode_sensor(30, sensors.encode_targets(targets))
    assert list(decoded.targets) == targets


def test_target_count_inconsistent() -> None:
    payload = struct.pack("<i", 3) + bytes(16 * 2)
    with pytest.raises(rfly_link.errors.InconsistentPayload, match="target_count 3 needs 52 B"):
        rfly_link.decode_sensor(31, payload)


@pytest.mark.parametrize("layout", [wire.FRAGMENT_HEADER_24, wire.FRAGMENT_HEADER_32])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fragment_headers_round_trip(layout: wire.Layout, data: st.DataObject) -> None:
    values = tuple(data.draw(field_strategy(f)) for f in layout.fields)
    raw = layout.pack(values)
    assert len(raw) == layout.size == (24 if layout is wire.FRAGMENT_HEADER_24 else 32)
    assert layout.unpack(raw) == values


def test_layout_offsets_match_the_spec_tables() -> None:
    # docs/protocol-decisions.md, CopterSim: SOut2Simulator offsets (the bridge document's table
    # is wrong).
    assert wire.SOUT2SIMULATOR.offsets == {
        "checksum": 0, "copter_id": 4, "vehicle_type": 8, "reserved": 12,
        "velocity_ned_m_s": 16, "euler_rad": 28, "quaternion_wxyz": 40, "motor_rpm": 56,
        "acceleration_frd_m_s2": 88, "angular_rate_frd_rad_s": 100, "runned_time_s": 112,
        "position_ned_m": 120, "position_gps": 144,
    }  # fmt: skip
    # VSP 2.7 optical flow, packed.
    assert list(wire.OPTICAL_FLOW.offsets.values()) == [0, 8, 9, 11, 13, 17, 21, 22, 26, 30]
    # VSP 3.3 odometry reply.
    assert list(wire.ODOM_REPLY.offsets.values()) == [0, 4, 8, 16, 20, 22, 24, 48, 64, 76]
    # VSP 2.3 point-cloud prefix and 1.2 fragment headers.
    assert list(wire.POINT_CLOUD_PREFIX_36.offsets.values()) == [0, 4, 8, 20, 32]
    assert wire.FRAGMENT_HEADER_32.offsets["timestamp_s"] == 24
    assert wire.FRAGMENT_HEADER_24.offsets["timestamp_s"] == 16


def test_int16_cloud_without_scale_is_refused_not_mislabelled() -> None:
    payload = sensors.encode_point_cloud(
        sensors.PointLayout.PREFIX36_INT16_XYZS, np.ones((3, 4), np.int16)
    )
    with pytest.raises(ValueError, match="scale_m"):
        rfly_link.decode_sensor(20, payload)
    assert rfly_link.decode_sensor(20, payload, scale_m=32767.0).xyz_m[0, 0] == 1.0


def test_a_28_byte_prefix_cloud_is_not_misread_as_a_36_byte_one() -> None:
    pts = np.array([[40, 50, 2], [0, 200, 300], [7, 8, 9], [10, 11, 12]], dtype="<i2")
    # position (1, 2, 3): read as a 36-byte prefix, axis_type would be the bits of 2.0f.
    payload = sensors.encode_point_cloud(
        sensors.PointLayout.PREFIX28_INT16_XYZ, pts, position_m=(1, 2, 3)
    )
    cloud = rfly_link.decode_sensor(7, payload, scale_m=32767.0)
    assert cloud.layout is sensors.PointLayout.PREFIX28_INT16_XYZ and cloud.point_count == 4
    # position (1, 0, 3) gives axis_type 0, a valid value: both prefixes fit, so no guess.
    ambiguous = sensors.encode_point_cloud(
        sensors.PointLayout.PREFIX28_INT16_XYZ, pts, position_m=(1, 0, 3)
    )
    with pytest.raises(rfly_link.errors.InconsistentPayload, match="exactly one layout"):
        rfly_link.decode_sensor(7, ambiguous, scale_m=1.0)
    chosen = rfly_link.decode_sensor(7, ambiguous, scale_m=32767.0, channels=3)
    assert chosen.layout is sensors.PointLayout.PREFIX28_INT16_XYZ
    assert chosen.xyz_m.tolist() == pts.astype(np.float32).tolist()


def test_decode_sensor_parameters_are_typed_a_misspelt_one_is_an_error():
    """Config.json's aliases (otherParams, SendProtocol, DataWidth) are mapped once, by
    VisionSensorConfig.decode_params(); decode_sensor itself takes only typed names."""
    with pytest.raises(TypeError, match="scale_metres"):
        rfly_link.decode_sensor(20, b"", scale_metres=1.0)  # type: ignore[call-arg]


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_equality_hash_and_repr_are_what_a_generated_dataclass_gives(
    cls: type[m.WireMessage], data: st.DataObject
) -> None:
    """The messages are declared ``eq=False, repr=False`` (``WireMessage`` has one of each for
    all): judged against a twin dataclass with the generated methods, built here."""
    names = [f.name for f in dataclasses.fields(cls)]
    twin = dataclasses.make_dataclass(cls.__name__, names, frozen=True)
    twin.__qualname__ = cls.__qualname__
    first, second = data.draw(message_strategy(cls)), data.draw(message_strategy(cls))
    first_twin, second_twin = (twin(*(getattr(x, n) for n in names)) for x in (first, second))
    assert repr(first) == repr(first_twin)
    assert (first == second) is (first_twin == second_twin)
    assert first == cls.decode(first.encode()) and hash(first) == hash(first_twin)
    changed = dataclasses.replace(first, **{names[-1]: getattr(second, names[-1])})
    assert (changed == first) is (getattr(first, names[-1]) == getattr(second, names[-1]))
    other = next(c for c in ALL_MESSAGES if c is not cls)()
    assert first != other and first.__eq__(other) is NotImplemented
