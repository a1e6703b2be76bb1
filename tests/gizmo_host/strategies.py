"""Hypothesis strategies for VISION_RESULT values, derived from the protocol's field table."""

from hypothesis import strategies as st

from gizmo_host.wire.protocol import _RANGES, VALUE_FIELDS, VisionResult

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
