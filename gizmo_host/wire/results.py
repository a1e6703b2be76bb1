"""Typed meaning of a VISION_RESULT payload, chosen by ``result_type`` and ``id``.

The same four int16 fields mean a box, a line offset or brightness statistics depending on the
task, so consumers read results through these values, never through raw x/y/w/h. An unknown
``result_type`` or ``id`` becomes an explicit ``Unknown``: never an exception, never a guess.

Box scaling (spec, "box results"): the centre is in -1000..1000 with the image's top-left
negative, ``centre = pixel * 2000 / (extent - 1) - 1000``; the size is in 0..2000,
``size = size_px * 2000 / extent``. Results are in the board's orientation-corrected image.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, ClassVar, Protocol

from gizmo_host.jsonl import json_text


class ResultType(IntEnum):
    NONE = 0
    COLOR_BLOB = 1
    LINE = 2
    TAG = 3  # reserved: AprilTag is not implemented on the board yet
    QR_CODE = 4
    DETECTOR = 5  # ids 1-3: motion, bright spot, brightness statistics; 10-14: detections


class BlobColor(IntEnum):
    RED = 1
    YELLOW = 2
    GREEN = 3
    BLUE = 4
    PURPLE = 5


class DetectorId(IntEnum):
    """``id`` values of result_type 5."""

    MOTION = 1
    BRIGHT_SPOT = 2
    BRIGHTNESS = 3
    FACE = 10
    PEDESTRIAN = 11
    CAT = 12
    DOG = 13
    HAND = 14


DETECTION_CLASSES = frozenset(
    {DetectorId.FACE, DetectorId.PEDESTRIAN, DetectorId.CAT, DetectorId.DOG, DetectorId.HAND}
)


def _check_image_size(width_px: int, height_px: int) -> None:
    # The centre scaling divides by extent - 1.
    if width_px < 2 or height_px < 2:
        raise ValueError(f"image size: expected at least 2x2 pixels, got {width_px}x{height_px}")


def _scale(value: float) -> int:
    return round(value)


@dataclass(frozen=True, slots=True)
class PixelBox:
    """A box in image pixels: centre from the top-left pixel's centre, size in pixels."""

    center_x_px: float
    center_y_px: float
    width_px: float
    height_px: float

    def to_normalized(self, image_width_px: int, image_height_px: int) -> NormBox:
        """The spec's wire scaling of this box for an image of the given size (rounded)."""
        _check_image_size(image_width_px, image_height_px)
        return NormBox(
            center_x=_scale(self.center_x_px * 2000 / (image_width_px - 1) - 1000),
            center_y=_scale(self.center_y_px * 2000 / (image_height_px - 1) - 1000),
            width=_scale(self.width_px * 2000 / image_width_px),
            height=_scale(self.height_px * 2000 / image_height_px),
        )


@dataclass(frozen=True, slots=True)
class NormBox:
    """A box in the wire's normalised units, image frame (x right, y down).

    ``center_x``/``center_y`` run -1000 (left/top edge) .. 1000 (right/bottom edge);
    ``width``/``height`` run 0 .. 2000 (the whole image).
    """

    center_x: int
    center_y: int
    width: int
    height: int

    def to_dict(self) -> dict[str, int]:
        return {
            "center_x": self.center_x,
            "center_y": self.center_y,
            "width": self.width,
            "height": self.height,
        }

    def to_pixels(self, image_width_px: int, image_height_px: int) -> PixelBox:
        _check_image_size(image_width_px, image_height_px)
        return PixelBox(
            center_x_px=(self.center_x + 1000) * (image_width_px - 1) / 2000,
            center_y_px=(self.center_y + 1000) * (image_height_px - 1) / 2000,
            width_px=self.width * image_width_px / 2000,
            height_px=self.height * image_height_px / 2000,
        )


class Interpretation(Protocol):
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]: ...


