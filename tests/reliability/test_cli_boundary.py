"""One error boundary: every bad input named in one line, exit 2, no traceback, nothing written.

The CLI runs in-process (the exit code and output a user sees); the repository hook's smoke
commands run as real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from labreplay._hashing import canonical_json
from labreplay.compile.spec import EnvironmentSpec, spec_from_text
from labreplay.errors import DataError, SpecError
from labreplay.store.sqlite import Store

from .conftest import assert_one_line_error, digest, run_cli, run_cli_in_process


@pytest.fixture(scope="module")
def specs_dir(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    return copy_campaign_specs(tmp_path_factory.mktemp("specs") / "specs")


def _copy(specs_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "specs"
    shutil.copytree(specs_dir, target)
    return target


def _first_spec(specs: Path) -> Path:
    index = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    return specs / index["assignments"][0]["file"]


# --------------------------------------------------------------------------- option values
@pytest.mark.parametrize(
    "argv",
    [
        ("campaign", "compile", "--seed", "-1"),
        ("campaign", "compile", "--context-detail", "bogus"),
        ("configsearch", "run", "--seed", "-1"),
        ("data", "fetch", "precursor-genome", "--mirror", "not a url"),
        ("data", "fetch", "precursor-genome", "--timeout", "-1"),
        ("campaign", "run", "--specs", "{specs}", "--store", "{tmp}/s.sqlite", "--seed", "-1"),
        (
            "campaign",
            "run",
            "--specs",
            "{specs}",
            "--store",
            "{tmp}/s.sqlite",
            "--agent",
            "openai:x",
            "--base-url",
            "not a url",
        ),
        ("campaign", "run", "--specs", "{specs}", "--store", "{tmp}/s.sqlite", "--agent", "nope"),
        (
            "campaign",
            "no-such-command",
        ),
        ("export", "--store", "{tmp}/s.sqlite", "--out", "{tmp}/o", "--formats", "xml"),
        (
            "configsearch",
            "run",
            "--task",
            "band_gap",
            "--models",
            "nope",
            "--store",
            "{tmp}/s.sqlite",
        ),
        ("configsearch", "run", "--task", "band_gap", "--seeds", "0", "--store", "{tmp}/s.sqlite"),
        ("configsearch", "run", "--task", "band_gap", "--method", "x", "--store", "{tmp}/s.sqlite"),
    ],
    ids=lambda a: " ".join(a)[:60],
)
def test_bad_option_values_are_one_line(
    argv: tuple[str, ...], specs_dir: Path, tmp_path: Path
) -> None:
    args = [a.format(specs=specs_dir, tmp=tmp_path) for a in argv]
    assert_one_line_error(run_cli_in_process(*args))
    assert not (tmp_path / "s.sqlite").exists()  # refused before the store was created
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["compile", "export", "report"])
def test_out_that_is_an_existing_file(command: str, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    out.write_text("mine", encoding="utf-8")
    store = tmp_path / "s.sqlite"
    with Store(store):
        pass
    argv = {
        "compile": ["campaign", "compile", "--out", str(out)],
        "export": ["export", "--store", str(store), "--out", str(out)],
        "report": ["report", "--store", str(store), "--out", str(out)],
    }[command]
    line = assert_one_line_error(run_cli_in_process(*argv))
    assert str(out) in line
    assert out.read_text(encoding="utf-8") == "mine"


# --------------------------------------------------------------------------- file contents
@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe not utf-8", b"null", b"5", b"[]", b'{"suite": 1}', b"", b'{"body": '],
    ids=["invalid-utf8", "null", "number", "list", "wrong-types", "empty", "truncated"],
)
def test_bad_spec_file_is_one_line_and_opens_no_run(
    content: bytes, specs_dir: Path, tmp_path: Path
) -> None:
    specs = _copy(specs_dir, tmp_path)
    spec_file = _first_spec(specs)
    spec_file.write_bytes(content)
    store = tmp_path / "s.sqlite"
    line = assert_one_line_error(
        run_cli_in_process(
            "campaign", "run", "--specs", str(specs), "--store", str(store), "--agent", "random"
        )
    )
    assert spec_file.name in line
    assert spec_file.read_bytes() == content
    if store.exists():
        with Store(store, readonly=True) as db:
            assert db.runs() == []


@pytest.mark.parametrize("content", [b"", b'{"assignments": [', b"null", b'{"assignments": 3}'])
def test_bad_index_json(content: bytes, specs_dir: Path, tmp_path: Path) -> None:
    specs = _copy(specs_dir, tmp_path)
    (specs / "index.json").write_bytes(content)
    line = assert_one_line_error(
        run_cli_in_process(
            "campaign", "run", "--specs", str(specs), "--store", str(tmp_path / "s.sqlite")
        )
    )
    assert "index.json" in line


def test_self_consistent_spec_missing_budgets(specs_dir: Path, tmp_path: Path) -> None:
    specs = _copy(specs_dir, tmp_path)
    spec_file = _first_spec(specs)
    data = json.loads(spec_file.read_text(encoding="utf-8"))
    body = {k: v for k, v in data["body"].items() if k != "budgets"}
    spec = EnvironmentSpec(data["suite"], data["protocol"], data["version"], data["spec_id"], body)
    spec_file.write_text(spec.to_file_text() + "\n", encoding="utf-8")
    index_path = specs / "index.json"
    index = json.loads(index_path.read_text(encoding="utf-8"))
    index["assignments"][0]["spec_hash"] = spec.spec_hash
    index_path.write_text(json.dumps(index), encoding="utf-8")
    store = tmp_path / "s.sqlite"
    line = assert_one_line_error(
        run_cli_in_process(
            "campaign", "run", "--specs", str(specs), "--store", str(store), "--agent", "random"
        )
    )
    assert "budgets" in line
    if store.exists():
        with Store(store, readonly=True) as db:
            assert [r for r in db.runs() if r.status == "running"] == []


def test_conditions_files_not_utf8(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_bytes(b'{"id": "\xff"}\n')
    before = digest(bad)
    line = assert_one_line_error(
        run_cli_in_process(
            "conditions", "score", "--questions", str(bad), "--predictions", str(bad)
        )
    )
    assert str(bad) in line
    assert digest(bad) == before


def test_leaderboard_on_a_store_without_campaign_runs(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with Store(store):
        pass
    line = assert_one_line_error(
        run_cli_in_process("campaign", "leaderboard", "--store", str(store))
    )
    assert "no campaign runs" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_export_into_unwritable_directory(tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    with Store(store):
        pass
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert_one_line_error(
            run_cli_in_process("export", "--store", str(store), "--out", str(locked / "o"))
        )
    finally:
        locked.chmod(0o755)


# --------------------------------------------------------------------------- Python API
def test_python_api_takes_str_paths(specs_dir: Path, tmp_path: Path) -> None:
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.conditions.questions import load_questions

    assert load_specs(str(specs_dir))
    with pytest.raises(DataError, match="not found"):
        load_questions(str(tmp_path / "none.jsonl"))


@pytest.mark.parametrize("text", ["5", "null", "[]", '"x"', canonical_json({"suite": 1})])
def test_spec_from_text_wrong_shapes(text: str) -> None:
    with pytest.raises(SpecError):
        spec_from_text(text)


def test_before_stop_smoke_commands(tmp_path: Path) -> None:
    """The repository hook's three smoke commands: one line and exit 2 each."""
    junk = tmp_path / "x.sqlite"
    junk.write_bytes(b"not sqlite")
    none = tmp_path / "none.jsonl"
    assert_one_line_error(
        run_cli("campaign", "compile", "--seed", "-1", "--out", str(tmp_path / "o"))
    )
    assert_one_line_error(run_cli("campaign", "leaderboard", "--store", str(junk)))
    assert_one_line_error(
        run_cli("conditions", "score", "--questions", str(none), "--predictions", str(none))
    )
    assert junk.read_bytes() == b"not sqlite"
