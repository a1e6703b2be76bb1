"""The recorded captures in ``tests/captures`` against their golden outputs, and what they show.

Every ``NAME.mcap`` is replayed offline (in process, as ``gizmo-host replay --offline`` does;
once through the real command) and its output compared line for line with
``NAME.golden.jsonl``: the same bytes, or the same values with floats equal but for their last
bits (``tests.support.goldens.same_value``: the BLAS numpy ships rounds by the CPU's kernels);
``python3 dev.py regen-goldens`` rewrites them on purpose. The goldens
are not only self-consistent: each case's behaviour is asserted against what the emulator and
the stand-in did (the capture's metadata) and the safety rules.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import math
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from gizmo_host.app.offline_replay import OfflineReplay
from gizmo_host.capture.reader import CaptureReader, HostLine
from tests.captures import generate
from tests.support.goldens import changes, first_difference

CAPTURES = Path(generate.__file__).resolve().parent
NAMES = sorted(path.stem for path in CAPTURES.glob("*.mcap"))
MAX_CAPTURE_BYTES = 200 * 1024
MIN_PROCEEDS = 5  # each capture PROCEEDs (a check of every PROCEED first checks some came)
START_S = generate.START_NS / 1e9
CAR_NED_M = (0.0, 0.0)  # the orbit scenario's car: the target every world case locates


@functools.cache
def replayed(name: str) -> bytes:
    reader = CaptureReader(str(CAPTURES / f"{name}.mcap"))
    return b"".join(OfflineReplay(reader.info, reader.path).replay(reader.messages()))


@functools.cache
def lines(name: str) -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(line) for line in replayed(name).splitlines())


def of_type(name: str, kind: str) -> list[dict[str, Any]]:
    return [line for line in lines(name) if line["type"] == kind]


def seconds(message: dict[str, Any]) -> float:
    """A line's host time in seconds since the capture's start."""
    return message.get("host_ns", message.get("host_rx_ns", 0)) / 1e9 - START_S


def final_stats(name: str) -> dict[str, Any]:
    last = lines(name)[-1]
    assert last["type"] == "stats"
    return last


def emulator_counts(name: str) -> dict[str, Any]:
    info = CaptureReader(str(CAPTURES / f"{name}.mcap")).info.capture
    counts: dict[str, Any] = json.loads(info["emulator"])
    return counts


def readable_diff(name: str, want: bytes, got: bytes) -> str:
    """Where the replay departs from the golden: the first differing line's fields, then a
    unified diff of the lines around it."""
    want_lines, got_lines = want.decode().splitlines(), got.decode().splitlines()
    index = first_difference(want, got)
    if index is None:
        index = next(
            (i for i, (a, b) in enumerate(zip(want_lines, got_lines, strict=False)) if a != b),
            min(len(want_lines), len(got_lines)),
        )
    out = [f"{name}: replay differs from {name}.golden.jsonl at line {index + 1}"]
    if index < min(len(want_lines), len(got_lines)):
        fields = _differing_fields(json.loads(want_lines[index]), json.loads(got_lines[index]))
        out += [f"  {path}: golden {a!r}, replay {b!r}" for path, a, b in fields[:12]]
    else:
        out.append(f"  golden has {len(want_lines)} lines, replay {len(got_lines)}")
    diff = difflib.unified_diff(
        want_lines[max(0, index - 2) :],
        got_lines[max(0, index - 2) :],
        "golden",
        "replay",
        lineterm="",
        n=2,
    )
    out += [line[:240] for line in list(diff)[:40]]
    out.append(
        "if the change is intended: python3 dev.py regen-goldens (and say why in the commit)"
    )
    return "\n".join(out)


def _differing_fields(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += _differing_fields(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            f
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for f in _differing_fields(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [(path, a, b)]


# -- the goldens ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_offline_replay_matches_the_golden(name: str) -> None:
    want = (CAPTURES / f"{name}.golden.jsonl").read_bytes()
    got = replayed(name)
    if first_difference(want, got) is not None:
        pytest.fail(readable_diff(name, want, got), pytrace=False)


@pytest.mark.parametrize("name", NAMES)
def test_lines_come_in_time_order(name: str) -> None:
    """The host's timers, the world's and the inputs run in one time order."""
    times = [line.get("host_ns", line.get("host_published_ns")) for line in lines(name)]
    assert times == sorted(times)


@pytest.mark.parametrize("name", NAMES)
def test_a_consumer_honouring_valid_until_never_loses_a_steady_proceed(name: str) -> None:
    """Each PROCEED line is followed by a newer line of its type before it runs out (the host
    renews it), and a line is never valid before it was published."""
    for kind, decision in (("verdict", "decision"), ("world", "verdict")):
        seq = of_type(name, kind)
        assert all(line["valid_until_ns"] >= line["host_ns"] for line in seq)
        pairs = [(a, b) for a, b in itertools.pairwise(seq) if a[decision] == "PROCEED"]
        if kind == "verdict" or seq:  # every capture has verdicts; those with a world, worlds
            assert len(pairs) >= MIN_PROCEEDS, (kind, len(pairs))  # not vacuous
        for line, after in pairs:
            # A steady PROCEED is renewed before it runs out. One whose data stopped (the
            # reset's silence) runs out, and the HOLD that follows may come after: a consumer
            # honouring valid_until_ns holds from that moment already.
            if after[decision] == "PROCEED":
                assert after["host_ns"] <= line["valid_until_ns"], (kind, line["host_ns"])


def test_every_case_has_a_small_capture_and_a_golden() -> None:
    assert set(generate.CASES) | {"live_clean"} <= set(NAMES)
    for name in NAMES:
        assert (CAPTURES / f"{name}.mcap").stat().st_size < MAX_CAPTURE_BYTES, name
        assert (CAPTURES / f"{name}.golden.jsonl").exists(), name


def test_the_readable_diff_names_the_field_that_changed() -> None:
    want = b'{"type":"stats","link":{"frames_ok":90}}\n'
    got = b'{"type":"stats","link":{"frames_ok":89}}\n'
    text = readable_diff("x", want, got)
    assert "line 1" in text and "link.frames_ok: golden 90, replay 89" in text


def test_only_float_rounding_passes_for_the_golden() -> None:
    """A float one ulp off (another CPU's BLAS kernels) is the golden; any other change is
    not: a float beyond rounding, an integer, a verdict, a key, a kind, a line."""
    base = b'{"verdict":"PROCEED","seq":3,"p":[0.1,2.5e-300,-7.0],"n":null}\n'
    one_ulp = (
        f'{{"verdict":"PROCEED","seq":3,"p":[{math.nextafter(0.1, 1)!r},2.5e-300,-7.0],"n":null}}\n'
    )
    assert first_difference(base, one_ulp.encode()) is None
    assert first_difference(base, base) is None
    for changed in (
        b'{"verdict":"PROCEED","seq":3,"p":[0.1000001,2.5e-300,-7.0],"n":null}\n',
        b'{"verdict":"PROCEED","seq":3,"p":[0.1,2.5e-300,-7.01],"n":null}\n',
        b'{"verdict":"PROCEED","seq":4,"p":[0.1,2.5e-300,-7.0],"n":null}\n',
        b'{"verdict":"HOLD","seq":3,"p":[0.1,2.5e-300,-7.0],"n":null}\n',
        b'{"verdict":"PROCEED","seq":3.0,"p":[0.1,2.5e-300,-7.0],"n":null}\n',
        b'{"verdict":"PROCEED","seq":3,"p":[0.1,2.5e-300],"n":null}\n',
        b'{"verdict":"PROCEED","seq":3,"p":[0.1,2.5e-300,-7.0],"n":0}\n',
        b'{"verdict":"PROCEED","seq":3,"p":[0.1,2.5e-300,-7.0]}\n',
        base + base,
    ):
        assert first_difference(base, changed) == (1 if changed == base + base else 0), changed


@pytest.mark.parametrize("name", sorted(generate.CASES))
def test_a_synthetic_capture_is_rebuilt_from_the_repo(name: str, tmp_path: Path) -> None:
    """The generator (emulator, stand-in, capture writer) reproduces the stored capture."""
    rebuilt = tmp_path / f"{name}.mcap"
    rebuilt.write_bytes(generate.build(name))
    stored = CaptureReader(str(CAPTURES / f"{name}.mcap"))
    fresh = CaptureReader(str(rebuilt))
    assert fresh.info == stored.info
    assert list(fresh.messages()) == list(stored.messages())


@pytest.mark.subprocess
def test_replay_is_deterministic_and_the_command_prints_the_golden() -> None:
    """Twice in process, then once through ``gizmo-host replay --offline``: the same bytes,
    and the golden (up to float rounding: ``first_difference``)."""
    name = "udp_loss"
    reader = CaptureReader(str(CAPTURES / f"{name}.mcap"))
    again = b"".join(OfflineReplay(reader.info, reader.path).replay(reader.messages()))
    assert again == replayed(name)
    path = CAPTURES / f"{name}.mcap"
    command = [sys.executable, "-m", "gizmo_host.cli", "replay", str(path), "--offline"]
    done = subprocess.run(command, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == again
    assert first_difference((CAPTURES / f"{name}.golden.jsonl").read_bytes(), done.stdout) is None


def test_a_live_recording_replays_to_what_the_live_host_printed() -> None:
    """``live_clean.mcap`` was written by ``gizmo-host record``: its recorded results are the
    replay's, field for field (but the publication time), and so are its link transitions."""
    reader = CaptureReader(str(CAPTURES / "live_clean.mcap"))
    recorded: dict[str, list[dict[str, Any]]] = {}
    for message in reader.messages():
        if isinstance(message, HostLine):
            recorded.setdefault(message.message_type, []).append(json.loads(message.line))
    assert recorded["result"] and recorded["world"]

    def result(line: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
        return {k: line[k] for k in fields if k not in ("host_published_ns", "age_ms")}

    replayed = of_type("live_clean", "result")
    assert [result(r, mine) for r, mine in zip(replayed, recorded["result"], strict=True)] == [
        result(mine, mine) for mine in recorded["result"]
    ]  # every field it recorded (it predates valid_until_ns)
    ttl_ns = round(reader.info.settings.ttl_ms * 1e6)
    assert reader.info.settings.ttl_ms_by_type == ()  # one TTL for every type
    assert [r["valid_until_ns"] for r in replayed] == [
        (r["host_rx_ns"] if r["host_capture_ns"] is None else r["host_capture_ns"]) + ttl_ns
        for r in recorded["result"]
    ]
    transitions = [(e["state"], e["previous"], e["reason"]) for e in recorded["link"]]
    assert [(e["state"], e["previous"], e["reason"]) for e in of_type("live_clean", "link")] == (
        transitions
    )
    assert changes(recorded["world"]) == changes(of_type("live_clean", "world"))


# -- what each case shows ------------------------------------------------------------------


def test_clean_every_frame_in_order_and_the_car_located() -> None:
    stats = final_stats("clean")
    host = emulator_counts("clean")["host"]
    assert stats["link"]["frames_ok"] == host["frames_ok"] == len(of_type("clean", "result"))
    assert stats["link"]["bytes_discarded"] == 0 and stats["sources"]["1"]["lost"] == 0
    events = [r["sequence_event"] for r in of_type("clean", "result")]
    assert events[0] == "first" and set(events[1:]) == {"in_order"}
    proceeds = [w for w in of_type("clean", "world") if w["verdict"] == "PROCEED"]
    assert proceeds
    for world in proceeds:
        target = next(t for t in world["targets"] if t["key"] == world["selected"])
        assert world["host_ns"] - target["capture_ns"] <= 250e6  # never on stale data
        north, east, _down = target["position_ned_m"]
        assert math.dist((north, east), CAR_NED_M) < 1.5, target["position_ned_m"]


def test_garbage_every_byte_accounted_as_the_emulator_counted() -> None:
    link = final_stats("garbage")["link"]
    host = emulator_counts("garbage")["host"]
    assert link["crc_errors"] + link["header_errors"] > 0
    assert link["bytes_in"] == 35 * link["frames_ok"] + link["bytes_discarded"]
    assert (link["frames_ok"], link["bytes_discarded"]) == (
        host["frames_ok"],
        host["bytes_discarded"],
    )
    assert final_stats("garbage")["sources"]["1"]["lost"] == host["lost"] > 0


def test_wrap_counts_no_gap() -> None:
    sequences = [r["result"]["sequence"] for r in of_type("wrap", "result")]
    wrap = sequences.index(0)
    assert sequences[wrap - 1] == 65535
    assert of_type("wrap", "result")[wrap]["sequence_event"] == "in_order"
    source = final_stats("wrap")["sources"]["1"]
    assert (source["lost"], source["discontinuities"], source["resets"]) == (0, 0, 0)


def test_reset_holds_device_reset_then_recovers_once_the_new_epoch_locks() -> None:
    """``[store] reset_hold_ms`` is 0 by default (issue 29): the reset's own verdict says
    ``device_reset``, then the new clock epoch holds ``clock_not_locked`` until it locks (three
    frames over 66 ms: the skew is the board's oscillator's, kept), then PROCEED."""
    reset = next(r for r in of_type("reset", "result") if r["sequence_event"] == "reset")
    verdicts = of_type("reset", "verdict")
    at_reset = next(v for v in verdicts if v["host_ns"] >= reset["host_rx_ns"])
    assert at_reset["decision"] == "HOLD" and "device_reset" in at_reset["reasons"]
    after = [v for v in verdicts if v["host_ns"] >= reset["host_rx_ns"]]
    first = next(v for v in after if v["decision"] == "PROCEED")
    held = [v for v in verdicts if reset["host_rx_ns"] <= v["host_ns"] < first["host_ns"]]
    assert all("clock_not_locked" in v["reasons"] for v in held)
    assert 0.06e9 <= first["host_ns"] - reset["host_rx_ns"] < 0.2e9
    assert final_stats("reset")["sources"]["1"]["resets"] == 1


def test_unplug_goes_down_and_up_and_never_proceeds_on_old_data() -> None:
    links = of_type("unplug", "link")
    states = [e["state"] for e in links]
    down = next(e for e in links if e["reason"].startswith("disconnected"))
    up_again = next(e for e in links[states.index("DOWN") :] if e["state"] == "UP")
    assert up_again["host_ns"] > down["host_ns"]
    first_after = {
        r["result"]["sequence"]: r["host_rx_ns"]
        for r in of_type("unplug", "result")
        if r["host_rx_ns"] >= up_again["host_ns"]
    }
    after_down = [
        v
        for v in of_type("unplug", "verdict")
        if v["host_ns"] >= down["host_ns"] and v["decision"] == "PROCEED"
    ]
    assert len(after_down) >= 2  # not vacuous: the replugged board PROCEEDs again
    for verdict in after_down:
        # Only data read after the reconnection, and once the new clock epoch locked (the skew
        # kept: three frames over 66 ms).
        assert verdict["target"]["sequence"] in first_after
        assert verdict["host_ns"] - up_again["host_ns"] >= 0.06e9
    link = final_stats("unplug")["link"]
    assert (link["disconnects"], link["open_failures"]) == (1, 3)
    assert any(v["decision"] == "PROCEED" for v in of_type("unplug", "verdict")[-5:])


def test_udp_loss_holds_for_the_pose_gap_and_counts_reordering() -> None:
    world = of_type("udp_loss", "world")
    gap = [w for w in world if 1.5 <= seconds(w) <= 1.85]
    reasons = {r for w in gap for r in w["reasons"]}
    assert reasons & {"pose_gap", "pose_stale"}
    assert all(w["verdict"] == "HOLD" for w in gap if w["reasons"])
    assert any(w["verdict"] == "PROCEED" for w in world if seconds(w) < 1.5)
    assert any(w["verdict"] == "PROCEED" for w in world if seconds(w) > 1.85)
    rflysim = final_stats("udp_loss")["world"]["rflysim"]
    assert rflysim["sim_clocks"]["state"]["reordered"] > 0
    recorded = sum(1 for m in _messages("udp_loss") if type(m).__name__ == "Datagram")
    assert rflysim["receivers"]["rfly-state-30101"]["datagrams"] == recorded


def _messages(name: str) -> list[Any]:
    return list(CaptureReader(str(CAPTURES / f"{name}.mcap")).messages())


def test_sim_jump_flagged_starts_a_new_pose_epoch() -> None:
    world = of_type("sim_jump", "world")
    epochs = [w["vehicle"]["epoch"] for w in world if w["vehicle"] is not None]
    assert epochs[0] == 0 and epochs[-1] == 1 and sorted(epochs) == epochs
    clock = final_stats("sim_jump")["world"]["rflysim"]["sim_clocks"]["odometry"]
    assert (clock["discontinuities"], clock["epoch"]) == (1, 1)
    located = [w for w in world if w["verdict"] == "PROCEED" and w["vehicle"]["epoch"] == 1]
    for snapshot in located:  # the new epoch's poses still place the car right
        target = next(t for t in snapshot["targets"] if t["key"] == snapshot["selected"])
        assert math.dist(target["position_ned_m"][:2], CAR_NED_M) < 1.5


def test_sim_restart_unflagged_holds_while_the_new_epoch_locks_then_proceeds_in_it() -> None:
    """The sim time falls back 50 s: a restart, a new clock epoch whose mapping must settle
    for the lock period (250 ms) before its poses count (clock_not_locked), then PROCEED on
    the new epoch's poses (it held clock_jump for a whole second before issue 17)."""
    world = of_type("sim_restart", "world")
    first_go = next(w for w in world if w["verdict"] == "PROCEED")
    restart = next(
        w for w in world if w["seq"] > first_go["seq"] and "clock_not_locked" in w["reasons"]
    )
    assert restart["verdict"] == "HOLD"
    held = [w for w in world if 0 <= w["host_ns"] - restart["host_ns"] < 250_000_000]
    assert held and all(w["verdict"] == "HOLD" for w in held)
    back = next(w for w in world if w["seq"] > restart["seq"] and w["verdict"] == "PROCEED")
    assert back["vehicle"]["epoch"] == 1 and back["host_ns"] - restart["host_ns"] < 600_000_000
    assert final_stats("sim_restart")["world"]["rflysim"]["sim_clocks"]["state"]["resets"] == 1
