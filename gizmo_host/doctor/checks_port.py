"""The doctor's checks of the port itself: the device, the udev rule and the driver; access
(permissions, groups, the unit's DeviceAllow); other processes holding it. Pure: facts in."""

from __future__ import annotations

import errno
import stat

from gizmo_host.doctor.facts import Facts
from gizmo_host.doctor.verdict import Check, Status
from gizmo_host.doctor.verdict import ok as _ok

GRABBER_FIXES = {
    "ModemManager": "the gizmo-host udev rule sets ID_MM_DEVICE_IGNORE=1 (install it, replug), "
    "or `sudo systemctl disable --now ModemManager`",
    "brltty": "`sudo apt remove brltty` (unless a braille display is in use)",
    "gizmo-host": "another gizmo-host reads this port: `systemctl status 'gizmo-host@*'`; "
    "stop the one you do not want",
    "agetty": "a login console runs on it: `sudo systemctl disable --now serial-getty@<port>`",
    "gpsd": "remove this port from gpsd's DEVICES",
}

# -- the device ----------------------------------------------------------------------------


def device_checks(facts: Facts) -> list[Check]:
    d = facts.device
    out: list[Check] = []
    if not d.exists:
        dangling = " (a dangling udev link: the board was unplugged)" if d.is_link else ""
        out.append(
            Check(
                "device",
                Status.FAIL,
                f"{d.path} does not exist{dangling}",
                "plug the board in; check `ls -l /dev/gizmo* /dev/ttyUSB* /dev/ttyACM*` and "
                "that the udev rule matches it (`gizmo-host install --serial <SERIAL>`)",
            )
        )
    elif not d.is_char:
        out.append(
            Check("device", Status.FAIL, f"{d.path} is not a character device", "--serial PATH")
        )
    else:
        shown = f"{d.path} -> {d.target}" if d.is_link else d.path
        out.append(_ok("device", f"{shown}, char {d.rdev[0]}:{d.rdev[1]}" if d.rdev else shown))
    if d.driver == "pty":
        out.append(Check("udev rule", Status.SKIP, f"{d.path} is a pty: no udev rule applies"))
    elif not d.rule_files:
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                "no gizmo-host udev rule in /etc/udev/rules.d",
                "`sudo gizmo-host install --serial <SERIAL>` (a stable /dev/gizmo0, group "
                "dialout, ModemManager told to keep off)",
            )
        )
    elif d.rule_names_device is False:
        serial = d.usb.serial if d.usb else "?"
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                f"{', '.join(d.rule_files)} installed, but no rule names this adapter's serial "
                f"{serial}",
                f"`sudo gizmo-host install --serial {serial}` and replug",
            )
        )
    elif d.exists and not d.is_link and d.rule_files:
        out.append(
            Check(
                "udev rule",
                Status.WARN,
                f"{', '.join(d.rule_files)} installed, but {d.path} is the kernel's name, not "
                "the rule's link",
                "use --serial /dev/gizmo0 (the rule's stable name)",
            )
        )
    else:
        out.append(_ok("udev rule", f"{', '.join(d.rule_files)}; {d.path} is its link"))
    if d.exists and d.is_char:
        ids = (
            f"USB {d.usb.vendor}:{d.usb.product} serial {d.usb.serial or '-'}"
            if d.usb
            else "not USB (an on-board UART or a pty)"
        )
        out.append(_ok("driver", f"driver {d.driver or 'unknown'}, {ids}"))
    return out


# -- access --------------------------------------------------------------------------------


def access_checks(facts: Facts) -> list[Check]:
    d, a = facts.device, facts.access
    out: list[Check] = []
    if d.exists and d.is_char and d.mode is not None:
        mode = stat.S_IMODE(d.mode)
        node = f"{d.target or d.path} {d.owner}:{d.group} {mode:04o}"
        if d.open_errno is None:
            out.append(_ok("permissions", f"{node}; opened read-only as {a.user}"))
        elif d.open_errno in (errno.EACCES, errno.EPERM):
            in_group = d.group in a.groups
            listed = a.user in a.group_members
            if not mode & stat.S_IRGRP or not mode & stat.S_IWGRP:
                fix = "install the udev rule (group dialout, mode 0660) and replug"
            elif listed and not in_group:
                fix = f"{a.user} joined {d.group} after this session started: log out and in"
            else:
                fix = f"`sudo usermod -aG {d.group} {a.user}`, then log out and in"
            out.append(
                Check(
                    "permissions",
                    Status.FAIL,
                    f"{node}; {a.user} (groups {', '.join(a.groups) or '-'}) cannot open it",
                    fix,
                )
            )
        elif d.open_errno == errno.EBUSY:
            out.append(_ok("permissions", f"{node}; busy (see the next check), not refused"))
        else:
            out.append(
                Check("permissions", Status.WARN, f"{node}; open failed", d.open_error or "-")
            )
    if a.unit_path is None and d.driver == "pty":
        out.append(Check("unit", Status.SKIP, "a pty (the emulator): not a service's port"))
    elif a.unit_path is None:
        out.append(
            Check(
                "unit",
                Status.WARN,
                "gizmo-host@.service is not installed",
                "`sudo gizmo-host install --serial <SERIAL>` to run it as a service",
            )
        )
    else:
        classes = [v for v in a.device_allow if v.split()[0].startswith("char-")]
        if classes:
            out.append(
                Check(
                    "unit DeviceAllow",
                    Status.WARN,
                    f"{a.unit_path} allows whole driver classes: {', '.join(classes)}",
                    "reinstall (`sudo gizmo-host install`): the unit now admits only /dev/%I",
                )
            )
        elif not a.device_allow:
            out.append(
                Check(
                    "unit DeviceAllow",
                    Status.WARN,
                    f"{a.unit_path} has no DeviceAllow=: every device is refused",
                    "reinstall the unit (`sudo gizmo-host install`)",
                )
            )
        else:
            out.append(_ok("unit DeviceAllow", f"{a.unit_path}: {', '.join(a.device_allow)}"))
    return out


def holder_checks(facts: Facts) -> list[Check]:
    h = facts.holders
    if not facts.device.exists:
        return [Check("port holders", Status.SKIP, "no device to hold")]
    if h.holders:
        names = ", ".join(f"{x.name} (pid {x.pid}, {x.how})" for x in h.holders)
        fixes = [GRABBER_FIXES.get(x.name, f"stop pid {x.pid}") for x in h.holders]
        return [Check("port holders", Status.FAIL, f"held by {names}", "; ".join(fixes))]
    unseen = (
        f"; {h.unreadable} processes of other users not readable (root would see them)"
        if h.unreadable
        else ""
    )
    # brltty claims adapters whatever the rule says; ModemManager keeps off with the rule.
    risky = [
        x
        for x in h.grabbers_running
        if x.name == "brltty" or (x.name == "ModemManager" and not facts.device.rule_files)
    ]
    if risky:
        names = ", ".join(f"{x.name} (pid {x.pid})" for x in risky)
        return [
            Check(
                "port holders",
                Status.WARN,
                f"nobody holds it now{unseen}, but running: {names}",
                "; ".join(GRABBER_FIXES[x.name] for x in risky),
            )
        ]
    return [_ok("port holders", f"nobody else has it open or locked{unseen}")]
