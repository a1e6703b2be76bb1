"""Interpretation of each result_type and id, and the spec's box scaling."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gizmo_host import VisionResult
from gizmo_host.wire.results import (
    BlobColor,
    BrightnessStats,
    BrightSpot,
    ColorBlob,
    Detection,
    DetectorId,
    LineFollow,
    Motion,
    NoResult,
    NormBox,
    PixelBox,
    QrCode,
    TagReserved,
    Unknown,
    interpret,
)
from tests.support.strategies import vision_results

BOX = {"x": -125, "y": 54, "w": 410, "h": 360}


def result(result_type, ident, **fields):
    return VisionResult(result_type=result_type, id=ident, **{**BOX, **fields})


@pytest.mark.parametrize(("ident", "color"), list(zip(range(1, 6), BlobColor, strict=True)))
def test_colour_blobs(ident, color):
    assert interpret(result(1, ident)) == ColorBlob(color, NormBox(-125, 54, 410, 360))


@pytest.mark.parametrize("ident", [0, 6, -1, 300])
def test_unknown_colour_is_explicit(ident):
    got = interpret(result(1, ident))
    assert isinstance(got, Unknown) and got.id == ident and "colour" in got.reason


def test_line_following_is_offset_coverage_and_slope_not_a_box():
    got = interpret(VisionResult(result_type=2, x=-300, y=500, w=640, h=-45, aux=-45))
    assert got == LineFollow(lateral_offset=-300, coverage=640, slope_scale=-45)
    assert not hasattr(got, "box")


@pytest.mark.parametrize(
    ("ident", "label"), [(10, "FACE"), (11, "PEDESTRIAN"), (12, "CAT"), (13, "DOG"), (14, "HAND")]
)
def test_detections(ident, label):
    got = interpret(result(5, ident))
    assert got == Detection(DetectorId[label], NormBox(-125, 54, 410, 360))


def test_motion_and_bright_spot_are_boxes():
    assert interpret(result(5, 1)) == Motion(NormBox(-125, 54, 410, 360))
    assert interpret(result(5, 2)) == BrightSpot(NormBox(-125, 54, 410, 360))


def test_brightness_statistics_are_mean_and_variance_never_a_position():
    got = interpret(VisionResult(result_type=5, id=3, x=128, y=900, flags=5))
    assert got == BrightnessStats(mean=128, variance=900)
    assert not hasattr(got, "box")


def test_qr_code_hash_is_the_unsigned_16_bit_id():
    assert interpret(result(4, -2)).hash16 == 0xFFFE
    assert interpret(result(4, 0x1234)) == QrCode(0x1234, NormBox(-125, 54, 410, 360))


def test_none_and_reserved_tag():
    assert interpret(VisionResult(result_type=0)) == NoResult()
    assert interpret(result(3, 77)) == TagReserved(raw_id=77)


@pytest.mark.parametrize(
    ("result_type", "ident"), [(5, 0), (5, 4), (5, 9), (5, 15), (6, 1), (255, 0)]
)
def test_unknown_type_or_detector_id_is_explicit_unknown(result_type, ident):
    got = interpret(result(result_type, ident))
    assert got == Unknown(result_type, ident, got.reason) and got.reason


@given(vision_results)
def test_every_result_interprets_to_json_without_raising(value):
    encoded = json.dumps(value.to_dict())
    assert json.loads(encoded)["interpretation"]["kind"] == value.interpretation.kind


def test_box_edges_map_to_the_pixel_grid():
    full = NormBox(center_x=-1000, center_y=1000, width=2000, height=1000).to_pixels(640, 480)
    assert full == PixelBox(center_x_px=0.0, center_y_px=479.0, width_px=640.0, height_px=240.0)
    centre = NormBox(0, 0, 0, 0).to_pixels(641, 481)
    assert (centre.center_x_px, centre.center_y_px) == (320.0, 240.0)


def test_pixels_to_normalised_uses_the_spec_formula():
    box = PixelBox(center_x_px=100, center_y_px=50, width_px=64, height_px=48)
    # centre = pixel*2000/(extent-1)-1000, size = size*2000/extent
    assert box.to_normalized(640, 480) == NormBox(
        round(100 * 2000 / 639 - 1000), round(50 * 2000 / 479 - 1000), 200, 200
    )


@given(
    st.integers(-1000, 1000),
    st.integers(-1000, 1000),
    st.integers(0, 2000),
    st.integers(0, 2000),
    st.integers(2, 4096),
    st.integers(2, 4096),
)
def test_box_pixel_round_trip_is_exact(cx, cy, w, h, width_px, height_px):
    box = NormBox(cx, cy, w, h)
    assert box.to_pixels(width_px, height_px).to_normalized(width_px, height_px) == box


def test_degenerate_image_size_is_rejected_with_the_size():
    with pytest.raises(ValueError, match="1x480"):
        NormBox(0, 0, 10, 10).to_pixels(1, 480)
    with pytest.raises(ValueError, match="640x1"):
        PixelBox(1, 1, 1, 1).to_normalized(640, 1)


def test_is_target_agrees_with_the_interpretation_having_a_box():
    from gizmo_host.wire.result_checks import is_target

    for result_type in range(8):
        for ident in [*range(-2, 20), 300, -300]:
            value = interpret(VisionResult(result_type=result_type, id=ident))
            assert is_target(result_type, ident) == hasattr(value, "box"), (result_type, ident)


@given(vision_results)
def test_interpretation_json_is_exactly_the_compact_json_of_to_dict(value):
    from gizmo_host.wire.results import interpretation_json

    expected = json.dumps(value.interpretation.to_dict(), separators=(",", ":"))
    assert interpretation_json(value) == expected


@pytest.mark.parametrize("result_type", range(7))
@pytest.mark.parametrize("ident", [*range(-1, 16), 0x7FFF, -0x8000])
def test_interpretation_json_for_every_type_and_id(result_type, ident):
    from gizmo_host.wire.results import interpretation_json

    value = VisionResult(result_type=result_type, id=ident, x=-7, y=8, w=900, h=-1000)
    expected = json.dumps(value.interpretation.to_dict(), separators=(",", ":"))
    assert interpretation_json(value) == expected
