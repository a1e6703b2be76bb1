"""The per-frame checks of a result's fields: does it locate a target, is every field on the
protocol's scale. Apart from :mod:`gizmo_host.wire.results` so that they are compiled (they run
twice a frame): that module's typed interpretations stay interpreted (compiled, its dataclass
subclasses failed at import: a field without a default after one with).
"""

from __future__ import annotations

from typing import Final

from gizmo_host.wire.results import DETECTION_CLASSES, BlobColor, DetectorId, ResultType

# Plain ints for the checks every frame runs (an enum member's attribute lookup and hash are
# Python-level: these checks took 1.3 us a frame with them, twice a frame).
_COLOR_BLOB: Final = int(ResultType.COLOR_BLOB)
_LINE: Final = int(ResultType.LINE)
_QR_CODE: Final = int(ResultType.QR_CODE)
_DETECTOR: Final = int(ResultType.DETECTOR)
_BLOB_COLOURS: Final = frozenset(int(c) for c in BlobColor)
_DETECTOR_IDS: Final = frozenset(int(d) for d in DetectorId)
_BOX_DETECTOR_IDS: Final = frozenset(
    int(d) for d in {DetectorId.MOTION, DetectorId.BRIGHT_SPOT} | DETECTION_CLASSES
)


def is_target(result_type: int, ident: int) -> bool:
    """Whether results of this type and id locate something in the image (carry a box).

    Brightness statistics, line following, the reserved tag, "none" and unknown values do not:
    a "follow any target" policy must never steer towards them.
    """
    if result_type == _COLOR_BLOB:
        return ident in _BLOB_COLOURS
    if result_type == _DETECTOR:
        return ident in _BOX_DETECTOR_IDS
    return result_type == _QR_CODE


MAX_CONFIDENCE: Final = 100
# v1's result types (the reserved tag is not one the board sends)
_DEFINED_TYPES: Final = frozenset(int(t) for t in ResultType if t is not ResultType.TAG)
KNOWN_FLAGS: Final = 0x07  # tracked, lost, relative: the other bits have no meaning in v1


def invalid_field(
    result_type: int, ident: int, confidence: int, flags: int, x: int, y: int, w: int, h: int
) -> str | None:
    """The first field of a result off the protocol's scale (``None``: none is): a confidence
    over 100, a flag bit v1 does not define, a result type or a colour or detector id v1 does
    not define (a selector naming the type would pick it: red team rt15), a line's offset
    beyond -1000..1000 or a negative coverage, and for a result that locates a target
    (``is_target``) a box centre beyond -1000..1000 or a size beyond 0..2000. Such a result
    locates nothing it can be trusted for: the host holds on it (``invalid_result``)."""
    if confidence > MAX_CONFIDENCE:
        return "confidence"
    if flags & ~KNOWN_FLAGS:
        return "flags"
    if result_type not in _DEFINED_TYPES:
        return "result_type"
    if result_type == _LINE:
        if not -1000 <= x <= 1000:
            return "x"
        if w < 0:
            return "w"
        return None
    if (result_type == _COLOR_BLOB and ident not in _BLOB_COLOURS) or (
        result_type == _DETECTOR and ident not in _DETECTOR_IDS
    ):
        return "id"
    if is_target(result_type, ident):
        if not -1000 <= x <= 1000:
            return "x"
        if not -1000 <= y <= 1000:
            return "y"
        if not 0 <= w <= 2000:
            return "w"
        if not 0 <= h <= 2000:
            return "h"
    return None
