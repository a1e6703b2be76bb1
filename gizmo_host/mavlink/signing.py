"""MAVLink 2 message signing: a 32-byte secret shared with the autopilot (docs/mavlink.md).

A signed frame ends with 13 bytes: ``link_id`` (1), a 48-bit ``timestamp`` in 10 µs units
since 2015-01-01 GMT (6) and the first 6 bytes of ``SHA-256(key + frame up to the timestamp)``.
The receiving rules are the MAVLink 2 signing spec's, checked here rather than by pymavlink's
parser (which stores a stream's timestamp before it has checked the signature: one forged
frame with a far timestamp would make every later genuine frame of that stream "old"):

- unsigned and wrongly signed frames are refused;
- per stream ``(link_id, system, component)`` a timestamp must go forward (a replay is
  refused); a stream not heard before may start at most one minute behind our own timestamp;
- stricter than the spec, with the time a frame was read: a system and component is bound
  to the link it was first heard on, and while that link has been heard within
  ``LINK_SILENCE_NS`` a frame of another link (``other_link``) is refused: the autopilot's own
  signed frames sniffed on another of its links and replayed from its address are authentic
  and start a new stream, which the spec lets start a minute behind; each step back of their
  boot clock was taken for a reboot (issue 28's red team, round 3: 0.1-2 s late). Comparing
  the links' timestamps does not work: each link's signing clock counts its own packets and
  they drift apart. A link silent that long gives way to the next one heard;
- only a frame whose signature is right updates its stream and our timestamp.

Our own timestamp is the wall clock in the spec's units, never less than one more than the
last one sent or accepted, so the timestamps we send only go forward.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path

KEY_BYTES = 32
SIGNATURE_BLOCK = 13
IFLAG_SIGNED = 0x01
_EPOCH_2015_S = 1_420_070_400
_NEW_STREAM_SLACK = 6_000_000  # one minute in 10 µs units
LINK_SILENCE_NS = 1_000_000_000  # a bound link silent this long gives way to another
_MAX_STREAMS = 256


class Refusal(Enum):
    """Why a frame was refused (the counter's name)."""

    UNSIGNED = "unsigned"
    BAD_SIGNATURE = "bad_signature"
    REPLAYED = "replayed"  # its timestamp does not go forward on its stream
    STALE_STREAM = "stale_stream"  # a new stream more than a minute behind our timestamp
    OTHER_LINK = "other_link"  # a link of a system and component bound to another, live one


def read_key_file(path: str | Path) -> bytes:
    """The 32-byte secret in ``path``: 32 raw bytes, or 64 hex digits (one line). A mistake
    is a one-line ``ValueError`` naming the file (never the key)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(
            f"mavlink.signing_key_file: cannot read {path!s}: {exc.strerror}"
        ) from None
    if len(data) == KEY_BYTES:
        return data
    text = data.strip()
    if len(text) == 2 * KEY_BYTES:
        try:
            return bytes.fromhex(text.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            pass
    raise ValueError(
        f"mavlink.signing_key_file: expected 32 bytes (or 64 hex digits) in {path!s}, "
        f"got {len(data)} bytes"
    )


def wall_timestamp(wall_s: float) -> int:
    """The signing timestamp for a wall-clock time: 10 µs units since 2015-01-01 GMT."""
    return max(0, int((wall_s - _EPOCH_2015_S) * 100_000))


class Signer:
    """Signs what we send and checks what we receive, with one key."""

    def __init__(
        self, key: bytes, *, link_id: int = 0, wall_clock: Callable[[], float] = time.time
    ) -> None:
        if len(key) != KEY_BYTES:
            raise ValueError(f"signing key: expected {KEY_BYTES} bytes, got {len(key)}")
        if not 0 <= link_id <= 255:
            raise ValueError(f"signing link_id: expected 0..255, got {link_id!r}")
        self._key = bytes(key)
        self.link_id = link_id
        self._wall_clock = wall_clock
        self._timestamp = 0
        self._streams: dict[tuple[int, int, int], int] = {}
        self._links: dict[tuple[int, int], tuple[int, int]] = {}  # sender: (link, heard_ns)
        self.counts: dict[str, int] = {r.value: 0 for r in Refusal}
        self.counts["signed_ok"] = 0

    def next_timestamp(self) -> int:
        """The timestamp to sign the next frame with (always forward)."""
        self._timestamp = max(self._timestamp + 1, wall_timestamp(self._wall_clock()))
        return self._timestamp

    def check(self, frame: bytes | bytearray, now_ns: int | None = None) -> Refusal | None:
        """``None`` when ``frame`` (a whole MAVLink frame, CRC already checked), read at
        ``now_ns`` (host clock; None: no link binding), may be used."""
        refusal = self._refusal(frame, now_ns)
        if refusal is None:
            self.counts["signed_ok"] += 1
        else:
            self.counts[refusal.value] += 1
        return refusal

    def _refusal(self, frame: bytes | bytearray, now_ns: int | None) -> Refusal | None:
        if len(frame) < 12 + SIGNATURE_BLOCK or frame[0] != 0xFD or not frame[2] & IFLAG_SIGNED:
            return Refusal.UNSIGNED
        digest = hashlib.sha256(self._key + bytes(frame[:-6])).digest()[:6]
        if digest != bytes(frame[-6:]):
            return Refusal.BAD_SIGNATURE
        timestamp = int.from_bytes(frame[-12:-6], "little")
        stream = (frame[-13], frame[5], frame[6])
        last = self._streams.get(stream)
        if last is not None and timestamp <= last:
            return Refusal.REPLAYED
        sender, link = (frame[5], frame[6]), frame[-13]
        bound = self._links.get(sender)
        live = bound is not None and now_ns is not None and now_ns - bound[1] <= LINK_SILENCE_NS
        if live and bound is not None and bound[0] != link:
            return Refusal.OTHER_LINK
        if last is None:
            self._timestamp = max(self._timestamp, wall_timestamp(self._wall_clock()))
            if timestamp + _NEW_STREAM_SLACK < self._timestamp:
                return Refusal.STALE_STREAM
            if len(self._streams) >= _MAX_STREAMS:
                del self._streams[next(iter(self._streams))]
        self._streams[stream] = timestamp
        if now_ns is not None:
            if bound is None and len(self._links) >= _MAX_STREAMS:
                del self._links[next(iter(self._links))]
            self._links[sender] = (link, now_ns)
        self._timestamp = max(self._timestamp, timestamp)
        return None

    @property
    def key(self) -> bytes:
        return self._key
