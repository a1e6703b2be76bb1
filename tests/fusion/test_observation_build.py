"""``vision_observation``, the adapter's fast build of a ``VisionObservation``: for any fields,
the very value the class's constructor gives (fields, ``key``, equality, hash and repr), or
the very error it raises."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion import InvalidInput, VisionObservation, vision_observation

_coordinate = st.integers(-2_100, 2_100) | st.floats(allow_nan=True)
# (capture, arrival): the capture mostly before its arrival, sometimes up to 20 ms after
_times = st.tuples(st.integers(0, 2**62), st.integers(-20_000_000, 2**40)).map(
    lambda t: (t[0], t[0] + t[1])
)
_fields = st.tuples(
    st.integers(0, 255), st.integers(0, 255), st.integers(0, 65_535), st.text(max_size=8),
    st.integers(0, 100), st.booleans(), st.booleans(), st.booleans(),
    _coordinate, _coordinate, _coordinate, _coordinate,
    _times, st.integers(0, 2**32),
    st.booleans(), st.booleans(),
).map(lambda f: (*f[:12], *f[12], *f[13:]))  # fmt: skip


def _built(build: object, fields: tuple[object, ...]) -> VisionObservation | str:
    try:
        return build(*fields)  # type: ignore[operator, no-any-return]
    except InvalidInput as error:
        return f"InvalidInput: {error}"


@given(_fields)
def test_the_fast_build_is_the_constructor(fields: tuple[object, ...]) -> None:
    slow, fast = _built(VisionObservation, fields), _built(vision_observation, fields)
    if isinstance(slow, str):
        assert fast == slow
        return
    assert isinstance(fast, VisionObservation)
    assert type(fast) is VisionObservation
    names = [f.name for f in dataclasses.fields(VisionObservation)]
    assert [getattr(fast, n) for n in names] == [getattr(slow, n) for n in names]
    assert fast.key == f"{fields[0]}:{fields[1]}:{fields[2]}"
    assert hash(fast) == hash(slow) and repr(fast) == repr(slow)
    # An unchecked NaN is not equal to itself: Python 3.13's dataclass ``__eq__`` compares
    # field by field, where earlier ones compared tuples (identity first).
    if not any(isinstance(v, float) and math.isnan(v) for v in fields):
        assert fast == slow


@pytest.mark.parametrize("index, name", [(8, "center_x"), (9, "center_y"), (10, "width"),
                                         (11, "height")])  # fmt: skip
def test_a_box_off_the_scale_is_refused_by_name(index: int, name: str) -> None:
    fields: list[object] = [1, 5, 11, "red", 80, True, False, True, 0, 0, 40, 40, 1, 2, 0, True,
                            False]  # fmt: skip
    fields[index] = 2_001 if index < 10 else -1
    with pytest.raises(InvalidInput, match=f"VisionObservation.{name}: expected"):
        vision_observation(*fields)  # type: ignore[arg-type]
    fields[5] = False  # untracked: the box is not checked
    assert vision_observation(*fields).key == "1:5:11"  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [VisionObservation, vision_observation])
def test_a_capture_after_its_arrival_is_refused_by_name(build: object) -> None:
    """An image is taken before it is read: a capture time more than 5 ms (the mapping's
    rounding) after the arrival is no capture time. One 20 s ahead once HOLDed its key for
    20 s, every later frame "late" against it (red team, rt9)."""
    rx_ns = 50 * 10**9
    fields: list[object] = [1, 5, 11, "red", 80, True, False, True, 0, 0, 40, 40,
                            rx_ns + 5_000_001, rx_ns, 0, True, False]  # fmt: skip
    with pytest.raises(InvalidInput, match=r"VisionObservation\.host_capture_ns: expected"):
        build(*fields)  # type: ignore[operator]
    fields[5] = False  # untracked too: whatever it reports, its times are checked
    with pytest.raises(InvalidInput, match="host_capture_ns"):
        build(*fields)  # type: ignore[operator]
    fields[12] = rx_ns + 5_000_000
    assert build(*fields).host_capture_ns == rx_ns + 5_000_000  # type: ignore[operator]
