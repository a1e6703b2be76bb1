"""The doctor's verdicts: pure functions of :class:`~gizmo_host.doctor.facts.Facts`.

Each check gives ok, warn or fail (or skip, for what is not configured or could not be read
because an earlier check failed) with one line of evidence and one line of fix. No I/O here:
what the machine says was gathered before (:mod:`gizmo_host.doctor.gather`). The checks live in
:mod:`.checks_port`, :mod:`.checks_stream` and :mod:`.checks_remote`.
"""

from __future__ import annotations

from collections.abc import Callable

from gizmo_host.doctor.checks_port import access_checks, device_checks, holder_checks
from gizmo_host.doctor.checks_remote import mavlink_checks, rfly_checks, service_checks
from gizmo_host.doctor.checks_stream import board_checks, stream_checks
from gizmo_host.doctor.facts import Facts
from gizmo_host.doctor.verdict import Check, Status, exit_code

__all__ = ["CHECKS", "Check", "Status", "exit_code", "run_checks"]


def settings_checks(facts: Facts) -> list[Check]:
    """Settings that would do nothing (gizmo_host.app.idle): written, but no part reads them."""
    if facts.settings is None:
        return [Check("settings", Status.SKIP, "no settings file (--config)")]
    if not facts.settings:
        return [Check("settings", Status.OK, "every setting written is in use")]
    return [
        Check(
            "settings",
            Status.WARN,
            "; ".join(facts.settings),
            "remove them, or turn their part on (a section is on when it is present, unless "
            "it says enabled = false)",
        )
    ]


CHECKS: tuple[Callable[[Facts], list[Check]], ...] = (
    settings_checks,
    device_checks,
    access_checks,
    holder_checks,
    stream_checks,
    board_checks,
    rfly_checks,
    mavlink_checks,
    service_checks,
)


def run_checks(facts: Facts) -> list[Check]:
    return [check for group in CHECKS for check in group(facts)]
