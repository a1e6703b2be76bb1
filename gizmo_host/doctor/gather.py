"""Gather the machine's facts for the doctor: ``/sys``, ``/proc``, ``/etc`` and ``/dev`` under
one injectable root (``/`` in use; a fake tree in tests), never needing root.

Each reader returns what it could see; what it could not is ``None`` or counted as unreadable,
never guessed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gizmo_host.deploy.diagnostics import explain_open_error, find_port_holders
from gizmo_host.deploy.install import RULES_PATH, UNIT_PATH
from gizmo_host.doctor.facts import (
    AccessFacts,
    DeviceFacts,
    Holder,
    HolderFacts,
    ServiceFacts,
    SocketClients,
    SocketPeer,
    UsbIds,
)

GRABBERS = ("ModemManager", "brltty", "gizmo-host", "agetty", "gpsd")
PTY_MAJORS = range(136, 144)  # Unix98 pty slaves


@dataclass(frozen=True, slots=True)
class Root:
    """Where the machine's trees are (all under ``base``; ``/`` in use)."""

    base: Path = Path("/")

    @property
    def sys(self) -> Path:
        return self.base / "sys"

    @property
    def proc(self) -> Path:
        return self.base / "proc"

    @property
    def etc(self) -> Path:
        return self.base / "etc"


def device_facts(path: str, root: Root) -> DeviceFacts:
    is_link = os.path.islink(path)
    try:
        info = os.stat(path)
    except OSError:
        return DeviceFacts(path, exists=False, is_link=is_link, rule_files=_rule_files(root))
    target = os.path.realpath(path)
    is_char = stat.S_ISCHR(info.st_mode)
    rdev = (os.major(info.st_rdev), os.minor(info.st_rdev)) if is_char else None
    driver, usb = _sysfs(root, os.path.basename(target))
    if driver is None and rdev is not None and rdev[0] in PTY_MAJORS:
        driver = "pty"
    rules = _rule_files(root)
    names = None
    if rules and usb is not None and usb.serial:
        names = any(usb.serial in _read(root.base / r) for r in rules)
    open_errno = open_error = None
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK))
    except OSError as exc:
        open_errno = exc.errno
        open_error = explain_open_error(path, exc, proc_root=os.fspath(root.proc))
    return DeviceFacts(
        path=path,
        exists=True,
        is_link=is_link,
        target=target,
        is_char=is_char,
        mode=info.st_mode,
        owner=_name(root.etc / "passwd", info.st_uid),
        group=_name(root.etc / "group", info.st_gid),
        gid=info.st_gid,
        rdev=rdev,
        driver=driver,
        usb=usb,
        rule_files=rules,
        rule_names_device=names,
        open_errno=open_errno,
        open_error=open_error,
    )


def _rule_files(root: Root) -> tuple[str, ...]:
    directory = root.base / RULES_PATH.parent
    try:
        found = sorted(p.name for p in directory.iterdir() if "gizmo" in p.name)
    except OSError:
        return ()
    return tuple(str(RULES_PATH.parent / name) for name in found)


def _sysfs(root: Root, name: str) -> tuple[str | None, UsbIds | None]:
    """The tty's driver and, for a USB adapter, the ids of the USB device above it."""
    device = root.sys / "class" / "tty" / name / "device"
    try:
        driver: str | None = os.path.basename(os.readlink(device / "driver"))
    except OSError:
        driver = None
    try:
        here = device.resolve(strict=True)
    except OSError:
        return driver, None
    for _ in range(6):  # tty -> usb-serial port -> interface -> USB device
        vendor = _read(here / "idVendor").strip()
        if vendor:
            serial = _read(here / "serial").strip() or None
            return driver, UsbIds(vendor, _read(here / "idProduct").strip(), serial)
        if here.parent == here:
            break
        here = here.parent
    return driver, None


