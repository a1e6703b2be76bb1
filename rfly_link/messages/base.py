"""The behaviour every fixed-size message shares, and the check that a class matches its table.

A message is a frozen, slotted dataclass whose fields are declared in its class body, in wire
order. :func:`wire_message` binds it to its :class:`~rfly_link.wire.Layout` and refuses, when
the class is created, any difference between the two (names, order, kinds, array lengths,
defaults), so the table that drives the struct, the dtype and the range checks cannot drift
from the typed fields. Encoder, decoder and ``to_dict`` come from the table.

The messages are declared ``eq=False, repr=False``: :class:`WireMessage` compares, hashes and
shows every one from its table, as the generated methods would. Generating them for the 73
classes (``exec`` of their source) cost 17 ms of every command's start-up. Likewise each is
declared with :func:`message_dataclass`: to the type checker the frozen dataclass it reads (a
typed ``__init__``, no assignment), at run time the same fields and slots, made frozen and
initialised by :class:`WireMessage`'s own ``__init__``, ``__setattr__`` and ``__delattr__``
instead of three generated for each class (22 ms more of every command's start-up, every
command reading its settings through this package).
"""

from __future__ import annotations

import dataclasses
import operator
import types
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rfly_link.errors import InconsistentPayload, UnknownChecksum, WrongLength
from rfly_link.wire.layout import Field, Layout

__all__ = [
    "WireMessage",
    "izeros",
    "layout_mismatches",
    "message_dataclass",
    "wire_message",
    "zeros",
]

T = TypeVar("T", bound="WireMessage")

# How every message is declared (its decorator's arguments), checked where it is made.
_DECLARED = {"frozen": True, "slots": True, "eq": False, "repr": False}

if TYPE_CHECKING:
    from dataclasses import dataclass as message_dataclass
else:

    def message_dataclass(**declared: bool) -> Callable[[type[T]], type[T]]:
        """A message's frozen, slotted dataclass without generated methods (module doc)."""
        if declared != _DECLARED:
            raise TypeError(f"a wire message is declared with {_DECLARED}, not {declared}")
        return dataclasses.dataclass(init=False, eq=False, repr=False, slots=True)


def zeros(count: int) -> tuple[float, ...]:
    """Default for a float array field."""
    return (0.0,) * count


def izeros(count: int) -> tuple[int, ...]:
    """Default for an integer array field."""
    return (0,) * count


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, bytes):
        return value.split(b"\0", 1)[0].decode("utf-8", "replace")
    return value


