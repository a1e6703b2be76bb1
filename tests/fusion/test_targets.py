"""The target table against a plain model of what it promises.

``TargetTable`` keeps a shortcut for ``forget`` (a bound on the oldest capture held) and a
count of the changes to what supersedes (``nothing_version``), which the verdict check's reuse
trusts. The truth here is a list of (key, capture, arrival), least recently updated first,
and each source's newest "nothing", kept the obvious way.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fusion.targets import Placement, TargetTable, cut_off, image_edges
from gizmo_core import HoldReason, Selector
from tests.support.fusion_inputs import MS, observation

MAX = 3

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(1, 2), st.integers(1, 5), st.integers(0, 40)),
        st.tuples(st.just("nothing"), st.integers(1, 2), st.integers(0, 40)),
        st.tuples(st.just("forget"), st.integers(0, 45)),
        st.tuples(st.just("clear")),
    ),
    max_size=60,
)


def _placement(source: int, ident: int, capture_ms: int, arrival: int) -> Placement:
    obs = observation(capture_ms * MS, source_id=source, ident=ident)
    return Placement(obs, arrival, None, None)


def _evicted(held: list[Placement], keep: Selector | None) -> Placement:
    """The model's eviction: the least recently updated key ``keep`` does not select, or else
    the least recently updated."""
    if keep is None:
        return held[0]
    others = [q for q in held if not keep.matches(q.obs.source_id, q.obs.result_type, q.obs.id)]
    return (others or held)[0]


@pytest.mark.parametrize("keep", [None, Selector(), Selector(id=2), Selector(source_id=2)])
@given(ops=OPS)
def test_the_table_is_its_plain_model(keep, ops):
    """With ``keep``, the verdict's selector: a key it selects is evicted only when no other
    key is left (clutter of more keys than the table holds kept the selected target out)."""
    table = TargetTable(max_targets=MAX, keep=keep)
    held: list[Placement] = []  # least recently updated first
    nothing: dict[int, int] = {}
    arrival = 0
    probes = [_placement(s, 1, 0, a) for s in (1, 2) for a in range(0, 45, 3)]
    for op in ops:
        version, before = table.nothing_version, [table.superseded(p) for p in probes]
        if op[0] == "put":
            arrival += 1
            p = _placement(op[1], op[2], op[3], arrival if op[3] % 4 else arrival - 2)
            old = next((q for q in held if q.obs.key == p.obs.key), None)
            stored = table.put(p)
            assert stored == (old is None or old.arrival <= p.arrival)
            if stored:
                held = [q for q in held if q.obs.key != p.obs.key] + [p]
                while len(held) > MAX:
                    held.remove(_evicted(held, keep))
        elif op[0] == "nothing":
            table.saw_nothing(op[1], op[2])
            changed = op[2] > nothing.get(op[1], -1)
            nothing[op[1]] = max(op[2], nothing.get(op[1], -1))
            assert (table.nothing_version != version) == changed
        elif op[0] == "forget":
            table.forget(op[1] * MS)
            held = [q for q in held if q.obs.host_capture_ns >= op[1] * MS]
        else:
            table.clear()
            held, nothing = [], {}
        assert list(table) == held[::-1]
        assert sorted(table.held, key=id) == sorted(held, key=id)
        for p in probes:
            superseded = p.arrival < nothing.get(p.obs.source_id, -1)
            assert table.superseded(p) is (HoldReason.LOST if superseded else None)
        if table.nothing_version == version:  # what the verdict check's reuse trusts
            assert [table.superseded(p) for p in probes] == before


EDGES_640_480 = image_edges(640, 480)  # 3.125 units a pixel across, 4.17 down


def _side_at(pixel: float, pixels: int) -> float:
    """A box side at ``pixel`` (``pixels`` from the left or top edge: the last pixel
    ``pixels - 1`` is one pixel in from the far edge) in board units (-1000..1000)."""
    return 1000 * (pixel / (pixels / 2) - 1)


@pytest.mark.parametrize(
    ("right_px", "bottom_px", "is_cut"),
    [
        (400, 300, False),  # well inside
        (639, 300, True),  # clipped to the last column, a pixel in from the edge
        (638, 300, True),  # 2 pixels in
        (637.5, 300, False),  # 2.5 pixels in
        (400, 479, True),  # clipped to the last row (995.8: red team rt38's 995 and 995.5)
        (400, 478, True),  # 2 rows in
        (400, 477.5, False),  # 2.5 rows in
    ],
)
def test_a_box_reaching_the_images_edge_is_cut_off(right_px, bottom_px, is_cut):
    """A box side within 2 pixels of an edge of the 640 x 480 image (less half a unit: the
    board rounds) is cut off: the target goes on beyond it (a detector clips a box to the
    last pixel). The box's other sides are well inside."""
    left, top = _side_at(200, 640), _side_at(100, 480)
    right, bottom = _side_at(right_px, 640), _side_at(bottom_px, 480)
    # The board's whole units, as it rounds them
    centre = (round((left + right) / 2), round((top + bottom) / 2))
    size = (round(right - left), round(bottom - top))
    obs = observation(0, center=centre, size=size)
    assert cut_off(obs, EDGES_640_480) is is_cut
    mirrored = observation(0, center=(-centre[0], -centre[1]), size=size)
    assert cut_off(mirrored, EDGES_640_480) is is_cut  # the left and top edges alike


def test_a_result_without_a_box_is_never_cut_off():
    obs = observation(0, center=(1000, 1000), size=(500, 500), has_box=False)
    assert not cut_off(obs, EDGES_640_480)


def test_a_tiny_image_is_not_all_edge():
    """A few pixels' image (the camera settings take 2): its edge margin is at most a tenth of
    the way in, so a box in its middle is not cut off (a HOLD ``truncated`` for good)."""
    edges = image_edges(2, 4)
    assert edges == (900.0, 900.0)
    assert not cut_off(observation(0, center=(0, 0), size=(100, 100)), edges)
    assert cut_off(observation(0, center=(0, 0), size=(1800, 100)), edges)
