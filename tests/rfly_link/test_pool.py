"""Buffer recycling never hands out memory that a consumer still references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rfly_link import Reassembler
from rfly_link.pool import ArrayPool, BufferPool
from rfly_link.reassembly import fragment_payload


def test_buffer_pool_reuses_only_unreferenced_buffers() -> None:
    pool = BufferPool(slots=2)
    first = pool.take(100)
    view = memoryview(first)
    del first
    second = pool.take(50)  # the first is still exported through `view`
    assert pool.allocated == 2 and pool.reused == 0
    view.release()
    del view, second
    again = pool.take(80)
    assert pool.reused == 1 and len(again) >= 80


def test_array_pool_respects_views_and_shapes() -> None:
    pool = ArrayPool(slots=3)
    a = pool.take((4, 3), np.float32)
    xyz = a[:, :2]
    del a
    b = pool.take((4, 3), np.float32)
    assert pool.reused == 0 and not np.shares_memory(b, xyz)
    del b
    c = pool.take((4, 3), np.float32)
    assert pool.reused == 1
    assert pool.take((5, 3), np.float32).shape == (5, 3)  # larger: a new array
    assert pool.take((4, 3), np.float64).dtype == np.float64
    del c, xyz
    smaller = pool.take((2, 3), np.float32)  # fewer rows: a view of a free array
    assert smaller.shape == (2, 3) and smaller.base is not None and pool.reused == 2


def test_frames_kept_by_the_consumer_are_never_overwritten() -> None:
    r = Reassembler()
    kept = []
    for frame_id in range(12):
        payload = bytes([frame_id]) * 5000
        for d in fragment_payload(payload, frame_id=frame_id, fragment_size=1000):
            kept += r.feed(d, ("a", 1), frame_id)
        if frame_id % 3:  # drop some frames: their buffers may be recycled
            kept = kept[:-1] if kept else kept
    assert r._pool.reused > 0  # recycling did happen
    for frame in kept:
        assert bytes(frame.payload) == bytes([frame.frame_id]) * 5000


def test_pooled_point_cloud_decode_matches_and_never_clobbers_kept_clouds() -> None:
    from rfly_link import decode_sensor, sensors
    from rfly_link.sensors import SensorParams

    pool = ArrayPool(slots=2)
    rng = np.random.default_rng(3)
    kept = []
    for n in (50, 30, 50, 10, 40, 50, 20):
        raw = rng.integers(-32767, 32768, size=(n, 4)).astype(np.int16)
        payload = sensors.encode_point_cloud(sensors.PointLayout.PREFIX36_INT16_XYZS, raw)
        pooled = decode_sensor(20, payload, SensorParams(scale_m=60.0, allocate=pool.take))
        plain = decode_sensor(20, payload, scale_m=60.0)
        np.testing.assert_array_equal(pooled.xyz_m, plain.xyz_m)
        if n == 50:
            kept.append((pooled, plain.xyz_m.copy()))
    assert pool.reused > 0
    for cloud, expected in kept:
        np.testing.assert_array_equal(cloud.xyz_m, expected)


def test_buffer_pool_frees_idle_buffers_beyond_the_budget() -> None:
    pool = BufferPool(slots=4)
    held = [pool.take(1000) for _ in range(3)]
    del held  # three idle 1000 B buffers
    assert pool.idle_bytes() == 3000
    reused = pool.take(600, budget=2500)  # fits one of them; one other may stay idle
    assert len(reused) == 1000 and pool.reused == 1
    assert pool.idle_bytes() + len(reused) <= 2500
    del reused
    fresh = pool.take(2000, budget=2000)  # too big for any: the idle ones go first
    assert len(fresh) == 2000 and pool.idle_bytes() == 0
    assert pool.take(10, budget=5000) is not fresh  # still referenced here: never handed out


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(2, 8), st.integers(1, 60), st.booleans()),
        max_size=30,
    ),
    st.integers(120, 600),
)
def test_frames_in_flight_and_idle_pooled_buffers_stay_within_the_budget(
    frames: list[tuple[int, int, int, bool]], budget: int
) -> None:
    r = Reassembler(max_bytes_in_flight=budget, max_frame_bytes=budget)
    kept = []  # the consumer holds every completed frame: those are not the reassembler's
    for frame_id, count, size, complete in frames:
        payload = bytes([frame_id]) * (count * size)
        datagrams = fragment_payload(payload, frame_id=frame_id, fragment_size=size)
        for d in datagrams if complete else datagrams[:-1]:
            kept += r.feed(d, ("a", 1), 0)
            assert r.stats.bytes_in_flight + r._pool.idle_bytes() <= budget
    assert all(bytes(f.payload) == bytes([f.frame_id or 0]) * len(f.payload) for f in kept)
