"""Frame-aligned wake-ups on a tty: VMIN follows the bytes the current frame still lacks.

The serial link reads a tty's descriptor itself; on ptys and on-board UARTs this module sets
the tty's VMIN so that the event loop wakes once a frame can be complete, not for every few
bytes the UART driver delivers. USB adapters batch bytes themselves and are left alone.
"""

from __future__ import annotations

import array
import fcntl
import os
import struct
import termios
from typing import Any


def tty_descriptor(transport: Any) -> int:
    """The transport's tty descriptor, or -1 when it is no tty (a socket URL, say)."""
    serial = transport.get_extra_info("serial")
    try:
        fd = serial.fileno()
    except (AttributeError, OSError, TypeError):
        return -1
    return fd if isinstance(fd, int) and os.isatty(fd) else -1


class FrameReads:
    """Wake when the current frame can be complete.

    In non-canonical mode the tty layer reports a descriptor readable only once VMIN bytes are
    queued (with VTIME 0; a non-blocking read still returns whatever is there, and a hang-up is
    reported at once). With VMIN at the bytes the frame still lacks, the event loop wakes when
    the frame can be complete rather than for every few bytes the UART driver pushes: one
    wake-up per frame, no added latency.

    The link reads at most those same bytes, so on a busy line the next frame's first bytes
    stay queued instead of being read early: reads end on frame boundaries, VMIN stays at a
    whole frame, and no ``TCSETS`` is needed per frame. When frames queue up faster than the
    loop wakes (a saturated fast line, a backlog after a stall), a read takes every whole frame
    queued (``queued``: one ``FIONREAD``), still ending on a frame boundary: one read, one
    parse, one publication for all of them. VMIN changes only after a partial or bad frame, by
    one ``TCSETS`` ioctl on the kernel ``struct termios`` read once at set-up
    (``termios.tcsetattr`` would add a ``TCGETS`` each time; it is the fallback where that
    struct's layout is not the generic one). Reading everything queued instead would end most
    reads of a busy line inside a frame: a ``TCSETS`` for each (measured: 6% more CPU at
    115200).

    Only for ptys and on-board UARTs: a USB-serial driver may turn every ``TCSETS`` into a
    blocking USB control transfer (ftdi_sio does), and its own latency timer already batches
    bytes into packets, so USB adapters get plain wake-ups and large reads.
    """

    __slots__ = ("_attrs", "_count", "_fd", "_original_vmin", "_raw", "_vmin_offset", "vmin")

    def __init__(self, fd: int, attrs: list[Any], raw: bytearray | None) -> None:
        self._fd = fd
        self._attrs = attrs
        self._raw = raw
        self._count = array.array("i", [0])  # FIONREAD's answer, written in place
        self._vmin_offset = _KERNEL_CC_OFFSET + termios.VMIN
        self.vmin = self._original_vmin = attrs[6][termios.VMIN]  # as set on the tty

    @classmethod
    def for_descriptor(cls, fd: int) -> FrameReads | None:
        try:
            attrs = termios.tcgetattr(fd)
            name = os.path.relpath(os.ttyname(fd), "/dev")  # ttyUSB0, pts/3
        except (OSError, termios.error):
            return None
        if is_usb_tty(name):
            return None
        vtime, vmin = attrs[6][termios.VTIME], attrs[6][termios.VMIN]
        if not isinstance(vmin, int) or vtime != 0:
            return None
        attrs[6] = list(attrs[6])
        kernel_termios = bytearray(_KERNEL_TERMIOS_SIZE)
        raw: bytearray | None = kernel_termios
        try:
            fcntl.ioctl(fd, termios.TCGETS, kernel_termios)
        except (AttributeError, OSError):  # no TCGETS (macOS, the BSDs): use tcsetattr
            raw = None
        if raw is not None and (
            struct.unpack_from("=I", raw, 12)[0] != attrs[3]  # c_lflag where expected?
            or raw[_KERNEL_CC_OFFSET + termios.VMIN] != vmin
        ):
            raw = None  # another kernel struct layout (alpha, powerpc): use tcsetattr
        return cls(fd, attrs, raw)

    def restore(self) -> None:
        """Give the tty its VMIN back for the next program that opens it."""
        self.expect(self._original_vmin)

    def queued(self) -> int:
        """Bytes waiting in the tty (0 if it cannot say: the read then finds out)."""
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, self._count, True)
        except OSError:
            return 0
        return self._count[0]

    def expect(self, nbytes: int) -> None:
        """Wake when ``nbytes`` more bytes are queued (VMIN)."""
        if nbytes == self.vmin:
            return
        try:
            if self._raw is not None:
                self._raw[self._vmin_offset] = nbytes
                fcntl.ioctl(self._fd, termios.TCSETS, self._raw)
            else:
                self._attrs[6][termios.VMIN] = nbytes
                termios.tcsetattr(self._fd, termios.TCSANOW, self._attrs)
        except (OSError, termios.error):
            return  # hung up: the read path reports it
        self.vmin = nbytes


def is_usb_tty(name: str, sys_root: str = "/sys") -> bool:
    """Whether the tty ``name`` (``ttyUSB0``, ``ttyACM0``, ``pts/3``...) sits on a USB device."""
    device = os.path.join(sys_root, "class", "tty", name.replace("/", "!"), "device")
    return "/usb" in os.path.realpath(device)


# Generic Linux kernel ``struct termios``: four tcflag_t, c_line, c_cc[19].
_KERNEL_CC_OFFSET = 17
_KERNEL_TERMIOS_SIZE = 36
