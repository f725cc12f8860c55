"""Start-up: `labreplay --help` and `labreplay version` import no suite and none of the heavy
libraries the suites use; a suite's group is imported when a command line names it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import labreplay
from labreplay.cli import main as cli_main
from labreplay.suite import suite_summaries

HEAVY = ("numpy", "pandas", "torch", "sklearn", "scipy", "pydantic")

# Runs one command line in a fresh interpreter and prints what it imported.
PROBE = """
import contextlib, io, json, sys
from labreplay.cli.main import run
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = run(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _imports(*argv: str) -> tuple[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout)
    assert found["code"] == 0, done.stderr
    return str(found["out"]), list(found["modules"])


def _heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


@pytest.mark.parametrize("argv", [("--help",), ("version",), ("version", "--help")])
def test_help_and_version_import_no_suite_and_no_heavy_library(argv: tuple[str, ...]) -> None:
    out, modules = _imports(*argv)
    assert [m for m in modules if m.startswith("labreplay.suites")] == []
    assert _heavy(modules) == []
    if argv == ("version",):
        assert out.strip() == labreplay.__version__
    else:
        assert "Usage" in out


def test_top_level_help_lists_every_suite_with_its_line() -> None:
    out, _ = _imports("--help")
    for name in labreplay.list_suites():
        assert name in out
    assert "Reaction-condition questions" in out or "conditions suite" in out
    assert "import" in out and "report" in out


@pytest.mark.parametrize("suite", labreplay.list_suites())
def test_a_suite_help_imports_that_suite_only(suite: str) -> None:
    out, modules = _imports(suite, "--help")
    assert "run" in out
    loaded = {m.split(".")[2] for m in modules if m.startswith("labreplay.suites.")}
    assert loaded == {suite}
    assert [m for m in _heavy(modules) if m != "pydantic"] == []


def test_a_late_group_runs_in_process_and_a_typo_is_still_suggested(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_main.run(["campaign", "--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert cli_main.run(["campain"]) == 2
    assert "Did you mean 'campaign'" in capsys.readouterr().err


def test_a_suite_line_is_its_package_docstring_read_without_importing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "twosuites-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: twosuites\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[labreplay.suites]\nbrine = brinepkg.suite:SUITE\nbare = baremod:SUITE\n"
    )
    (tmp_path / "brinepkg").mkdir()
    (tmp_path / "brinepkg" / "__init__.py").write_text(
        '"""Brine suite: salt\n    screens.\n\nMore detail."""\nraise RuntimeError("imported")\n'
    )
    (tmp_path / "baremod.py").write_text('raise RuntimeError("imported")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    lines = suite_summaries()
    assert lines["brine"] == "Brine suite: salt screens."
    assert lines["bare"] == "The bare suite."
    assert "brinepkg" not in sys.modules and "baremod" not in sys.modules
    assert list(lines) == sorted(lines)
