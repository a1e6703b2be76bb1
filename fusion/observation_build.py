"""``vision_observation``: the world adapter's build of a ``VisionObservation``, once a frame.

Compiled with the per-frame modules (``tools/native_build.py``), which ``fusion.inputs``
cannot be (code elsewhere builds its classes with ``object.__new__``): interpreted, this
build was 1.3 us of a frame's offline replay.
"""

from __future__ import annotations

from typing import Any, Final

from gizmo_core import HoldReason

from . import inputs
from .inputs import VisionObservation, _capture_after_rx, _check_box

# The bounds as this module's finals: compiled, a final is a C static, where an imported name
# is a dictionary lookup at each use (seven of them a frame).
_BOX_CENTRE: Final = inputs._BOX_CENTRE
_BOX_SIZE: Final = inputs._BOX_SIZE
MAX_CAPTURE_AFTER_RX_NS: Final = inputs.MAX_CAPTURE_AFTER_RX_NS
_VISION_OBSERVATION: Final = VisionObservation


def _slot_setters() -> tuple[Any, ...]:
    names = [*VisionObservation.__dataclass_fields__]
    assert names[-1] == "key"  # set last, from the others
    return tuple(getattr(VisionObservation, name).__set__ for name in names)


# The observation's slot descriptors' setters, in field order: ``vision_observation`` sets them
_SETTERS: Final = _slot_setters()


def vision_observation(
    source_id: int,
    result_type: int,
    ident: int,
    label: str,
    confidence: int,
    tracked: bool,
    lost: bool,
    has_box: bool,
    center_x: int | float,
    center_y: int | float,
    width: int | float,
    height: int | float,
    host_capture_ns: int,
    host_rx_ns: int,
    epoch: int,
    clock_locked: bool,
    clock_converging: bool,
    key: str | None = None,
    withheld: HoldReason | None = None,
) -> VisionObservation:
    """``VisionObservation(...)`` with every field given, equal to it and checked as it is
    (the same ``InvalidInput``), for the adapter's one a frame: the frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``; this sets them through the
    class's own slots, in half the time. ``key``: the ``key`` those fields give, when the
    caller keeps it (``"source:type:id"``; one string per target, not one per frame). The
    box's fields may be floats (a NaN among them): compiled, an ``int`` parameter would refuse
    them with a ``TypeError`` where the constructor gives its own ``InvalidInput``."""
    obs: VisionObservation = object.__new__(_VISION_OBSERVATION)
    (s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15, s16, s17, s_key) = (
        _SETTERS
    )
    s0(obs, source_id)
    s1(obs, result_type)
    s2(obs, ident)
    s3(obs, label)
    s4(obs, confidence)
    s5(obs, tracked)
    s6(obs, lost)
    s7(obs, has_box)
    s8(obs, center_x)
    s9(obs, center_y)
    s10(obs, width)
    s11(obs, height)
    s12(obs, host_capture_ns)
    s13(obs, host_rx_ns)
    s14(obs, epoch)
    s15(obs, clock_locked)
    s16(obs, clock_converging)
    s17(obs, withheld)
    if (has_box and tracked) and not (
        -_BOX_CENTRE <= center_x <= _BOX_CENTRE
        and -_BOX_CENTRE <= center_y <= _BOX_CENTRE
        and 0 <= width <= _BOX_SIZE
        and 0 <= height <= _BOX_SIZE
    ):
        _check_box(obs)  # raises the constructor's error
    if host_capture_ns - host_rx_ns > MAX_CAPTURE_AFTER_RX_NS:
        raise _capture_after_rx(obs)
    s_key(obs, f"{source_id}:{result_type}:{ident}" if key is None else key)
    return obs