def access_facts(device: DeviceFacts, root: Root) -> AccessFacts:
    uid = os.geteuid()
    user = _name(root.etc / "passwd", uid) or str(uid)
    groups = tuple(sorted({_name(root.etc / "group", gid) or str(gid) for gid in os.getgroups()}))
    members: tuple[str, ...] = ()
    if device.group is not None:
        for line in _read(root.etc / "group").splitlines():
            fields = line.split(":")
            if len(fields) >= 4 and fields[0] == device.group:
                members = tuple(m for m in fields[3].split(",") if m)
    unit = root.base / UNIT_PATH
    allow: list[str] = []
    for part in [unit, *sorted((unit.parent / f"{unit.name}.d").glob("*.conf"))]:
        for raw in _read(part).splitlines():
            key, sep, value = raw.strip().partition("=")
            if sep and key.strip() == "DeviceAllow":
                if value.strip():
                    allow.append(value.strip())
                else:
                    allow.clear()  # an empty assignment resets the list
    return AccessFacts(
        user=user,
        is_root=uid == 0,
        groups=groups,
        group_members=members,
        unit_path=f"/{UNIT_PATH}" if unit.is_file() else None,
        device_allow=tuple(allow),
    )


def holder_facts(path: str, root: Root) -> HolderFacts:
    holders = tuple(
        Holder(h.pid, h.name, h.how) for h in find_port_holders(path, proc_root=str(root.proc))
    )
    unreadable = 0
    running = []
    me = os.getpid()
    try:
        pids = [int(p.name) for p in root.proc.iterdir() if p.name.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        if pid == me:
            continue
        try:
            os.listdir(root.proc / str(pid) / "fd")
        except PermissionError:
            unreadable += 1
        except OSError:
            pass
        name = _read(root.proc / str(pid) / "comm").strip()
        if name in GRABBERS:
            running.append(Holder(pid, name, "running"))
    return HolderFacts(holders, unreadable, tuple(running))


def service_facts(
    instance: str,
    properties: dict[str, str] | None,
    socket_path: str,
    root: Root,
    greeting: Callable[[str], dict[str, Any] | str] | None = None,
) -> ServiceFacts:
    """The unit and its socket; ``greeting(path)`` asks a socket that exists who holds it."""
    mode = group = None
    clients = None
    try:
        info = os.stat(socket_path)
    except OSError:
        pass
    else:
        mode = info.st_mode
        group = _name(root.etc / "group", info.st_gid)
        if greeting is not None and stat.S_ISSOCK(mode):
            clients = socket_clients(greeting(socket_path), root)
    return ServiceFacts(
        f"gizmo-host@{instance}.service", properties, socket_path, mode, group, clients
    )


def socket_clients(
    greeting: dict[str, Any] | str, root: Root, own_pid: int | None = None
) -> SocketClients:
    """The host's ``socket`` object (in its greeting or its refusal) as facts: the doctor's own
    connection left out, each other client named by ``/proc/PID/comm``."""
    if isinstance(greeting, str):
        return SocketClients(error=greeting)
    info = greeting.get("socket")
    if not isinstance(info, dict):
        return SocketClients(error="the host's greeting has no socket object (an older host?)")
    refused = greeting.get("type") == "error" and greeting.get("reason") == "too_many_clients"
    own = os.getpid() if own_pid is None else own_pid
    peers: list[SocketPeer] = []
    skipped_own = refused  # a refused probe holds no slot
    for peer in info.get("peers", []):
        pid = peer.get("pid")
        if pid == own and not skipped_own:
            skipped_own = True
            continue
        name = (_read(root.proc / str(pid) / "comm").strip() or None) if pid else None
        peers.append(SocketPeer(pid, name, peer.get("unread_bytes")))
    return SocketClients(
        refused=refused,
        clients=len(peers),
        max_clients=info.get("max_clients"),
        refused_total=int(info.get("refused", 0)),
        evicted=int(info.get("evicted", 0)),
        dropped=int(info.get("dropped", 0)),
        peers=tuple(peers),
    )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _name(table: Path, number: int) -> str | None:
    """A user's or group's name from ``/etc/passwd`` or ``/etc/group`` under the root."""
    for line in _read(table).splitlines():
        fields = line.split(":")
        if len(fields) >= 3 and fields[2] == str(number):
            return fields[0]
    return None


__all__ = [
    "Root",
    "access_facts",
    "device_facts",
    "holder_facts",
    "service_facts",
    "socket_clients",
]
