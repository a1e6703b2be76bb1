"""Hypothesis strategies for VISION_RESULT values (derived from the protocol's field table)
and for the garbage around frames on a real line."""

from hypothesis import strategies as st

from gizmo_host.wire.protocol import _RANGES, SYNC, VALUE_FIELDS, VisionResult

# Fields a valid v1 frame pins to one value; every other field takes its whole wire range.
FIXED = {"version": 1, "msg_type": 0x60, "payload_len": 24}


def field_values(name: str, fmt: str) -> st.SearchStrategy[int]:
    if name in FIXED:
        return st.just(FIXED[name])
    low, high = _RANGES[fmt]
    return st.integers(low, high)


vision_results = st.builds(
    VisionResult, **{f.name: field_values(f.name, f.fmt) for f in VALUE_FIELDS}
)

# The protocol document's example frame (source 1, DETECTOR 42).
SPEC_EXAMPLE = bytes.fromhex(
    "A5 47 01 60 00 2A 00 18 00 01 01 2A 00 E8 03 00 00 57 05 0C 00 83 FF 36 00 9A 01 68 01 01 "
    "00 00 00 9C D9"
)
HEADER_PREFIX = SPEC_EXAMPLE[:9]

garbage = st.one_of(
    st.binary(max_size=60),
    st.binary(max_size=40).map(lambda b: SYNC + b),  # false starts
    st.binary(max_size=40).map(lambda b: HEADER_PREFIX + b),  # fake headers, wrong CRC
    st.sampled_from([b"\xa5", b"\xa5\x47", b"\xa5\xa5\x47", SPEC_EXAMPLE[:34]]),
)
