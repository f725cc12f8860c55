"""The papers side by side: every suite quotes its paper's figures with where each stands,
names the BibTeX entry `labreplay cite` prints, declares why its figures differ, and gives
commands (on the generated docs page) that the CLI accepts as written."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from labreplay import cite
from labreplay.cli.main import run
from labreplay.report.papers import PaperComparison, paper_html
from labreplay.suites.campaign.papers import PAPER as CAMPAIGN
from labreplay.suites.conditions.papers import PAPER as CONDITIONS
from labreplay.suites.configsearch.papers import PAPER as CONFIGSEARCH

ROOT = Path(__file__).resolve().parents[2]
PAPERS = [CAMPAIGN, CONDITIONS, CONFIGSEARCH]


@pytest.mark.parametrize("paper", PAPERS, ids=lambda p: p.suite)
def test_a_paper_quotes_sourced_figures_and_declares_differences(paper) -> None:
    assert len(paper.published) >= 5
    assert all(p.figure and p.value and p.source for p in paper.published)
    assert len(paper.differences) >= 3
    assert cite.SUITE_PAPERS[paper.suite][0] == paper.bibtex_key


@pytest.mark.parametrize("paper", PAPERS, ids=lambda p: p.suite)
def test_the_commands_given_are_accepted_by_the_cli(
    paper, capsys: pytest.CaptureFixture[str]
) -> None:
    for line in paper.command.splitlines():
        words = shlex.split(line)
        assert words[0] == "labreplay"
        command = [w for w in words[1:3] if not w.startswith("-")]
        assert run([*command, "--help"]) == 0, line
        helptext = capsys.readouterr().out
        for option in (w for w in words if w.startswith("--")):
            assert option in helptext, f"{line}: {option}"


def test_without_runs_the_block_gives_the_command_and_escapes_text() -> None:
    html = paper_html(PaperComparison(CONDITIONS))
    assert 'id="conditions-paper-published"' in html
    assert 'id="conditions-paper-here"' not in html  # never an empty table
    assert "labreplay conditions run" in html
    assert "Li, H. &amp; Gao, W." in paper_html(PaperComparison(CONFIGSEARCH))


def test_the_docs_page_is_generated_from_the_same_constants() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from papers_page import render
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    page = render()
    for paper in PAPERS:
        assert f"## {paper.suite}: " in page
        for p in paper.published:
            assert f"| {p.figure} | {p.value.replace('|', chr(92) + '|')} |" in page
        assert paper.command in page


def test_campaign_comparison_names_incomplete_systems_as_the_board_lists_them() -> None:
    """The leaderboard lists an incomplete system by name (a run with a fallback, e.g. an LLM
    whose endpoint failed): the paper block names it instead of failing the report."""
    from labreplay.suites.campaign.papers import comparison

    board = {
        "tables": {"long": {"assignments": []}},
        "rows": [],
        "references": [],
        "assignments": ["short-1"],
        "incomplete": ["openai:stub"],
    }
    block = comparison(board)
    assert any("Incomplete on this board, not shown: openai:stub." in n for n in block.notes)
