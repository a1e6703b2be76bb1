"""gizmo-decode / tools/decode_vision_result.py, run in-process through main() and once for real."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gizmo_host import VisionResult
from gizmo_host.cli.decode import main

ROOT = Path(__file__).resolve().parents[3]
SPEC_HEX = (
    "A5 47 01 60 00 2A 00 18 00 01 01 2A 00 E8 03 00 00 57 05 0C 00 83 FF 36 00 9A 01 68 "
    "01 01 00 00 00 9C D9"
)


def run_tool(*argv, stdin=""):
    out, err = io.StringIO(), io.StringIO()
    stdin_stream = io.TextIOWrapper(
        io.BytesIO(stdin if isinstance(stdin, bytes) else stdin.encode())
    )
    code = main(list(argv), stdin=stdin_stream, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_spec_example_through_the_documented_script():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "decode_vision_result.py"), SPEC_HEX],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(proc.stdout)
    assert report["tracked"] is True and report["lost"] is False and report["id"] == 1
    assert report["crc"] == {"received": "0xd99c", "computed": "0xd99c", "ok": True}
    assert report["interpretation"]["kind"] == "color_blob"
    assert report["interpretation"]["color"] == "red"


@pytest.mark.parametrize(
    "text", [SPEC_HEX.lower(), SPEC_HEX.replace(" ", ""), "  " + SPEC_HEX.replace(" ", "\t") + "\n"]
)
def test_hex_spacing_and_case_do_not_matter(text):
    code, out, _ = run_tool(text)
    assert code == 0 and json.loads(out)["sequence"] == 42


def test_every_raw_field_is_printed():
    code, out, _ = run_tool(SPEC_HEX)
    report = json.loads(out)
    assert code == 0
    assert set(VisionResult._fields) <= report.keys()
    assert report["x"] == -125 and report["age_ms"] == 12 and report["flags"] == 5


def _hex(frame: bytes) -> str:
    return frame.hex(" ")


SPEC = bytes.fromhex(SPEC_HEX)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("A5 47 0", ["odd number of hex digits"]),
        ("A5 47 0G", ["'G'", "not a hex digit"]),
        (_hex(SPEC[:30]), ["frame length", "expected 35", "got 30"]),
        (_hex(SPEC + b"\x00"), ["frame length", "got 36"]),
        (_hex(b"\xa6" + SPEC[1:]), ["sync", "a6 47"]),
        (_hex(SPEC[:2] + b"\x09" + SPEC[3:]), ["version", "got 9"]),
        (_hex(SPEC[:3] + b"\x10" + SPEC[4:]), ["msg_type", "0x10"]),
        (_hex(SPEC[:33] + b"\x00\x00"), ["crc", "expected 0xd99c", "received 0x0000"]),
    ],
)
def test_bad_input_exits_non_zero_with_one_clear_line(text, words):
    code, out, err = run_tool(text)
    assert code == 1 and out == ""
    assert err.count("\n") == 1
    for word in words:
        assert word in err


def test_allow_bad_crc_prints_the_frame_with_crc_not_ok():
    code, out, _ = run_tool("--allow-bad-crc", _hex(SPEC[:33] + b"\x00\x00"))
    assert code == 0 and json.loads(out)["crc"]["ok"] is False


def test_stdin_lines_decode_each_frame_and_report_bad_lines():
    other = VisionResult(sequence=7, result_type=5, id=10).encode()
    lines = f"{SPEC_HEX}\n\n# comment\nzz\n{_hex(other)}\n"
    code, out, err = run_tool(stdin=lines)
    reports = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert [r["sequence"] for r in reports] == [42, 7]
    assert reports[1]["interpretation"] == {
        "kind": "detection",
        "label": "face",
        "box": {"center_x": 0, "center_y": 0, "width": 0, "height": 0},
    }
    assert err.startswith("line 4:") and err.count("\n") == 1


def test_binary_capture_prints_frames_and_counter_summary(tmp_path):
    frames = [VisionResult(sequence=n).encode() for n in range(5)]
    capture = tmp_path / "capture.bin"
    capture.write_bytes(b"\x00\xa5\x47" + b"noise".join(frames) + frames[0][:10])
    code, out, err = run_tool("--binary", str(capture))
    assert code == 0
    assert [json.loads(line)["sequence"] for line in out.splitlines()] == list(range(5))
    summary = json.loads(err)
    assert summary["type"] == "stats" and summary["frames_ok"] == 5
    assert summary["bytes_discarded"] == 3 + 4 * 5 and summary["bytes_pending"] == 10


def test_binary_capture_from_stdin():
    code, out, err = run_tool("--binary", "-", stdin=SPEC * 3)
    assert code == 0 and len(out.splitlines()) == 3 and json.loads(err)["frames_ok"] == 3


def test_missing_capture_file_is_a_clear_error(tmp_path):
    code, _, err = run_tool("--binary", str(tmp_path / "nope.bin"))
    assert code == 2 and "nope.bin: No such file" in err and err.count("\n") == 1


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    """rt59: ``--binary FIFO`` blocked in open() for good, and a device read for ever."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run_tool("--binary", str(fifo))
    assert code == 2 and "expected a regular file" in err and err.count("\n") == 1


def test_a_line_longer_than_any_frame_is_one_error_not_the_whole_input_in_memory():
    """rt59: ``gizmo-decode < /dev/zero`` grew to 4 GB and raised MemoryError. A line is read
    at most a little over 1,024 characters at a time; a longer one is reported and skipped."""
    code, out, err = run_tool(stdin="0" * 5_000_000 + f"\n{SPEC_HEX}\n")
    assert code == 1
    assert [json.loads(line)["sequence"] for line in out.splitlines()] == [42]
    assert err == "line 1: expected at most 1024 characters\n"
