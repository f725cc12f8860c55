from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from labreplay.suites.configsearch.cli import app


def test_space_json_lists_858_points() -> None:
    result = CliRunner().invoke(app, ["space", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["size"] == 858 and len(body["points"]) == 858


def test_run_and_report_commands(data_dir: Path, cache_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "cli.sqlite"
    common = ["--task", "band_gap", "--store", str(store), "--n-total", "200", "--n-ood", "60"]
    result = CliRunner().invoke(
        app,
        [
            "run",
            *common,
            "--models",
            "rf-scm",
            "--method",
            "random",
            "--budget",
            "1",
            "--init",
            "1",
            "--seed",
            "20",  # its first random point, (0, 4, 10), reuses the session cache
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)
    assert run["steps"] == 1 and run["evaluations"] == 1 and "steps_to_target" not in run
    report = CliRunner().invoke(
        app, ["report", "--store", str(store), "--out", str(tmp_path / "r"), "--json"]
    )
    assert report.exit_code == 0, report.output
    assert json.loads(report.output)["searches"][0]["method"] == "random"
    from labreplay.sdk.cli import console

    before = console.width
    console.width = 80  # as in an 80-column terminal or COLUMNS=80
    try:
        text = CliRunner().invoke(
            app, ["report", "--store", str(store), "--out", str(tmp_path / "r80")]
        )
    finally:
        console.width = before
    assert text.exit_code == 0, text.output
    rows = [line for line in text.output.splitlines() if line.startswith("|")]
    assert rows and all(line.rstrip().endswith("|") for line in rows)  # no row broken in two
    assert max(len(line) for line in rows) > 80  # rows wider than the output stay whole
    # every system name stays whole in its cell (the method and model of the run)
    cells = {cell.strip() for line in rows for cell in line.strip("|").split("|")}
    assert "random" in cells, cells


def test_cli_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "labreplay.cli.main",
            "configsearch",
            "run",
            "--task",
            "nope",
            "--store",
            str(tmp_path / "x.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "unknown configsearch task 'nope'" in done.stderr


def test_report_without_a_store_is_one_line_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", "report"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # the default store ./configsearch.sqlite does not exist here
    )
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "configsearch.sqlite does not exist" in lines[0]
    assert not (tmp_path / "configsearch.sqlite").exists()
