"""Progress on stderr for long commands (compile, sweeps, reports, the demo): lines only when
stderr is a terminal, none with --quiet, and stdout the same either way. The terminal is a
real pseudo-terminal (pty) on the child's stderr; stdout stays a pipe."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from labreplay.cli._common import progress_printer
from labreplay.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _labreplay(args: list[str], tty: bool) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of `labreplay ARGS`, stderr on a pty when `tty`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200"}
    command = [sys.executable, "-c", "from labreplay.cli.main import main; main()", *args]
    if not tty:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        return done.stdout, done.stderr, done.returncode
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # read as the child writes, so a full pty buffer never blocks it
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    err = b"".join(chunks).decode().replace("\r\n", "\n")
    return out.decode(), err, proc.returncode


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_printer_is_off_with_quiet_or_without_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    say = progress_printer(False)
    assert say is not None and progress_printer(True) is None
    say("compile: seed 0")
    assert terminal.getvalue() == "compile: seed 0\n"
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress_printer(False) is None


def _in_process(
    args: list[str], tty: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[str, str, int]:
    """(stdout, stderr, exit code) of `labreplay ARGS` run here, stderr a terminal when `tty`
    (the TTY check forced; the pty test below runs the real thing)."""
    from labreplay.cli.main import run

    capsys.readouterr()
    stderr = _Terminal() if tty else io.StringIO()
    with monkeypatch.context() as patch:
        patch.setattr(sys, "stderr", stderr)
        rc = run(args)
    return capsys.readouterr().out, stderr.getvalue(), rc


def test_campaign_compile_says_each_seed_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["campaign", "compile", "--record", "precursor-genome", "--seeds", "0"]
    out_tty, err_tty, rc = _in_process(args, True, monkeypatch, capsys)
    assert rc == 0, err_tty
    first, bound = err_tty.splitlines()  # the seed, then its specs bound (written next)
    assert first == "compile: partition seed 0 (1 of 1)"
    assert re.fullmatch(r"compile: seed 0: 12 specs bound, 780 context rows each \(\d+ s\)", bound)
    out_pipe, err_pipe, rc = _in_process(args, False, monkeypatch, capsys)
    assert rc == 0 and err_pipe == ""
    assert out_pipe == out_tty and "long-1" in out_tty  # stdout is the same either way


def test_conditions_compile_says_each_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["conditions", "compile", "--dataset", "edbo_mitsunobu", "--out"]
    out_tty, err_tty, rc = _in_process(
        [*args, str(tmp_path / "a.jsonl")], True, monkeypatch, capsys
    )
    assert rc == 0, err_tty
    assert "compile: loading edbo_mitsunobu (1 of 1)" in err_tty
    assert "compile: building questions from" in err_tty
    quiet = [*args, str(tmp_path / "q.jsonl"), "--quiet"]
    _, err_quiet, rc = _in_process(quiet, True, monkeypatch, capsys)
    assert rc == 0 and err_quiet == ""
    out_pipe, err_pipe, rc = _in_process(
        [*args, str(tmp_path / "b.jsonl")], False, monkeypatch, capsys
    )
    assert rc == 0 and err_pipe == ""
    assert out_pipe.replace("b.jsonl", "a.jsonl") == out_tty
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def _toy_store(path: Path) -> None:
    """One configsearch run in the shape the suite stores (no data needed)."""
    from tests.report.conftest import add_configsearch_runs

    with Store(path) as store:
        add_configsearch_runs(store)


def test_report_says_each_section_and_the_file(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    _toy_store(store)
    args = ["report", "--store", str(store), "--out"]
    out_tty, err_tty, rc = _labreplay([*args, str(tmp_path / "a")], tty=True)
    assert rc == 0, err_tty
    assert "report: the configsearch section" in err_tty
    assert f"report: wrote {tmp_path / 'a' / 'index.html'}" in err_tty
    out_pipe, err_pipe, rc = _labreplay([*args, str(tmp_path / "b")], tty=False)
    assert rc == 0 and err_pipe == ""
    assert out_pipe.replace(str(tmp_path / "b"), str(tmp_path / "a")) == out_tty
    assert (tmp_path / "a" / "index.html").read_bytes() == (
        tmp_path / "b" / "index.html"
    ).read_bytes()


def test_report_quiet_prints_no_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    _toy_store(store)
    args = ["report", "--store", str(store), "--out", str(tmp_path / "q"), "--quiet"]
    out, err, rc = _in_process(args, True, monkeypatch, capsys)
    assert rc == 0 and err == "" and out.startswith("wrote ")


def test_the_demo_and_the_sweeps_take_quiet() -> None:
    """The demo and the sweep commands accept --quiet (their progress is the same printer or
    the same terminal-only bar; running them here would take minutes)."""
    from labreplay.cli.main import run

    for command in (["configsearch", "sweep"], ["configsearch", "references"]):
        assert run([*command, "--help"]) == 0
    demo = subprocess.run(
        [sys.executable, "-m", "labreplay.demo", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
    )
    assert demo.returncode == 0 and "--quiet" in demo.stdout
