"""The command line as a user meets it: help, the source list, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from labreplay import __version__
from labreplay.records import manifest

from .conftest import CliRunner


def test_top_level_help_exits_0(cli: CliRunner) -> None:
    done = cli("--help")
    assert done.returncode == 0, done.stderr
    assert "data" in done.stdout and "export" in done.stdout


def test_data_help_exits_0(cli: CliRunner) -> None:
    done = cli("data", "--help")
    assert done.returncode == 0, done.stderr
    for command in ("list", "verify", "fetch"):
        assert command in done.stdout


def test_version(cli: CliRunner) -> None:
    done = cli("version")
    assert (done.returncode, done.stdout.strip()) == (0, __version__)


def test_data_list_json_lists_every_source(cli: CliRunner) -> None:
    done = cli("data", "list", "--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [row["name"] for row in listed] == manifest.source_names()
    for row in listed:
        source = manifest.get_source(row["name"])
        assert row["files"] == len(source.files) > 0
        assert row["bytes"] == sum(f.size for f in source.files)
        assert row["license"] and row["canonical_url"] and row["citation"]


def test_data_list_table(cli: CliRunner) -> None:
    done = cli("data", "list")
    assert done.returncode == 0, done.stderr
    for name in manifest.source_names():
        assert name in done.stdout


def test_data_list_needs_no_data_dir(cli: CliRunner, tmp_path: Path) -> None:
    done = cli("data", "list", "--json", env={"LABREPLAY_DATA_DIR": str(tmp_path / "nowhere")})
    assert done.returncode == 0, done.stderr


def test_usage_errors_exit_2_without_a_traceback(cli: CliRunner) -> None:
    for args in (["data", "verify", "--no-such-option"], ["no-such-command"]):
        done = cli(*args)
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr
        assert "No such" in done.stderr
