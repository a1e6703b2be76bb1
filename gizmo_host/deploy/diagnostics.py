"""Startup diagnostics: turn an ``OSError`` from opening the serial port into advice.

"Permission denied" or "Device or resource busy" alone sends people searching; the fix is almost
always one of a few: join the device's group, stop the process holding the port (ModemManager,
brltty, a serial console), or plug the board in. This module finds out which, from the device
node's owner and mode, ``/proc/locks`` and ``/proc/*/fd``, and says so in one message.

Config errors are reported by ``gizmo_host.app.host_config``, which names the key and the expected
value.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PortHolder", "explain_open_error", "find_port_holders"]

# Processes known to grab serial ports, with the fix for each (matched on /proc/PID/comm).
KNOWN_GRABBERS: dict[str, str] = {
    "ModemManager": (
        "ModemManager probes serial ports for modems; the gizmo-host udev rule sets "
        "ID_MM_DEVICE_IGNORE=1 (install it, then replug), or run "
        "`sudo systemctl disable --now ModemManager`"
    ),
    "brltty": (
        "brltty claims common USB-serial chips for braille displays; remove it "
        "(`sudo apt remove brltty`) unless a braille display is in use"
    ),
    "agetty": (
        "a serial console login runs on this port; "
        "`sudo systemctl disable --now serial-getty@<port>.service` and remove console=<port> "
        "from the kernel command line"
    ),
    "getty": "a serial console login runs on this port; disable its serial-getty service",
    "gpsd": "gpsd opens serial ports looking for GPS receivers; remove this port from its DEVICES",
    "gizmo-host": "another gizmo-host is already running on this port; stop it first",
}


@dataclass(frozen=True, slots=True)
class PortHolder:
    """A process that has the port open (``how="open"``) or holds its lock (``how="flock"``)."""

    pid: int
    name: str
    how: str


def explain_open_error(path: str, exc: OSError, *, proc_root: str = "/proc") -> str:
    """One message saying why ``path`` could not be opened and what to do about it."""
    code = exc.errno
    if code == errno.EPERM:
        return _explain_not_permitted(path, Path(proc_root))
    if code == errno.EACCES:
        return _explain_permission(path)
    if code == errno.EBUSY:
        return _explain_busy(path, Path(proc_root))
    if code == errno.ENOENT or isinstance(exc, FileNotFoundError):
        return _explain_missing(path)
    if code in (errno.ENXIO, errno.ENODEV, errno.EIO):
        return (
            f"{path} exists but no device answers behind it ({exc.strerror}); the board was "
            "probably unplugged. gizmo-host keeps retrying until it is back."
        )
    if code == errno.ENOTTY:
        return f"{path} is not a serial port (not a tty); check --serial or [serial] path."
    return f"cannot open {path}: {exc.strerror or exc}"


def find_port_holders(path: str, *, proc_root: str = "/proc") -> list[PortHolder]:
    """Processes other than this one that hold ``path`` open or flock()ed, as far as visible.

    ``/proc/locks`` names flock holders to any user; ``/proc/PID/fd`` only shows processes we
    may inspect (our own user's, or all of them for root).
    """
    try:
        device = os.stat(path)
    except OSError:
        return []
    root = Path(proc_root)
    holders: dict[int, PortHolder] = {}
    for pid in _pids_locking(root, device):
        holders[pid] = PortHolder(pid, _process_name(root, pid), "flock")
    for pid in _pids_with_open(root, device):
        holders.setdefault(pid, PortHolder(pid, _process_name(root, pid), "open"))
    holders.pop(os.getpid(), None)
    return sorted(holders.values(), key=lambda holder: holder.pid)


def _explain_permission(path: str) -> str:
    try:
        device = os.stat(path)
    except OSError as exc:
        return f"permission denied opening {path}, and it cannot be inspected: {exc.strerror}"
    target = os.path.realpath(path)
    shown = path if target == path else f"{path} (-> {target})"
    owner = _user_name(device.st_uid)
    group = _group_name(device.st_gid)
    mode = stat.S_IMODE(device.st_mode)
    facts = f"{shown} is owned by {owner}:{group} with mode {mode:04o}"
    user = _user_name(os.geteuid())
    if not mode & stat.S_IRGRP or not mode & stat.S_IWGRP:
        only = owner if mode & stat.S_IRUSR and mode & stat.S_IWUSR else "root"
        return (
            f"permission denied: {facts}, so only {only} may use it. Install the gizmo-host "
            f"udev rule (`gizmo-host install --serial <SERIAL>`), which makes it group dialout, "
            f"mode 0660, then replug the board; and join the group: "
            f"`sudo usermod -aG dialout {user}`."
        )
    if device.st_gid in os.getgroups():
        return (
            f"permission denied: {facts} and this process is in group {group}, so something "
            f"else blocks access (an ACL, or a systemd DeviceAllow= list)."
        )
    if user in _group_members(device.st_gid):
        return (
            f"permission denied: {facts}. User {user} is in group {group}, but this session "
            f"started before joining it: log out and back in (or reboot)."
        )
    return (
        f"permission denied: {facts}, and user {user} is not in group {group}. Join it with "
        f"`sudo usermod -aG {group} {user}`, then log out and back in. (The gizmo-host@ "
        f"systemd service already runs with SupplementaryGroups=dialout.)"
    )


def _explain_not_permitted(path: str, proc_root: Path) -> str:
    """EPERM (not EACCES) on a device node is the device cgroup: systemd's DeviceAllow= list.

    The fix it suggests admits the node alone: a driver class (``char-ttyS``) would also admit
    every other port and console of that driver, the broad grant the unit was narrowed from."""
    try:
        device = os.stat(path)
    except OSError:
        return _explain_permission(path)
    if not stat.S_ISCHR(device.st_mode):
        return _explain_permission(path)
    major, minor = os.major(device.st_rdev), os.minor(device.st_rdev)
    driver = tty_driver_name(proc_root, major, minor)
    target = os.path.realpath(path)
    shown = path if target == path else f"{path} (-> {target})"
    named = f" (tty driver {driver})" if driver else ""
    return (
        f"{shown}, char {major}:{minor}{named}, is refused by the device access list "
        f"(systemd DeviceAllow=): the gizmo-host@ unit admits only its own instance's node, "
        f"resolved when the service started. If the board came back on another node, restart "
        f"it (`sudo systemctl restart gizmo-host@<name>`); to admit this node too, "
        f"`sudo systemctl edit gizmo-host@.service`: [Service] DeviceAllow={target} rw"
    )


def tty_driver_name(proc_root: Path, major: int, minor: int) -> str | None:
    """The tty driver that owns ``major:minor``, from /proc/tty/drivers.

    /proc/devices cannot say: it lists several names for one major (4 is ``/dev/vc/0``, ``tty``
    and ``ttyS``), while /proc/tty/drivers gives each driver its minor range
    (``serial  /dev/ttyS  4  64-111  serial``)."""
    try:
        lines = (proc_root / "tty" / "drivers").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[2] != str(major):
            continue
        low, _, high = fields[3].partition("-")
        try:
            if int(low) <= minor <= int(high or low):
                return fields[0]
        except ValueError:
            continue
    return None


def _explain_busy(path: str, proc_root: Path) -> str:
    holders = find_port_holders(path, proc_root=os.fspath(proc_root))
    if holders:
        parts = []
        for holder in holders:
            advice = KNOWN_GRABBERS.get(holder.name)
            described = f"{holder.name} (pid {holder.pid}, {holder.how})"
            parts.append(f"{described}: {advice}" if advice else described)
        return f"{path} is busy, held by " + "; ".join(parts) + "."
    running = [
        f"{name} (pid {pid})"
        for pid, name in _running_processes(proc_root)
        if name in KNOWN_GRABBERS and name != "gizmo-host"
    ]
    suspects = (
        f" Running now and known to grab serial ports: {', '.join(running)}." if running else ""
    )
    unseen = (
        "but it has gone or holds it in a way /proc does not show"
        if os.geteuid() == 0
        else "and this user cannot see which"
    )
    return (
        f"{path} is busy: another process has it open or locked, {unseen}. Find it with "
        f"`sudo fuser -v {path}` or `sudo lsof {path}`.{suspects}"
    )


def _explain_missing(path: str) -> str:
    if os.path.islink(path):
        detail = f"{path} is a dangling link to {os.readlink(path)}: the board was unplugged."
    else:
        detail = (
            f"{path} does not exist: is the board plugged in, and is the udev rule installed "
            f"(`ls -l /dev/gizmo*`, `gizmo-host udev-rule --serial <SERIAL>`)?"
        )
    return f"{detail} gizmo-host keeps retrying, backing off to every 2 s, until it appears."


def _pids_locking(proc_root: Path, device: os.stat_result) -> set[int]:
    """PIDs in ``/proc/locks`` holding a lock on the same inode as ``device``."""
    want = (os.major(device.st_dev), os.minor(device.st_dev), device.st_ino)
    pids: set[int] = set()
    try:
        lines = (proc_root / "locks").read_text().splitlines()
    except OSError:
        return pids
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 1234 00:05:7 0 EOF"; blocked waiters have "->" after "1:".
        fields = line.split()
        if "->" in fields or len(fields) < 6:
            continue
        try:
            pid = int(fields[4])
            major, minor, inode = fields[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == want:
                pids.add(pid)
        except ValueError:
            continue
    return pids


def _pids_with_open(proc_root: Path, device: os.stat_result) -> set[int]:
    """PIDs with a file descriptor on ``device`` (matched by device number or inode)."""
    pids = set()
    for pid in _pids(proc_root):
        try:
            fds = list((proc_root / str(pid) / "fd").iterdir())
        except OSError:
            continue  # another user's process, or it exited
        for fd in fds:
            try:
                opened = fd.stat()
            except OSError:
                continue
            if _same_node(opened, device):
                pids.add(pid)
                break
    return pids


def _same_node(a: os.stat_result, b: os.stat_result) -> bool:
    if stat.S_ISCHR(a.st_mode) and stat.S_ISCHR(b.st_mode):
        return a.st_rdev == b.st_rdev
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _pids(proc_root: Path) -> list[int]:
    try:
        return [int(entry.name) for entry in proc_root.iterdir() if entry.name.isdigit()]
    except OSError:
        return []


def _running_processes(proc_root: Path) -> list[tuple[int, str]]:
    return [(pid, _process_name(proc_root, pid)) for pid in _pids(proc_root)]


def _process_name(proc_root: Path, pid: int) -> str:
    try:
        return (proc_root / str(pid) / "comm").read_text().strip()
    except OSError:
        return "?"


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def _group_members(gid: int) -> list[str]:
    try:
        return list(grp.getgrgid(gid).gr_mem)
    except KeyError:
        return []