class _Typed:
    """``to_dict`` for the interpretation dataclasses: a ``kind`` tag plus JSON-ready fields.

    Written out rather than ``dataclasses.asdict``, which deep-copies and costs ~10 µs a call
    on the per-frame publishing path.
    """

    __slots__ = ()
    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        names: tuple[str, ...] = self.__slots__
        for name in names:
            value = getattr(self, name)
            if isinstance(value, IntEnum):
                value = value.name.lower()
            elif isinstance(value, NormBox):
                value = value.to_dict()
            out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class NoResult(_Typed):
    kind: ClassVar[str] = "none"


@dataclass(frozen=True, slots=True)
class ColorBlob(_Typed):
    kind: ClassVar[str] = "color_blob"
    color: BlobColor
    box: NormBox


@dataclass(frozen=True, slots=True)
class LineFollow(_Typed):
    """Line following. Not a box: ``y`` is fixed at 500 on the wire and is dropped here.

    ``lateral_offset`` is the weighted sideways offset of the line (-1000 left .. 1000 right),
    ``coverage`` the scaled share of dark pixels in the bottom band, ``slope_scale`` a scaled
    slope (``h``, equal to ``aux``), which is not a precise heading angle.
    """

    kind: ClassVar[str] = "line"
    lateral_offset: int
    coverage: int
    slope_scale: int


@dataclass(frozen=True, slots=True)
class TagReserved(_Typed):
    """result_type 3 is reserved for AprilTag, which the board does not implement yet."""

    kind: ClassVar[str] = "tag_reserved"
    raw_id: int


@dataclass(frozen=True, slots=True)
class QrCode(_Typed):
    """A QR code, known only by a 16-bit hash of its text: collisions happen, so it is never a
    unique key. The text itself only appears in the board's Info log."""

    kind: ClassVar[str] = "qr_code"
    hash16: int
    box: NormBox


@dataclass(frozen=True, slots=True)
class Motion(_Typed):
    kind: ClassVar[str] = "motion"
    box: NormBox


@dataclass(frozen=True, slots=True)
class BrightSpot(_Typed):
    kind: ClassVar[str] = "bright_spot"
    box: NormBox


@dataclass(frozen=True, slots=True)
class BrightnessStats(_Typed):
    """Whole-image brightness statistics: ``x`` is the mean, ``y`` the variance. Never a
    position, even though the relative-coordinates flag is set."""

    kind: ClassVar[str] = "brightness"
    mean: int
    variance: int


@dataclass(frozen=True, slots=True)
class Detection(_Typed):
    kind: ClassVar[str] = "detection"
    label: DetectorId
    box: NormBox


@dataclass(frozen=True, slots=True)
class Unknown(_Typed):
    """A result_type or id this host does not know: kept raw, never guessed at."""

    kind: ClassVar[str] = "unknown"
    result_type: int
    id: int
    reason: str


class _Fields(Protocol):
    """The payload fields an interpretation reads (a ``VisionResult``, or a numpy record)."""

    @property
    def result_type(self) -> int: ...
    @property
    def id(self) -> int: ...
    @property
    def x(self) -> int: ...
    @property
    def y(self) -> int: ...
    @property
    def w(self) -> int: ...
    @property
    def h(self) -> int: ...
    @property
    def aux(self) -> int: ...


def _box(r: _Fields) -> NormBox:
    return NormBox(r.x, r.y, r.w, r.h)


def _color_blob(r: _Fields) -> Interpretation:
    if r.id in BlobColor._value2member_map_:
        return ColorBlob(BlobColor(r.id), _box(r))
    return Unknown(r.result_type, r.id, "colour id: expected 1..5")


def _detector(r: _Fields) -> Interpretation:
    if r.id not in DetectorId._value2member_map_:
        return Unknown(r.result_type, r.id, "detector id: expected 1, 2, 3 or 10..14")
    label = DetectorId(r.id)
    if label is DetectorId.BRIGHTNESS:
        return BrightnessStats(mean=r.x, variance=r.y)
    if label is DetectorId.MOTION:
        return Motion(_box(r))
    if label is DetectorId.BRIGHT_SPOT:
        return BrightSpot(_box(r))
    return Detection(label, _box(r))


