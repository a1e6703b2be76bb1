"""Identify a CopterSim, PX4 or RflySim3D datagram by length, checksum and port; never guess.

docs/protocol-decisions.md, "RflySim3D receive side": some structures share both length and checksum
(12 B / 1234567890 is a crash report or a start signal, 52 B / 1234567890 a vehicle update or
PX4's state, 112 B / 1234567891 and 168 B / 123456789 three and two structures). The port's
role in :mod:`rfly_link.ports` decides, and a structure that never travels on that role is
rejected (:class:`WrongPort`). Without a port, or on a port outside the map, a datagram that
fits several structures raises :class:`AmbiguousDatagram` listing them; so does one that only
a port could identify (structures without a fixed marker). Fragmented vision-sensor data is
not handled here: see :mod:`rfly_link.reassembly`.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final

from rfly_link import messages as m
from rfly_link.errors import AmbiguousDatagram, UnknownChecksum, WrongLength, WrongPort
from rfly_link.ports import MESSAGE_ROLES, PortRole, identified_by_port, port_role


def _by_length() -> dict[int, tuple[type[m.WireMessage], ...]]:
    table: dict[int, list[type[m.WireMessage]]] = defaultdict(list)
    for cls in MESSAGE_ROLES:
        table[cls.LAYOUT.size].append(cls)
    return {size: tuple(classes) for size, classes in table.items()}


_BY_LENGTH: Final[Mapping[int, tuple[type[m.WireMessage], ...]]] = MappingProxyType(_by_length())


def candidates(
    data: bytes | bytearray | memoryview, role: PortRole = PortRole.UNKNOWN
) -> tuple[type[m.WireMessage], ...]:
    """Structures that fit ``data``: by length and marker, and by ``role`` for those without one."""
    out = []
    for cls in _BY_LENGTH.get(len(data), ()):
        if identified_by_port(cls):
            if role in MESSAGE_ROLES[cls]:
                out.append(cls)
        elif cls.LAYOUT.checksum_of(data) in cls.CHECKSUMS:
            out.append(cls)
    return tuple(out)


def decode(data: bytes | bytearray | memoryview, *, port: int | None = None) -> m.WireMessage:
    """Decode one datagram to its typed value.

    ``port`` is the UDP port the datagram was sent to (ours when receiving). When it has a role
    in RflySim's port map, only structures that travel on that role are accepted. Raises
    :class:`WrongLength`, :class:`UnknownChecksum`, :class:`WrongPort`,
    :class:`AmbiguousDatagram` or :class:`InconsistentPayload` (all :class:`DecodeError`).
    """
    classes = _BY_LENGTH.get(len(data))
    if classes is None:
        raise WrongLength(f"datagram: no known structure is {len(data)} bytes long")
    role = port_role(port)
    where = f"port {port} ({role.value})" if port is not None else "no port given"
    found = candidates(data, role)
    if role is not PortRole.UNKNOWN:
        # Check length *and* port: 1234567898 is the IMU only on reply ports
        # (docs/protocol-decisions.md, CopterSim).
        by_port = tuple(c for c in found if role in MESSAGE_ROLES[c])
        if not by_port:
            raise _wrong_port(data, classes, found, role, where)
        found = by_port
    elif not found:
        port_only = tuple(c.__name__ for c in classes if identified_by_port(c))
        if not port_only:
            raise _unknown_checksum(data, classes)
        raise AmbiguousDatagram(
            f"datagram of {len(data)} B on {where}: only a port identifies {', '.join(port_only)}",
            port_only,
        )
    if len(found) > 1:
        names = tuple(c.__name__ for c in found)
        raise AmbiguousDatagram(
            f"datagram of {len(data)} B fits {', '.join(names)}; {where}", names
        )
    return found[0].decode(data)


def _wrong_port(
    data: bytes | bytearray | memoryview,
    classes: tuple[type[m.WireMessage], ...],
    found: tuple[type[m.WireMessage], ...],
    role: PortRole,
    where: str,
) -> WrongPort | WrongLength | UnknownChecksum:
    """Why nothing fits on this role: a structure of another role, or none of this length."""
    if found:
        names = ", ".join(c.__name__ for c in found)
        allowed = sorted({r.value for c in found for r in MESSAGE_ROLES[c]})
        return WrongPort(
            f"datagram of {len(data)} B ({names}) on {where}: "
            f"expected a port of role {' or '.join(allowed)}"
        )
    here = tuple(c for c in classes if role in MESSAGE_ROLES[c])
    if not here:
        return WrongLength(f"datagram on {where}: no structure of {len(data)} B travels there")
    return _unknown_checksum(data, here)


def _unknown_checksum(
    data: bytes | bytearray | memoryview, classes: tuple[type[m.WireMessage], ...]
) -> UnknownChecksum:
    marked = [c for c in classes if not identified_by_port(c)]
    markers = sorted({c.LAYOUT.checksum_of(data) for c in marked})
    expected = sorted({x for c in marked for x in c.CHECKSUMS})
    return UnknownChecksum(f"datagram of {len(data)} B: checksum {markers} is none of {expected}")


class PortDecoder:
    """``decode(data, port=port)`` for one port, with the port's structures looked up once:
    a datagram that fits exactly one of them is decoded at once; any other goes through
    ``decode``, which says why it fits none or several."""

    __slots__ = ("_by_length", "port")

    def __init__(self, port: int) -> None:
        self.port = port
        role = port_role(port)
        self._by_length: dict[int, tuple[tuple[type[m.WireMessage], _Marker | None], ...]] = {}
        if role is PortRole.UNKNOWN:
            return  # nothing but the port may tell some structures apart: always ``decode``
        for size, classes in _BY_LENGTH.items():
            self._by_length[size] = tuple(
                (cls, None if identified_by_port(cls) else _marker(cls))
                for cls in classes
                if role in MESSAGE_ROLES[cls]
            )

    def __call__(self, data: bytes | bytearray | memoryview) -> m.WireMessage:
        found: type[m.WireMessage] | None = None
        for cls, marker in self._by_length.get(len(data), ()):
            if marker is None or marker(data)[0] in cls.CHECKSUMS:
                if found is not None:
                    found = None
                    break  # several: ``decode`` says which
                found = cls
        if found is None:
            return decode(data, port=self.port)
        return found.decode(data)


_Marker = Callable[[bytes | bytearray | memoryview], tuple[int]]


def _marker(cls: type[m.WireMessage]) -> _Marker:
    """Reads ``cls``'s checksum marker as ``LAYOUT.checksum_of`` does."""
    unpack: _Marker = struct.Struct("<" + cls.LAYOUT.fields[0].code).unpack_from
    return unpack
