"""MAVLink 2 message signing: a 32-byte secret shared with the autopilot (docs/mavlink.md).

A signed frame ends with 13 bytes: ``link_id`` (1), a 48-bit ``timestamp`` in 10 µs units
since 2015-01-01 GMT (6) and the first 6 bytes of ``SHA-256(key + frame up to the timestamp)``.
The receiving rules are the MAVLink 2 signing spec's, checked here rather than by pymavlink's
parser (which stores a stream's timestamp before it has checked the signature: one forged
frame with a far timestamp would make every later genuine frame of that stream "old"):

- unsigned and wrongly signed frames are refused;
- per stream ``(link_id, system, component)`` a timestamp must go forward (a replay is
  refused); a stream not heard before may start at most one minute behind our own timestamp;
- stricter than the spec: a frame more than ``SENDER_SLACK`` behind the newest timestamp of its
  system and component, on any link, is refused as a replay. The autopilot's own signed frames
  sniffed on another of its links and replayed from its address pass the per-stream rule (a
  new link_id); each of their boot-clock steps back was taken for a reboot (issue 28's red
  team, round 3: 2 s late, 126 epochs; a review: 0.1-0.9 s late too). The slack is below the
  20 ms step the autopilot's clock takes for a reboot, so what passes is a copy of a pose
  within 10 ms of the real one. Assumed: one sender's links sign from one clock; frames of a
  link that lags further behind it are refused (counted), the newest link is used;
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
SENDER_SLACK = 1_000  # 10 ms in 10 µs units: below the 20 ms boot-clock step taken for a reboot
_MAX_STREAMS = 256


class Refusal(Enum):
    """Why a frame was refused (the counter's name)."""

    UNSIGNED = "unsigned"
    BAD_SIGNATURE = "bad_signature"
    REPLAYED = "replayed"  # its timestamp does not go forward on its stream
    STALE_STREAM = "stale_stream"  # a new stream more than a minute behind our timestamp


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
        self._senders: dict[tuple[int, int], int] = {}  # (system, component): newest
        self.counts: dict[str, int] = {r.value: 0 for r in Refusal}
        self.counts["signed_ok"] = 0

    def next_timestamp(self) -> int:
        """The timestamp to sign the next frame with (always forward)."""
        self._timestamp = max(self._timestamp + 1, wall_timestamp(self._wall_clock()))
        return self._timestamp

    def check(self, frame: bytes | bytearray) -> Refusal | None:
        """``None`` when ``frame`` (a whole MAVLink frame, CRC already checked) may be used."""
        refusal = self._refusal(frame)
        if refusal is None:
            self.counts["signed_ok"] += 1
        else:
            self.counts[refusal.value] += 1
        return refusal

    def _refusal(self, frame: bytes | bytearray) -> Refusal | None:
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
        sender = (frame[5], frame[6])
        newest = self._senders.get(sender)
        if newest is not None and timestamp + SENDER_SLACK < newest:
            return Refusal.REPLAYED
        if last is None:
            self._timestamp = max(self._timestamp, wall_timestamp(self._wall_clock()))
            if timestamp + _NEW_STREAM_SLACK < self._timestamp:
                return Refusal.STALE_STREAM
            if len(self._streams) >= _MAX_STREAMS:
                del self._streams[next(iter(self._streams))]
        self._streams[stream] = timestamp
        if newest is None or timestamp > newest:
            if newest is None and len(self._senders) >= _MAX_STREAMS:
                del self._senders[next(iter(self._senders))]
            self._senders[sender] = timestamp
        self._timestamp = max(self._timestamp, timestamp)
        return None

    @property
    def key(self) -> bytes:
        return self._key