_INTERPRETERS: dict[int, Callable[[_Fields], Interpretation]] = {
    ResultType.NONE: lambda r: NoResult(),
    ResultType.COLOR_BLOB: _color_blob,
    ResultType.LINE: lambda r: LineFollow(lateral_offset=r.x, coverage=r.w, slope_scale=r.h),
    ResultType.TAG: lambda r: TagReserved(raw_id=r.id),
    ResultType.QR_CODE: lambda r: QrCode(hash16=r.id & 0xFFFF, box=_box(r)),
    ResultType.DETECTOR: _detector,
}


# The checks every frame runs (``is_target``, ``invalid_field``) are in ``result_checks``.


def interpret(result: _Fields) -> Interpretation:
    """The typed meaning of one result's payload fields."""
    interpreter = _INTERPRETERS.get(result.result_type)
    if interpreter is None:
        return Unknown(result.result_type, result.id, "result_type: expected 0..5")
    return interpreter(result)


# -- the per-frame JSON path ----------------------------------------------------------------
# ``interpretation_json`` gives exactly ``gizmo_host.jsonl.json_text(interpret(r).to_dict())``
# (a test checks every kind) without building the dataclass and the
# dict: the live link publishes one per frame.

_BOX_JSON = '"box":{"center_x":%d,"center_y":%d,"width":%d,"height":%d}}'
_COLOR_JSON = {
    c.value: '{"kind":"color_blob","color":"' + c.name.lower() + '",' + _BOX_JSON for c in BlobColor
}
_DETECTOR_JSON = {
    DetectorId.MOTION.value: '{"kind":"motion",' + _BOX_JSON,
    DetectorId.BRIGHT_SPOT.value: '{"kind":"bright_spot",' + _BOX_JSON,
    **{
        d.value: '{"kind":"detection","label":"' + d.name.lower() + '",' + _BOX_JSON
        for d in DETECTION_CLASSES
    },
}
_BRIGHTNESS_JSON = '{"kind":"brightness","mean":%d,"variance":%d}'
_LINE_JSON = '{"kind":"line","lateral_offset":%d,"coverage":%d,"slope_scale":%d}'
_QR_JSON = '{"kind":"qr_code","hash16":%d,' + _BOX_JSON
_TAG_JSON = '{"kind":"tag_reserved","raw_id":%d}'
_NONE_JSON = '{"kind":"none"}'


# (result_type, id) -> template of the interpretation, formatted with (x, y, w, h): the kinds
# that locate a target by a box (the result line builds on them: ``stream.events``).
BOX_INTERPRETATION_JSON = {
    **{(int(ResultType.COLOR_BLOB), color): text for color, text in _COLOR_JSON.items()},
    **{(int(ResultType.DETECTOR), detector): text for detector, text in _DETECTOR_JSON.items()},
}


def interpretation_json(r: _Fields) -> str:
    """Compact JSON of ``interpret(r).to_dict()``, built from templates."""
    template = BOX_INTERPRETATION_JSON.get((r.result_type, r.id))
    if template is not None:  # the usual kinds: one lookup, one format
        return template % (r.x, r.y, r.w, r.h)
    result_type = r.result_type
    if result_type == ResultType.DETECTOR:
        if r.id == DetectorId.BRIGHTNESS:
            return _BRIGHTNESS_JSON % (r.x, r.y)
        template = _DETECTOR_JSON.get(r.id)
    elif result_type == ResultType.COLOR_BLOB:
        template = _COLOR_JSON.get(r.id)
    elif result_type == ResultType.LINE:
        return _LINE_JSON % (r.x, r.w, r.h)
    elif result_type == ResultType.QR_CODE:
        return _QR_JSON % (r.id & 0xFFFF, r.x, r.y, r.w, r.h)
    elif result_type == ResultType.NONE:
        return _NONE_JSON
    elif result_type == ResultType.TAG:
        return _TAG_JSON % r.id
    else:
        template = None
    if template is None:  # unknown type or id: rare, take the general path
        return json_text(interpret(r).to_dict())
    return template % (r.x, r.y, r.w, r.h)
