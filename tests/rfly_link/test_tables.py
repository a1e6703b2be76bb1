"""Each message class against its field table, the dtype from the table, and the port map."""

from __future__ import annotations

import dataclasses
import inspect
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rfly_link
from rfly_link import messages as m
from rfly_link import port_table, ports, wire
from rfly_link.ports import PortRole
from rfly_link.wire.layout import Field, Layout, _f

RFLYSIM_PAGE = Path(__file__).resolve().parents[2] / "docs" / "rflysim.md"
ALL_CLASSES = sorted(
    (c for c in vars(m).values() if inspect.isclass(c) and issubclass(c, m.WireMessage)),
    key=lambda c: c.__name__,
)
ALL_CLASSES.remove(m.WireMessage)
ALL_LAYOUTS = sorted(
    {id(v): v for v in vars(wire).values() if isinstance(v, Layout)}.values(),
    key=lambda layout: layout.name,
)


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_each_class_declares_exactly_its_table(cls: type[m.WireMessage]) -> None:
    assert dataclasses.is_dataclass(cls)
    assert m.layout_mismatches(cls, cls.LAYOUT, cls.CHECKSUMS) == []
    assert tuple(f.name for f in dataclasses.fields(cls)) == cls.LAYOUT.names
    default = cls()
    assert hasattr(cls, "__slots__") and not hasattr(default, "__dict__")
    first = cls.LAYOUT.names[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(default, first, getattr(default, first))
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(default, first)
    assert len(default.encode()) == cls.LAYOUT.size
    for name in cls.FIXED:
        assert getattr(default, name) == cls.FIXED[name]


def test_every_class_with_a_port_is_in_the_port_map() -> None:
    payloads = {m.DistanceSensor, m.OpticalFlow, m.BoxTarget, m.RadarTarget}
    assert set(ALL_CLASSES) - payloads == set(ports.MESSAGE_ROLES)


def test_a_class_that_drifts_from_its_table_is_refused_when_created() -> None:
    table = Layout("T", "test", [_f("checksum", "i"), _f("xyz_m", "f", 3), _f("name", "s", 8)])

    with pytest.raises(TypeError, match=r"xyz_m: declared .*tuple\[float, \.\.\.\]"):

        @m.wire_message(table, 7)
        @dataclasses.dataclass(frozen=True, slots=True)
        class WrongKind(m.WireMessage):
            checksum: int = 7
            xyz_m: tuple[int, ...] = (0, 0, 0)
            name: bytes = b""

    with pytest.raises(TypeError, match=r"fields \('checksum', 'name', 'xyz_m'\) differ"):

        @m.wire_message(table, 7)
        @dataclasses.dataclass(frozen=True, slots=True)
        class WrongOrder(m.WireMessage):
            checksum: int = 7
            name: bytes = b""
            xyz_m: tuple[float, ...] = (0.0, 0.0, 0.0)

    with pytest.raises(TypeError, match=r"checksum: default 0, expected 7.*xyz_m: default is not"):

        @m.wire_message(table, 7)
        @dataclasses.dataclass(frozen=True, slots=True)
        class WrongDefaults(m.WireMessage):
            checksum: int = 0
            xyz_m: tuple[float, ...] = (0.0, 0.0)
            name: bytes = b""

    @m.wire_message(table, 7)
    @dataclasses.dataclass(frozen=True, slots=True)
    class Right(m.WireMessage):
        checksum: int = 7
        xyz_m: tuple[float, ...] = (0.0, 0.0, 0.0)
        name: bytes = b""

    assert Right(xyz_m=(1.0, 2.0, 3.0), name=b"ab").encode() == struct.pack(
        "<i3f8s", 7, 1.0, 2.0, 3.0, b"ab"
    )


def _values(layout: Layout, draw: st.DrawFn) -> list[object]:
    out: list[object] = []
    for f in layout.fields:
        if f.is_text:
            one: st.SearchStrategy[object] = st.binary(max_size=f.count).map(
                lambda b: b.rstrip(b"\0")
            )
        elif f.is_float:
            one = st.floats(width=32 if f.code == "f" else 64, allow_nan=False)
        else:
            bounds = f.bounds
            assert bounds is not None
            one = st.integers(*bounds)
        n = f.count if f.is_array else 1
        values = [draw(one) for _ in range(min(n, 4))] + [f.default() if f.is_text else 0] * (
            n - min(n, 4)
        )
        out.append(tuple(values) if f.is_array else values[0])
    return out


@pytest.mark.parametrize("layout", ALL_LAYOUTS, ids=lambda lay: lay.name)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_the_numpy_dtype_reads_what_the_struct_packs(layout: Layout, data: st.DataObject) -> None:
    values = _values(layout, data.draw)
    raw = layout.pack(values)
    assert layout.dtype.itemsize == layout.size == len(raw)
    record = np.frombuffer(raw, dtype=layout.dtype)[0]
    for f, value in zip(layout.fields, layout.unpack(raw), strict=True):
        got = record[f.name]
        if f.is_text:
            assert bytes(got).rstrip(b"\0") == value
        elif f.is_array:
            assert tuple(got.tolist()) == value
        else:
            assert got.item() == value


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (_f("port", "H"), 70000, r"T\.port: expected an integer in 0\.\.65535, got 70000"),
        (
            _f("ids", "i", 2),
            (1, 2**31),
            r"T\.ids: expected 2 values, each an integer in -2147483648",
        ),
        (_f("x", "f"), "a", r"T\.x: expected a float \(f\), got 'a'"),
    ],
)
def test_range_errors_name_the_field_and_the_range(
    field: Field, value: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Layout("T", "test", [field]).pack([value])


# --- the port map ------------------------------------------------------------------------------


def test_port_formulas_and_roles_agree() -> None:
    for n in (1, 2, ports.MAX_COPTERS):
        assert ports.port_role(ports.coptersim_state_port(n)) is PortRole.COPTERSIM_STATE
        assert ports.port_role(ports.coptersim_control_port(n)) is PortRole.COPTERSIM_CONTROL
        assert ports.port_role(ports.coptersim_reply_port(n)) is PortRole.COPTERSIM_REPLY
        assert ports.port_role(ports.px4_control_port(n)) is PortRole.PX4_CONTROL
        assert ports.port_role(ports.px4_state_port(n)) is PortRole.PX4_STATE
        assert ports.port_role(ports.px4_ext_port(n)) is PortRole.PX4_EXT
    assert (ports.coptersim_state_port(3), ports.coptersim_control_port(3)) == (30105, 30104)
    assert (ports.px4_state_port(3), ports.px4_control_port(3)) == (20105, 20104)
    assert (ports.coptersim_reply_port(3), ports.px4_ext_port(3)) == (31002, 40105)
    assert ports.rflysim3d_window_port(2) == 20012
    assert ports.vision_sensor_default_port(3) == 10002  # CFG 4.3: 9999 + SeqID
    assert (
        ports.port_role(ports.rflysim3d_window_port(ports.MAX_WINDOWS - 1)) is PortRole.RFLYSIM3D_IN
    )
    fixed = {20002: "coptersim_request", 20005: "time_stamp", 20006: "rflysim3d_out"}
    fixed |= {20007: "start_signal", 20009: "rflysim3d_in", 50000: "custom_data"}
    for port, role in fixed.items():
        assert ports.port_role(port).value == role
    for port in (None, 0, 5000, 20100 + 2 * ports.MAX_COPTERS, 40100, 65535):
        assert ports.port_role(port) is PortRole.UNKNOWN
    with pytest.raises(ValueError, match=r"copter_id: expected 1\.\.450, got 451"):
        ports.coptersim_state_port(ports.MAX_COPTERS + 1)
    with pytest.raises(ValueError, match="window_id"):
        ports.rflysim3d_window_port(ports.MAX_WINDOWS)


def test_no_two_series_share_a_port() -> None:
    seen: dict[int, str] = {}
    formulas = [
        ports.coptersim_state_port,
        ports.coptersim_control_port,
        ports.coptersim_reply_port,
        ports.px4_state_port,
        ports.px4_control_port,
        ports.px4_ext_port,
    ]
    for formula in formulas:
        for n in range(1, ports.MAX_COPTERS + 1):
            port = formula(n)
            assert port not in seen, f"{formula.__name__}({n}) = {port} is also {seen[port]}"
            seen[port] = f"{formula.__name__}({n})"
    windows = {ports.rflysim3d_window_port(w) for w in range(ports.MAX_WINDOWS)}
    assert not windows & seen.keys()


def test_the_docs_list_every_message_with_its_port_and_direction() -> None:
    text = RFLYSIM_PAGE.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- rfly-messages:begin .*?-->\n(.*?)<!-- rfly-messages:end -->", text, re.S
    )
    assert found, "docs/rflysim.md lacks the rfly-messages table markers"
    assert found.group(1) == port_table.message_table(), (
        "docs/rflysim.md table is stale: regenerate it with python -m rfly_link.port_table"
    )
    for cls in ports.MESSAGE_ROLES:
        assert f"`{cls.__name__}`" in found.group(1)


def test_public_names_fusion_consumes() -> None:
    for name in ("OdomReply", "ImuReply", "SOut2Simulator", "RflyTimeStmp", "odometry_in"):
        assert name in rfly_link.__all__ and hasattr(rfly_link, name)
    assert rfly_link.TypeId.LIDAR_WORLD == 21
