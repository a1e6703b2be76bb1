"""A field table compiled once into a little-endian ``struct.Struct`` and a numpy dtype.

A :class:`Layout` is the single definition of a wire structure: the message classes in
:mod:`rfly_link.messages` declare the same fields (checked when each class is created), and
take their encoder, decoder, range checks and ``to_dict`` from it. The SDK packs with native
``struct`` formats; every format here is explicit ``<``, with native padding spelled out as a
named ``s`` field where the C struct has some.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_INT_CODES = "bBhHiIqQ"
_NUMPY_CODES = {
    "b": "i1", "B": "u1", "h": "<i2", "H": "<u2", "i": "<i4", "I": "<u4",
    "q": "<i8", "Q": "<u8", "f": "<f4", "d": "<f8",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Field:
    """One named field: ``code`` is a struct code, ``count`` an array length (byte length for s)."""

    name: str
    code: str
    count: int = 1
    doc: str = ""

    @property
    def is_array(self) -> bool:
        return self.count > 1 and self.code != "s"

    @property
    def is_text(self) -> bool:
        return self.code == "s"

    @property
    def is_float(self) -> bool:
        return self.code in "fd"

    @property
    def fmt(self) -> str:
        return f"{self.count}{self.code}" if self.count > 1 or self.code == "s" else self.code

    @property
    def bounds(self) -> tuple[int, int] | None:
        """Inclusive range of an integer code (``None`` for floats and text)."""
        if self.code not in _INT_CODES:
            return None
        bits = 8 * struct.calcsize(self.code)
        if self.code.isupper():
            return 0, 2**bits - 1
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def default(self) -> Any:
        zero: Any = b"" if self.is_text else 0.0 if self.is_float else 0
        return (zero,) * self.count if self.is_array else zero

    def numpy_format(self) -> Any:
        if self.is_text:
            return f"S{self.count}"
        code = _NUMPY_CODES[self.code]
        return (code, (self.count,)) if self.is_array else code

    def expected(self) -> str:
        """What a value must be, for error messages."""
        if self.is_text:
            return f"at most {self.count} bytes"
        bounds = self.bounds
        one = f"an integer in {bounds[0]}..{bounds[1]}" if bounds else f"a float ({self.code})"
        return f"{self.count} values, each {one}" if self.is_array else one


def _f(name: str, code: str, count: int = 1, doc: str = "") -> Field:
    return Field(name, code, count, doc)


class Layout:
    """A field table compiled to one ``struct.Struct``; values are grouped per field."""

    __slots__ = (
        "_groups",
        "_has_text",
        "_pick",
        "dtype",
        "fields",
        "name",
        "names",
        "offsets",
        "size",
        "spec",
        "struct",
    )

    def __init__(self, name: str, spec: str, fields: Sequence[Field]) -> None:
        self.name = name
        self.spec = spec
        self.fields = tuple(fields)
        self.names = tuple(f.name for f in self.fields)
        self.struct = struct.Struct("<" + "".join(f.fmt for f in self.fields))
        self.size = self.struct.size
        groups = []
        offsets = {}
        flat = 0
        offset = 0
        for f in self.fields:
            width = f.count if f.is_array else 1
            groups.append((flat, flat + width, f.is_array))
            offsets[f.name] = offset
            offset += struct.calcsize("<" + f.fmt)
            flat += width
        self._groups = tuple(groups)
        self._has_text = any(f.is_text for f in self.fields)
        # The fields' values from the flat ones in one C call (arrays as tuple slices).
        self._pick: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
        if len(groups) > 1 and not self._has_text:
            self._pick = operator.itemgetter(*(slice(a, b) if arr else a for a, b, arr in groups))
        self.offsets = offsets
        self.dtype = np.dtype(
            {
                "names": list(self.names),
                "formats": [f.numpy_format() for f in self.fields],
                "offsets": [offsets[n] for n in self.names],
                "itemsize": self.size,
            }
        )

    def __repr__(self) -> str:
        return f"Layout({self.name!r}, {self.size} B, {self.struct.format!r})"

    def unpack(self, data: bytes | bytearray | memoryview, offset: int = 0) -> tuple[Any, ...]:
        """Decode ``size`` bytes at ``offset`` into one value per field (arrays as tuples).

        Text fields (``s``) lose their trailing NUL padding, so they round-trip.
        """
        flat = self.struct.unpack_from(data, offset)
        if self._pick is not None:
            return self._pick(flat)
        values: tuple[Any, ...] = tuple(flat[a:b] if arr else flat[a] for a, b, arr in self._groups)
        if self._has_text:
            values = tuple(
                v.rstrip(b"\0") if f.is_text else v
                for f, v in zip(self.fields, values, strict=True)
            )
        return values

    def pack(self, values: Sequence[Any]) -> bytes:
        """Encode one value per field; a bad value raises ``ValueError`` naming the field."""
        flat: list[Any] = []
        for f, value in zip(self.fields, values, strict=True):
            if f.is_array:
                items = tuple(value)
                if len(items) != f.count:
                    raise ValueError(
                        f"{self.name}.{f.name}: expected {f.count} values, got {len(items)}"
                    )
                flat.extend(items)
            else:
                flat.append(value)
        try:
            return self.struct.pack(*flat)
        except struct.error:
            self._raise_field_error(values)
            raise

    def _raise_field_error(self, values: Sequence[Any]) -> None:
        for f, value in zip(self.fields, values, strict=True):
            items = tuple(value) if f.is_array else (value,)
            try:
                struct.pack("<" + f.fmt, *items)
            except struct.error as exc:
                raise ValueError(
                    f"{self.name}.{f.name}: expected {f.expected()}, got {value!r}"
                ) from exc

    def checksum_of(self, data: bytes | bytearray | memoryview) -> int:
        """Read the first field (the checksum marker) with its own width."""
        value: int = struct.unpack_from("<" + self.fields[0].code, data, 0)[0]
        return value
