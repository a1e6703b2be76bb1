"""The gizmo-host command line: every subcommand's --help, and the demo end to end."""

import json
import os
from pathlib import Path

import pytest

from gizmo_host.cli.main import SUBCOMMANDS, main


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert command in capsys.readouterr().out


@pytest.mark.parametrize(
    "words",
    [["run", "--serial", "/dev/null", "--baud", "0x10"], ["run", "--nonsense"], ["nonsense"], []],
)
def test_an_argument_mistake_is_one_line_and_status_2(words, capsys):
    # Red team: argparse printed its 22-line usage before the error.
    with pytest.raises(SystemExit) as info:
        main(words)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured.err
    assert "error:" in captured.err and "usage:" not in captured.err


@pytest.mark.parametrize(
    "words",
    [
        ["replay", "{fifo}", "--offline"],  # it blocked, waiting for a writer
        ["replay", "{tmp}/missing.mcap", "--offline"],
        ["replay", "{tmp}", "--offline"],
        ["record", "--serial", "/dev/null", "-o", "{tmp}/no/x.mcap"],
        ["record", "--serial", "/dev/null", "-o", "{tmp}"],
        [
            "record",
            "--serial",
            "/dev/null",
            "-o",
            "{tmp}/x.mcap",
            "--bind",
            "foo",
            "--udp-port",
            "5",
        ],
        ["record", "--serial", "/dev/null", "-o", "{tmp}/x.mcap", "--bind", "127.0.0.1"],  # idle
        ["emulate", "--link", "{tmp}/no/link"],
        ["emulate", "--device", "{tmp}/no-tty"],
        ["emulate", "--stats", "{tmp}/no/s.json", "--duration", "0.1", "--no-wait-reader"],
        ["certify", "--scenarios", "orbit", "--seeds", "1", "--out", "{tmp}/file/report"],
        ["run", "--serial", "/dev/null", "--unix-socket", "{tmp}/no/s.sock"],
        ["run", "--serial", "/dev/null", "--unix-socket", "{tmp}"],
        ["run", "--serial", "/dev/null", "--udp", "256.1.1.1:9000"],  # it failed at run time
    ],
)
def test_a_path_mistake_is_one_line_and_status_2_before_any_work(words, tmp_path, capsys):
    # Red team: these exited 1 with an errno, some after the work (certify after its runs),
    # and a FIFO blocked replay for good.
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("")  # a file where a directory is needed
    filled = [w.format(tmp=tmp_path, fifo=tmp_path / "fifo") for w in words]
    assert main(filled) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1, captured.err
    named = str(tmp_path), "--bind", "--udp"
    assert any(name in captured.err for name in named), captured.err


def test_the_top_level_help_names_every_subcommand_with_its_summary(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps long lines
    for command, (_, summary) in SUBCOMMANDS.items():
        assert command in out and " ".join(summary.split()) in out, command


def test_demo_recovers_every_intact_frame(capsys):
    assert main(["demo", "--protocol"]) == 0
    out = capsys.readouterr().out
    assert "tracked=true lost=false id=1" in out
    assert "batch decoder agrees: yes" in out


def test_demo_json_lines(capsys):
    assert main(["demo", "--protocol", "--json", "--frames", "60", "--seed", "11"]) == 0
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert objects[0]["type"] == "result" and objects[0]["sequence"] == 42
    stats = objects[-1]
    assert stats["type"] == "stats"
    results = [o for o in objects[1:] if o["type"] == "result"]
    assert stats["frames_ok"] == len(results) > 40


def test_public_names_resolve_and_the_live_link_loads_lazily():
    import subprocess
    import sys

    import gizmo_host

    for name in gizmo_host.__all__:
        assert getattr(gizmo_host, name) is not None
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = gizmo_host.no_such_name
    probe = "import sys, gizmo_host; gizmo_host.VisionResult; print('serialx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_offline_replay_opens_no_port_and_never_imports_serialx():
    """``replay --offline`` drives the serial link without a port: serialx (a tenth of its
    start-up) is imported only when a port is opened."""
    import subprocess
    import sys

    capture = Path(__file__).parent / "captures" / "clean.mcap"
    probe = (
        "import sys, io; from gizmo_host.cli.main import main\n"
        "sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
        f"code = main(['replay', {str(capture)!r}, '--offline'])\n"
        "print(code, 'serialx' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stderr.split()[-2:] == ["0", "False"]


def _threads_after_replay(env: dict[str, str]) -> str:
    """The exit status and the process's threads (the kernel's count) after ``replay``."""
    import subprocess
    import sys

    capture = Path(__file__).parent / "captures" / "clean.mcap"
    probe = (
        "import os, sys, io; from gizmo_host.cli.main import main\n"
        "sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
        f"code = main(['replay', {str(capture)!r}, '--offline'])\n"
        "print(code, len(os.listdir('/proc/self/task')), file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env
    )
    return out.stderr.splitlines()[-1]


@pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
    reason="needs Linux's /proc and two CPUs (OpenBLAS starts a thread a CPU)",
)
def test_a_command_runs_blas_on_one_thread_unless_told_otherwise():
    """The world model's matrices are 7x7: an OpenBLAS worker thread only spins between
    calls. A command starts numpy's OpenBLAS with one thread (no worker: the process's only
    thread), unless ``OPENBLAS_NUM_THREADS`` says otherwise."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _threads_after_replay(env) == "0 1"
    assert _threads_after_replay({**env, "OPENBLAS_NUM_THREADS": "2"}) == "0 2"


def _imported_rigs(*commands: str) -> list[str]:
    """The simulator modules imported by parsing ``commands`` in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys; from gizmo_host.cli.main import main; from contextlib import suppress\n"
        f"for c in {commands!r}:\n"
        "    with suppress(SystemExit): main([c, '--help'])\n"
        "prefixes = ('gizmo_host.rigs.certify', 'gizmo_host.rigs.demo', 'gizmo_host.rigs.rflysim',"
        " 'gizmo_host.rigs.autopilot')\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(prefixes))), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stderr.split()


def test_the_live_commands_start_without_the_simulators():
    """``run``, ``record``, ``replay`` and ``doctor`` never import certify, the demo or the
    stand-ins (issue 31: a third of every start-up); the command that needs them does."""
    assert _imported_rigs("run", "record", "replay", "doctor") == []
    assert "gizmo_host.rigs.certify.matrix" in _imported_rigs("certify")
