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

from fusion.targets import EDGE_MARGIN, Placement, TargetTable, cut_off
from gizmo_core import HoldReason
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


@given(OPS)
def test_the_table_is_its_plain_model(ops):
    table = TargetTable(max_targets=MAX)
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
                held = held[-MAX:]
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


@pytest.mark.parametrize(
    ("center", "size", "has_box", "is_cut"),
    [
        ((0, 0), (100, 80), True, False),  # in the middle
        ((0, 0), (2000, 80), True, True),  # as wide as the image
        ((946, 0), (100, 80), True, True),  # right side at 996: 4 units from the edge
        ((945, 0), (100, 80), True, False),  # at 995: 5 units in
        ((-946, 0), (100, 80), True, True),  # left side at -996
        ((0, 956), (100, 80), True, True),  # bottom at 996
        ((0, -955), (100, 80), True, False),  # top at -995
        ((0, -956), (100, 80), True, True),  # top at -996
        ((995, 0), (1, 0), True, False),  # a point 5 units in: its right side at 995.5
        ((997, 0), (0, 0), True, True),  # a point on the margin
        ((1000, 1000), (500, 500), False, False),  # a result without a box is never cut off
    ],
)
def test_a_box_reaching_the_images_edge_is_cut_off(center, size, has_box, is_cut):
    """Within ``EDGE_MARGIN`` (4) units of an edge (of 1000 from the centre) a box is cut
    off: the target goes on beyond it (a detector clips a box to the last pixel)."""
    assert EDGE_MARGIN == 4
    obs = observation(0, center=center, size=size, has_box=has_box)
    assert cut_off(obs) is is_cut
