"""MAVLink 2 signing (``[mavlink] signing_key_file``): with a key, everything sent is signed and
only rightly signed frames whose timestamps go forward are used. The signatures are checked
here with ``hashlib`` against the key, not by the code under test."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from gizmo_host.cli.main import main
from gizmo_host.mavlink.signing import Signer, read_key_file, wall_timestamp
from tests.support.mavlink_wire import Wire

KEY = bytes(range(32))
OTHER_KEY = bytes(32)


def signed_wire(**kw) -> Wire:
    return Wire(session_kw={"signer": Signer(KEY)}, signer=Signer(KEY), **kw)


def rightly_signed(frame: bytes, key: bytes) -> bool:
    """The spec's rule, by hand: signature = SHA-256(key + frame up to the signature)[:6]."""
    if frame[0] != 0xFD or not frame[2] & 0x01:
        return False
    return hashlib.sha256(key + frame[:-6]).digest()[:6] == frame[-6:]


def signing_mav(key: bytes, timestamp: int) -> mavlink.MAVLink:
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    mav.signing.secret_key = key
    mav.signing.sign_outgoing = True
    mav.signing.timestamp = timestamp
    return mav


def test_signed_both_ways_locks_and_every_frame_sent_is_signed_with_the_key():
    wire = signed_wire()
    wire.run(3.0)
    assert wire.session.locked and len(wire.poses) > 100
    sent = [data for data, _ in wire.sent_to]
    assert len(sent) > 30 and all(rightly_signed(d, KEY) for d in sent)
    assert wire.session.codec.stats()["signing"]["signed_ok"] > 100


def test_unsigned_wrongly_signed_replayed_and_far_forged_frames_are_refused_and_counted():
    wire = signed_wire(streams=(mavlink.MAVLINK_MSG_ID_ATTITUDE_QUATERNION, 32))
    captured: list[bytes] = []
    wire.tamper = lambda data: captured.append(data) or data
    wire.run(2.0)
    wire.tamper = None
    plain = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    now_ts = wall_timestamp(time.time())
    wrong = signing_mav(OTHER_KEY, now_ts + 100)
    far = signing_mav(OTHER_KEY, 2**48 - 10)  # a far timestamp on the autopilot's own stream
    for _ in range(10):
        wire.inject(plain.local_position_ned_encode(1, 50.0, 0, 0, 0, 0, 0).pack(plain))
        wire.inject(wrong.local_position_ned_encode(1, 50.0, 0, 0, 0, 0, 0).pack(wrong))
        wire.inject(far.heartbeat_encode(2, 12, 0, 0, 4).pack(far))
    for data in captured[:10]:
        wire.inject(data)  # a replay: its timestamp does not go forward
    poses = len(wire.poses)
    wire.run(2.0)
    counts = wire.session.codec.stats()["signing"]
    assert counts["unsigned"] == 10 and counts["bad_signature"] == 20
    assert counts["replayed"] >= 10
    assert len(wire.poses) > poses + 80  # the real stream goes on: no forged timestamp stuck
    assert all(abs(p.position_ned_m[0]) < 5 for p in wire.poses)
    assert wire.session.locked


def signed_frame(link_id: int, timestamp: int, system: int = 1) -> bytes:
    """A rightly signed HEARTBEAT, as the sender with the key made it on ``link_id``."""
    mav = signing_mav(KEY, timestamp)
    mav.signing.link_id = link_id
    mav.srcSystem = system
    return mav.heartbeat_encode(2, 12, 0, 0, 4).pack(mav)


def test_a_senders_own_frames_replayed_under_another_link_id_are_refused():
    """Issue 28's red team, round 3: signed frames sniffed on the autopilot's radio link
    (another link_id: a stream new to the host, which the spec lets start a minute behind)
    replayed 0.1-2 s late from its own address were taken, and each boot-clock step back in
    them for a reboot. A system and component is bound to its link while that link is heard:
    another link's frames are refused, whatever their timestamps (each link's signing clock
    counts its own packets, so a radio link's may run ahead of ours)."""
    now = wall_timestamp(time.time())
    signer = Signer(KEY, wall_clock=time.time)
    t = 10**12  # the host clock, ns
    assert signer.check(signed_frame(0, now), t) is None
    for i, behind in enumerate((200_000, 10_000, 1_100, -300_000)):  # 2 s ... 3 s ahead
        assert signer.check(signed_frame(1, now - behind), t + i * 10**8).value == "other_link"
    assert signer.check(signed_frame(0, now + 1), t + 5 * 10**8) is None  # its own link goes on
    assert signer.check(signed_frame(1, now - 200_000, system=2), t) is None  # another sender
    # The bound link silent for more than a second: the next link heard takes over.
    assert signer.check(signed_frame(1, now + 200_000), t + 5 * 10**8 + 10**9 + 1) is None
    assert signer.check(signed_frame(0, now + 2), t + 17 * 10**8).value == "other_link"
    assert signer.counts["other_link"] == 5 and signer.counts["signed_ok"] == 4


@pytest.mark.parametrize("late_ms", [2000, 900, 500, 100, -3000])  # -3000: a link ahead
def test_replayed_link_frames_do_not_restart_the_autopilots_clock(late_ms):
    wire = signed_wire()
    wire.run(3.0)
    assert wire.session.locked
    epochs = wire.poses[-1].epoch
    sniffed = signing_mav(KEY, wall_timestamp(time.time()) - late_ms * 100)
    sniffed.signing.link_id = 1
    boot_ms = int(wire.poses[-1].sim_time_ns / 1e6) - late_ms  # its poses of late_ms ago
    for i in range(50):
        message = sniffed.local_position_ned_encode(boot_ms + 20 * i, 0, 0, -10, 0, 0, 0)
        wire.inject(message.pack(sniffed))
    wire.run(1.0)
    assert wire.session.locked and wire.poses[-1].epoch == epochs
    assert wire.session.codec.stats()["signing"]["other_link"] >= 50


def test_a_host_with_a_key_hears_nothing_from_an_unsigned_autopilot():
    wire = Wire(session_kw={"signer": Signer(KEY)})
    wire.run(3.0)
    assert not wire.session.link_up and not wire.poses
    assert wire.session.codec.stats()["signing"]["unsigned"] > 30


def test_the_key_file_is_32_bytes_or_64_hex_digits_and_a_mistake_is_one_line(tmp_path: Path):
    raw = tmp_path / "raw.key"
    raw.write_bytes(KEY)
    text = tmp_path / "hex.key"
    text.write_text(KEY.hex() + "\n")
    assert read_key_file(raw) == KEY == read_key_file(text)
    short = tmp_path / "short.key"
    short.write_bytes(KEY[:31])
    for path, why in ((short, "expected 32 bytes"), (tmp_path / "none", "cannot read")):
        with pytest.raises(ValueError, match=why) as caught:
            read_key_file(path)
        assert "\n" not in str(caught.value) and KEY.hex() not in str(caught.value)


@pytest.mark.parametrize("content", [b"", b"x" * 33, b"z" * 64])
def test_a_bad_signing_key_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    path = tmp_path / "mavlink.key"
    path.write_bytes(content)
    args = ["run", "--serial", "/dev/null", "--mavlink-url", "udpin:127.0.0.1:0"]
    assert main([*args, "--mavlink-signing-key-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mavlink.signing_key_file" in err
    assert "Traceback" not in err
