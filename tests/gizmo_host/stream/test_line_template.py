"""The result line's template in C (``gizmo_host/stream/line_template.pyx``) is Python's
``%``: the same bytes for every value the line can hold, and for anything else Python's own
result or error. The oracle is ``bytes.__mod__`` itself."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gizmo_host.stream.events import _BOX_RESULT_LINES, PythonTemplate, line_template

BUILT = not isinstance(line_template(b"%d"), PythonTemplate)
needs_template = pytest.mark.skipif(not BUILT, reason="line_template not built")

# The conversions a line template may hold, and a value strategy for each.
INT64 = st.integers(-(2**63), 2**63 - 1)
ANY_INT = st.one_of(st.integers(-1000, 1000), INT64, st.integers(-(2**80), 2**80))
CONVERSIONS = {
    b"%d": ANY_INT,
    b"%03d": ANY_INT,
    b"%012d": ANY_INT,
    b"%s": st.binary(max_size=8),
}
LITERAL = st.binary(max_size=6).map(lambda b: b.replace(b"%", b"%%"))


def _python(template: bytes, parts: tuple[tuple[Any, ...], ...]) -> bytes | type[Exception]:
    values: tuple[Any, ...] = ()
    for part in parts:
        values += part
    try:
        return template % values
    except Exception as exc:
        return type(exc)


def _ours(template: bytes, parts: tuple[tuple[Any, ...], ...]) -> bytes | type[Exception]:
    try:
        return line_template(template).format(*parts)
    except Exception as exc:
        return type(exc)


@st.composite
def filled(draw: st.DrawFn) -> tuple[bytes, tuple[tuple[Any, ...], ...]]:
    """A template of the line's conversions with literals between, and values for it split
    into a few tuples at random places."""
    kinds = draw(st.lists(st.sampled_from(sorted(CONVERSIONS)), max_size=12))
    template = draw(LITERAL)
    values = []
    for kind in kinds:
        template += kind + draw(LITERAL)
        values.append(draw(CONVERSIONS[kind]))
    cuts = sorted(draw(st.lists(st.integers(0, len(values)), max_size=3)))
    parts, start = [], 0
    for cut in [*cuts, len(values)]:
        parts.append(tuple(values[start:cut]))
        start = cut
    return template, tuple(parts)


@needs_template
@settings(max_examples=400, deadline=None)
@given(filled())
def test_it_is_pythons_percent_for_the_lines_values(case: tuple[bytes, Any]) -> None:
    template, parts = case
    assert _ours(template, parts) == _python(template, parts)


class _Pair(NamedTuple):
    a: int
    b: int


@needs_template
@pytest.mark.parametrize(
    "parts",
    [
        ((True, 2), (b"x",)),  # a bool is an int to %d: its own conversion
        ((1.5, 2), (b"x",)),  # a float truncates
        ((1, 2), ("x",)),  # a str is not bytes: Python's TypeError
        ((1, 2),),  # too few
        ((1, 2), (b"x", 4)),  # too many
        ((2**64, -(2**70)), (b"x",)),  # past 64 bits
        ((-(2**63), 2**63 - 1), (b"",)),  # the ends of 64 bits
        (_Pair(-5, 7), (bytearray(b"y"),)),  # a NamedTuple part; a bytearray for %s
    ],
)
def test_anything_else_is_pythons_own_result_or_error(parts: tuple[Any, ...]) -> None:
    template = b"[%03d|%d]%s%%"
    assert _ours(template, parts) == _python(template, parts)


@needs_template
@pytest.mark.parametrize("template", [b"%x", b"%5d", b"%-3d", b"%.2f", b"%0d", b"%r", b"%"])
def test_a_conversion_the_line_does_not_use_is_refused_when_made(template: bytes) -> None:
    with pytest.raises(ValueError, match="template: unsupported conversion"):
        line_template(template)


def test_every_result_line_template_is_made() -> None:
    """The result lines' templates are built at import: each holds only what the C form
    takes (an unsupported one would have failed the import)."""
    for mapped, unmapped in _BOX_RESULT_LINES.values():
        for template in (mapped, unmapped):
            assert isinstance(template, PythonTemplate) is not BUILT