class WireMessage:
    """Behaviour shared by every message class (bound to its table by :func:`wire_message`).

    ``CHECKSUMS`` lists the markers the first field may hold; empty means the structure has no
    marker and only its port identifies it (see :mod:`rfly_link.ports`). ``ANY_CHECKSUM``
    marks a structure whose sender picks the marker (``CustomData``). ``FIXED`` names fields
    with the one value they may hold (a ``payload_len``): another value is rejected, and a
    decoded one raises :class:`InconsistentPayload`.
    """

    __slots__ = ()
    LAYOUT: ClassVar[Layout]
    CHECKSUMS: ClassVar[tuple[int, ...]]
    ANY_CHECKSUM: ClassVar[bool] = False
    FIXED: ClassVar[Mapping[str, int]] = MappingProxyType({})
    # Each field's slot setter, in wire order: ``decode`` fills a new value with what it has
    # checked already (None: through ``__init__``, a class with a check of its own).
    _SETTERS: ClassVar[tuple[Callable[[Any, Any], None], ...] | None] = None
    # The field values in wire order, for ``__eq__``, ``__hash__`` and ``__repr__``.
    _VALUES: ClassVar[Callable[[Any], tuple[Any, ...]]]
    # Each field's name and default, and its slot's setter, in wire order: ``__init__``'s.
    _DEFAULTS: ClassVar[tuple[tuple[str, Any], ...]]
    _SLOT_SETTERS: ClassVar[tuple[Callable[[Any, Any], None], ...]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """The fields in wire order, by position or by name, each one not given its declared
        default; then ``__post_init__``'s checks: the ``__init__`` a dataclass would write."""
        cls = type(self)
        fields = cls._DEFAULTS
        if len(args) > len(fields):
            raise TypeError(
                f"{cls.__name__}() takes {len(fields)} positional arguments, got {len(args)}"
            )
        values = list(args)
        for name, default in fields[len(args) :]:
            values.append(kwargs.pop(name, default))
        if kwargs:
            name = next(iter(kwargs))
            what = "multiple values for" if name in cls.LAYOUT.names else "an unexpected keyword"
            raise TypeError(f"{cls.__name__}() got {what} argument {name!r}")
        for setter, value in zip(cls._SLOT_SETTERS, values, strict=True):
            setter(self, value)
        self.__post_init__()

    if not TYPE_CHECKING:  # (to the type checker each message is a frozen dataclass already)

        def __setattr__(self, name: str, value: object) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name: str) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied and pickled through ``__init__`` (a slot set by ``setattr`` would raise)."""
        return (type(self), type(self)._VALUES(self))

    def __post_init__(self) -> None:
        for f in self.LAYOUT.fields:
            value = getattr(self, f.name)
            if f.is_array:
                if not isinstance(value, tuple):
                    value = tuple(value)
                    object.__setattr__(self, f.name, value)
                if len(value) != f.count:
                    raise ValueError(
                        f"{type(self).__name__}.{f.name}: expected {f.count} values, "
                        f"got {len(value)}"
                    )
            elif f.is_text:
                if isinstance(value, str):
                    value = value.encode("utf-8")
                    object.__setattr__(self, f.name, value)
                if len(value) > f.count:
                    raise ValueError(
                        f"{type(self).__name__}.{f.name}: at most {f.count} bytes, got {len(value)}"
                    )
        for name, expected in self.FIXED.items():
            if getattr(self, name) != expected:
                raise ValueError(
                    f"{type(self).__name__}.{name}: expected {expected}, got {getattr(self, name)}"
                )
        if self.CHECKSUMS and not self.ANY_CHECKSUM:
            checksum = getattr(self, self.LAYOUT.names[0])
            if checksum not in self.CHECKSUMS:
                raise ValueError(
                    f"{type(self).__name__}.checksum: expected one of {self.CHECKSUMS}, "
                    f"got {checksum}"
                )

    @classmethod
    def decode(cls: type[T], data: bytes | bytearray | memoryview) -> T:
        """Decode exactly ``LAYOUT.size`` bytes; raise a :class:`DecodeError` subclass otherwise."""
        layout = cls.LAYOUT
        if len(data) != layout.size:
            raise WrongLength(f"{cls.__name__}: expected {layout.size} bytes, got {len(data)}")
        values = layout.unpack(data)
        if cls.CHECKSUMS and not cls.ANY_CHECKSUM and values[0] not in cls.CHECKSUMS:
            raise UnknownChecksum(
                f"{cls.__name__}.checksum: expected one of {cls.CHECKSUMS}, got {values[0]}"
            )
        for name, expected in cls.FIXED.items():
            value = values[layout.names.index(name)]
            if value != expected:
                raise InconsistentPayload(
                    f"{cls.__name__}.{name}: expected {expected}, got {value}"
                )
        setters = cls._SETTERS
        if setters is None:
            return cls(*values)
        # What ``__post_init__`` checks holds already: arrays are tuples of their count and
        # text is at most its bytes (the struct's), the marker and fixed fields were checked.
        message = object.__new__(cls)
        for setter, value in zip(setters, values, strict=True):
            setter(message, value)
        return message

    def __eq__(self, other: object) -> bool:
        """Equal to a message of the same class with equal fields (a generated ``__eq__``)."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = type(self)._VALUES
        return values(self) == values(other)

    def __hash__(self) -> int:
        return hash(type(self)._VALUES(self))

    def __repr__(self) -> str:
        shown = map("%s=%r".__mod__, zip(self.LAYOUT.names, type(self)._VALUES(self), strict=True))
        return f"{type(self).__qualname__}({', '.join(shown)})"

    def encode(self) -> bytes:
        return self.LAYOUT.pack([getattr(self, name) for name in self.LAYOUT.names])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: class name, every wire field, then any derived values."""
        out: dict[str, Any] = {"type": type(self).__name__}
        for name in self.LAYOUT.names:
            out[name] = _plain(getattr(self, name))
        out.update(self._derived())
        return out

    def _derived(self) -> dict[str, Any]:
        return {}


_KIND = {"int": int, "float": float, "bytes": bytes}


def _kind_of(f: Field) -> str:
    if f.is_text:
        return "bytes"
    return "float" if f.is_float else "int"


def _spelled(hint: object) -> str:
    """A field's annotation as written: the modules annotate lazily (PEP 563), so it is the
    source text (``tuple[float, ...]``), compared as such; evaluating every class's hints when
    it is created cost a tenth of the package's import."""
    if isinstance(hint, str):
        return hint
    return hint.__name__ if isinstance(hint, type) else repr(hint)


def layout_mismatches(cls: type[Any], layout: Layout, checksums: tuple[int, ...]) -> list[str]:
    """How a dataclass's declared fields differ from ``layout`` (empty when they match)."""
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    if names != layout.names:
        return [f"fields {names} differ from the table's {layout.names}"]
    problems = []
    for declared, f in zip(fields, layout.fields, strict=True):
        kind = _kind_of(f)
        needed = f"tuple[{kind}, ...]" if f.is_array else kind
        if _spelled(declared.type) != needed:
            problems.append(f"{f.name}: declared {_spelled(declared.type)}, table needs {needed}")
        default = declared.default
        if f is layout.fields[0] and checksums:
            if default != checksums[0]:
                problems.append(f"{f.name}: default {default!r}, expected {checksums[0]}")
        elif f.is_array:
            if not isinstance(default, tuple) or len(default) != f.count:
                problems.append(f"{f.name}: default is not a tuple of {f.count} values")
        elif type(default) is not _KIND[kind]:
            problems.append(f"{f.name}: default {default!r} is not {kind}")
    return problems


def wire_message(layout: Layout, *checksums: int) -> Callable[[type[T]], type[T]]:
    """Bind a dataclass to its table; the first checksum is the default marker.

    Raises ``TypeError`` at class creation when the declared fields differ from the table.
    """

    def bind(cls: type[T]) -> type[T]:
        problems = layout_mismatches(cls, layout, checksums)
        if problems:
            raise TypeError(f"{cls.__name__} does not match {layout!r}: " + "; ".join(problems))
        cls.LAYOUT = layout
        cls.CHECKSUMS = tuple(checksums)
        if len(layout.names) > 1:
            cls._VALUES = operator.attrgetter(*layout.names)
        else:  # ``attrgetter`` of one name gives the bare value
            only = layout.names[0]
            cls._VALUES = staticmethod(lambda message: (getattr(message, only),))
        declared: Any = cls  # a dataclass, which the type variable does not say
        cls._DEFAULTS = tuple((f.name, f.default) for f in dataclasses.fields(declared))
        slots = [getattr(cls, name) for name in layout.names]
        if all(isinstance(slot, types.MemberDescriptorType) for slot in slots):
            cls._SLOT_SETTERS = tuple(slot.__set__ for slot in slots)
            if cls.__post_init__ is WireMessage.__post_init__:
                cls._SETTERS = cls._SLOT_SETTERS
        return cls

    return bind
