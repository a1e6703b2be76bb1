"""The settings table is the one definition: the TOML sections, their defaults, the flags and
the docs' table (docs/settings.md) all come from it; the emulator's table (docs/hil.md) alike."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

from fusion import CameraConfig, WorldConfig
from fusion.tracking import TrackingConfig
from gizmo_core import ConfigError
from gizmo_host.app import settings
from gizmo_host.app.host_config import HostConfig, config_from_mapping
from gizmo_host.app.settings import BY_KEY, SETTINGS, add_flags, overrides_from
from gizmo_host.rigs.board.emulate_settings import EMULATE_SETTINGS, parse_emulate
from gizmo_host.setting import markdown_table

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_docs_table_is_generated_from_the_settings_table() -> None:
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- settings:begin .*?-->\n(.*?)<!-- settings:end -->", text, re.S)
    assert found, "docs/settings.md lacks the settings table markers"
    assert found.group(1) == settings.markdown_table(), (
        "docs/settings.md table is stale: regenerate it with python -m gizmo_host.app.settings"
    )
    assert "`emulate." not in found.group(1)  # no vehicle reads them: the emulator's own table


def test_the_emulators_docs_table_is_generated_from_its_rows() -> None:
    text = (DOCS / "hil.md").read_text(encoding="utf-8")
    found = re.search(
        r"<!-- emulate-settings:begin .*?-->\n(.*?)<!-- emulate-settings:end -->", text, re.S
    )
    assert found, "docs/hil.md lacks the emulator's settings table markers"
    assert found.group(1) == markdown_table(EMULATE_SETTINGS), (
        "docs/hil.md's [emulate] table is stale: regenerate it with "
        "python -m gizmo_host.rigs.board.emulate_settings"
    )


def test_every_key_of_every_section_has_one_row_with_its_default() -> None:
    config = HostConfig()
    for section in dataclasses.fields(HostConfig):
        value = getattr(config, section.name)
        if not dataclasses.is_dataclass(value):
            continue  # [world], [tracking] and [camera]: free-form tables
        for f in dataclasses.fields(value):
            row = BY_KEY[f"{section.name}.{f.name}"]
            assert getattr(value, f.name) == row.default or row.kind == "table", row.key
    world = WorldConfig()
    for f in dataclasses.fields(WorldConfig):
        assert BY_KEY[f"world.{f.name}"].default == getattr(world, f.name)
    tracking = TrackingConfig()
    by_pose = {"attitude_sigma_deg", "position_sigma_m"}  # unset: by the pose's source
    for f in dataclasses.fields(TrackingConfig):
        row = BY_KEY[f"tracking.{f.name}"]
        if f.name in by_pose:
            assert (
                row.default is None and f"{getattr(tracking, f.name)} for an autopilot" in row.doc
            )
        else:
            assert row.default == getattr(tracking, f.name)
    for f in dataclasses.fields(CameraConfig):  # width and height have none: required
        if f.init:
            row = BY_KEY[f"camera.{f.name}"]
            assert row.default == (None if f.default is dataclasses.MISSING else f.default)


NUMBERS = [s for s in SETTINGS + EMULATE_SETTINGS if s.kind in ("int", "float", "triple")]


@pytest.mark.parametrize("row", NUMBERS, ids=lambda row: row.key)
def test_each_number_is_checked_against_its_own_row(row: settings.Setting) -> None:
    if row.low is None or row.high is None:
        return
    document: dict[str, dict[str, object]] = {
        "camera": {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}  # the world needs one
    } if row.section in ("world", "camera", "tracking") else {}  # fmt: skip
    document.setdefault(row.section, {})
    beyond = int(row.high * 2 + 1) if row.kind == "int" else row.high * 2 + 1
    document[row.section][row.name] = [0.0, beyond, 0.0] if row.kind == "triple" else beyond
    if row.key == "camera.fy_px":
        document["camera"].update(fx_px=500.0)
        del document["camera"]["hfov_deg"]
    with pytest.raises(ConfigError, match=rf"^{re.escape(row.key)}(\[1\])?: expected "):
        if row.section.startswith("emulate"):  # gizmo-host emulate's own file
            parse_emulate(_nested(document))
        else:
            config_from_mapping(document)


def _nested(document: dict[str, dict[str, object]]) -> dict[str, object]:
    """``{"emulate.boxes": {...}}`` as the table ``[emulate.boxes]`` in ``[emulate]``."""
    out: dict[str, object] = {}
    for section, values in document.items():
        _, _, sub = section.partition(".")
        full = {"port": 1, "width_px": 640, "height_px": 480} if sub == "boxes" else {}
        out.update({sub: {**full, **values}} if sub else values)
    return out


def test_a_world_angle_has_its_own_range_not_a_guess_from_its_name() -> None:
    camera = {"width_px": 640, "height_px": 480, "hfov_deg": 90.0}
    with pytest.raises(ConfigError, match=r"^world\.laser_beam_half_angle_deg: expected .* to 45"):
        config_from_mapping({"camera": camera, "world": {"laser_beam_half_angle_deg": 60}})


def test_the_flags_are_the_rows_with_a_flag_and_set_their_key() -> None:
    parser = argparse.ArgumentParser()
    add_flags(parser, "run")
    args = parser.parse_args(["--ttl-ms", "120", "--no-stdout", "--rflysim-copter-id", "3"])
    assert overrides_from(args) == {
        "store": {"ttl_ms": 120.0},
        "publish": {"stdout": False},
        "rflysim": {"copter_id": 3},
    }
    help_text = parser.format_help()
    for row in SETTINGS:
        if row.flag is not None and "run" in row.commands:
            assert row.flag in help_text


def test_the_clock_lock_period_reaches_the_pipeline_the_link_builds() -> None:
    config = config_from_mapping({"clock": {"lock_after_ms": 300}})
    assert config.pipeline().lock_after_ms == 300.0
    with pytest.raises(ConfigError, match=r"^clock\.lock_after_ms: expected .* from 100 to"):
        config_from_mapping({"clock": {"lock_after_ms": 10}})
