"""A healthy installation's facts for the doctor's check tests, and a way to break one part."""

from __future__ import annotations

import dataclasses
import stat
from typing import Any

from gizmo_host.doctor.facts import (
    AccessFacts,
    DeviceFacts,
    Facts,
    HolderFacts,
    MavlinkFacts,
    RflyFacts,
    ServiceFacts,
    StreamFacts,
    UsbIds,
)

RULE = "etc/udev/rules.d/70-gizmo-host.rules"


def healthy() -> Facts:
    return Facts(
        device=DeviceFacts(
            "/dev/gizmo0", exists=True, is_link=True, target="/dev/ttyUSB0", is_char=True,
            mode=stat.S_IFCHR | 0o660, owner="root", group="dialout", gid=20, rdev=(188, 0),
            driver="ftdi_sio", usb=UsbIds("0403", "6001", "A10K1234"), rule_files=(RULE,),
            rule_names_device=True,
        ),
        access=AccessFacts(
            "pilot", is_root=False, groups=("dialout", "pilot"), group_members=("pilot",),
            unit_path="/etc/systemd/system/gizmo-host@.service", device_allow=("/dev/%I rw",),
        ),
        holders=HolderFacts((), 0),
        stream=StreamFacts(
            115200, 3.0, bytes_in=3150, frames_ok=90, clock_status="locked", skew_ppm=12.0,
            latency_ms=(12.0,) * 90,
        ),
        rfly=RflyFacts(
            "/etc/gizmo-host/Config.json", datagrams={"state (udp 30101)": 300},
            odometry_answered=True,
        ),
        mavlink=MavlinkFacts(
            "udpin:0.0.0.0:14550", 1, heartbeat=True, autopilot="system 1/1", rtt_ms=2.0,
            offset_ms=0.1, rates_hz={"ODOMETRY": 50.0},
        ),
        settings=(),
        service=ServiceFacts(
            "gizmo-host@gizmo0.service",
            {"LoadState": "loaded", "ActiveState": "active", "SubState": "running",
             "Result": "success", "ExecMainStatus": "0", "WatchdogUSec": "10s"},
            "/run/gizmo-host/gizmo0/results.sock", stat.S_IFSOCK | 0o660, "gizmo-host",
        ),
    )  # fmt: skip


def broken(part: str, **changes: Any) -> Facts:
    """The healthy facts with ``part`` (a Facts field) changed."""
    facts = healthy()
    return dataclasses.replace(
        facts, **{part: dataclasses.replace(getattr(facts, part), **changes)}
    )
