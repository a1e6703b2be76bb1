"""The HIL truth is independent of the host's camera model: a simulator whose camera is not the
one the host was told about must fail the accuracy budget.

The accuracy case of ``test_chain`` (the TypeID 30 box path, orbit with yaw swings, board
latency and skew) runs without faults, with the stand-in's box sensor changed while the host
keeps the true ``Config.json``: the mount pitched 0.5° further down, or the lens 2% longer
(``CameraFOV`` for ``fx`` 2% up). Were the truth computed through the host's own model (a box
un-projected by the model that drew it), such an error would cancel out and pass unseen. A
control chain with the true sensor runs beside them and meets the budget; the pitch fails it.
The longer lens stays within it (the target stays near the image's centre, where a focal
length error vanishes) but adds visibly to the bearing error.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from tests.hil.budgets import BEARING_BUDGET_DEG, BOARD, HOST_TOML, POSITION_BUDGET_M
from tests.hil.chain import Chain, Plan, run_chains
from tests.hil.judge import Accuracy, accuracy, measurements
from tests.hil.scene import swinging_orbit

# dev.py runs the HIL tests alone, after the others; with ``pytest -n N --dist loadgroup`` one
# worker runs them (each module's chains are one fixture: two workers would run it twice).
pytestmark = [
    pytest.mark.hil,
    pytest.mark.subprocess,
    pytest.mark.realtime,
    pytest.mark.xdist_group("hil"),
]

DURATION_S = 3.0
CLEAN_S = [(1.0, DURATION_S)]  # after the device clock has locked
LONGER_LENS_FOV_DEG = 2 * math.degrees(math.atan(math.tan(math.radians(45.0)) / 1.02))


def _plan(name: str, *changes: tuple[str, object]) -> Plan:
    return Plan(
        name,
        swinging_orbit,
        DURATION_S,
        emulate_flags=BOARD,
        host_toml=HOST_TOML,
        stand_in_sensor=changes,
    )


TRUE = _plan("true")
PITCHED = _plan("pitched", ("SensorAngEular", [0.0, -45.5, 0.0]))
LONGER_LENS = _plan("longer_lens", ("CameraFOV", LONGER_LENS_FOV_DEG))


@pytest.fixture(scope="module")
def chains(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Chain]:
    return asyncio.run(run_chains([TRUE, PITCHED, LONGER_LENS], tmp_path_factory.mktemp("hil")))


def _accuracy(chain: Chain) -> Accuracy:
    assert chain.returncode == 0, chain.stderr
    located = measurements(chain, CLEAN_S)
    assert len(located) >= 20
    figures = accuracy(chain, located)
    print(figures.text(chain.plan.name))
    return figures


def test_a_mount_pitched_half_a_degree_off_fails_the_accuracy_budget(
    chains: dict[str, Chain],
) -> None:
    control = _accuracy(chains["true"])
    figures = _accuracy(chains["pitched"])
    assert control.meets(BEARING_BUDGET_DEG, POSITION_BUDGET_M), control.text("true")
    assert not figures.meets(BEARING_BUDGET_DEG, POSITION_BUDGET_M), figures.text("pitched")


def test_a_lens_2_percent_longer_shows_in_the_bearing_error(chains: dict[str, Chain]) -> None:
    control = _accuracy(chains["true"])
    figures = _accuracy(chains["longer_lens"])
    assert figures.bearing_p95_deg > control.bearing_p95_deg + 0.05, figures.text("longer_lens")
