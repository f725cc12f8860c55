"""The report of a store holding all three suites, with real configsearch runs (a small sweep and
one bo and one random search, whose scores carry every configsearch metric key): every column
header is words, not a snake_case key; every number in a table has at most four decimals and
no exponent (the report prints three, as the terminal does); a metric no row has is left out;
and both campaign boards are drawn."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from tests.report.conftest import parse_html

from labreplay.report import build_report
from labreplay.store import Store

SYNTHETIC = "c" * 64  # the spec hash of `three_suite_store`'s hand-made configsearch runs
SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")
# a decimal with five or more decimals, or a number in exponent form (6.134e-08)
UNREADABLE = re.compile(r"^[+-]?\d*\.\d{5,}%?$|^[+-]?\d+(?:\.\d+)?e[+-]\d+$")


def unreadable(text: str) -> list[str]:
    """The numbers in `text` printed with five or more decimals or an exponent."""
    return [t for t in re.split(r"[\s\[\](),;/=|]+", text) if UNREADABLE.match(t)]


def test_the_rules_themselves() -> None:
    assert unreadable("+0.029 (+0.008 to +0.040), n 3") == []
    assert unreadable("+0.006008 (-0.02106 to +0.02992)") == ["+0.006008", "-0.02106", "+0.02992"]
    assert unreadable("+6.134e-08") == ["+6.134e-08"]
    assert (
        unreadable("space=339172e16140, arXiv:2610.02242") == []
    )  # hashes and ids are not numbers
    assert SNAKE.search("fib_floor_score_given_hit") and SNAKE.search("cost saved delta_axis")
    assert not SNAKE.search("MC_all score (0-1)") and not SNAKE.search("held-out gain (nats)")


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory, three_suite_store: Path) -> Path:
    from tests.configsearch.conftest import SMALL_SETTINGS, SMALL_SPACE

    from labreplay.records.sources import resolve_data_dir
    from labreplay.suites.configsearch.episodes import run_search, sweep
    from labreplay.suites.configsearch.runner import ConfigSearch

    folder = tmp_path_factory.mktemp("labels")
    path = folder / "runs.sqlite"
    shutil.copyfile(three_suite_store, path)
    with Store(path) as store:
        search = ConfigSearch(
            resolve_data_dir(None),
            "band_gap",
            store,
            SMALL_SETTINGS,
            SMALL_SPACE,
            folder / "cache",
            min_test_points=1,
        )
        sweep(search, "rf-scm")
        for method in ("bo", "random"):
            run_search(search, ["rf-scm"], "best-model", method, 6, 3, 0)
    return path


@pytest.fixture(scope="module")
def report_text(tmp_path_factory: pytest.TempPathFactory, real_store: Path) -> str:
    built = build_report(real_store, tmp_path_factory.mktemp("report") / "out")
    assert built["suites"] == ["campaign", "conditions", "configsearch"]
    return Path(built["path"]).read_text(encoding="utf-8")


def test_no_snake_case_header_and_no_unreadable_number(report_text: str) -> None:
    import html

    headers = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", report_text)]
    assert len(headers) > 100
    snake = sorted({h for h in headers if SNAKE.search(h)})
    assert not snake, snake
    tables = parse_html(report_text).tables
    cells = [c for rows in tables.values() for r in rows for c in r]
    bad = [t for c in cells for t in unreadable(c)]
    assert not bad, bad[:10]
    notes = re.findall(r'<p class="note"[^>]*>(.*?)</p>', report_text, re.S)
    assert not [t for n in notes for t in unreadable(html.unescape(n))]
    # the raw keys of the issue are labelled, with units
    for label in (
        "delta-axis: MC_single minus MC_all score",
        "FIB random-floor score given a hit (0-1)",
        "configurations saved vs Omee et al. (0, 48, 10) (share)",
    ):
        assert f"<th>{html.escape(label)}</th>" in report_text, label


def test_every_stored_metric_has_a_declared_label(real_store: Path) -> None:
    """A metric a suite adds later must get its label beside it, not a key turned into words."""
    from labreplay.suites.conditions.summary import HEADLINE_LABELS
    from labreplay.suites.configsearch.targets import SCORE_LABELS

    with Store(real_store, readonly=True) as store:
        for suite, labels in (("conditions", HEADLINE_LABELS), ("configsearch", SCORE_LABELS)):
            runs = [r for r in store.runs(suite=suite) if r.spec_hash != SYNTHETIC]
            keys = {k for r in runs for k, v in store.scores(r.run_id).items() if v is not None}
            assert keys, suite
            assert not keys - set(labels), (suite, sorted(keys - set(labels)))


def test_both_campaign_boards_and_no_empty_metric_column(report_text: str) -> None:
    tables = parse_html(report_text).tables
    assert tables["campaign-leaderboard"] and tables["campaign-leaderboard-short"]
    assert "Leaderboard: paper&#x27;s board: long assignments" in report_text
    summary = report_text.split('<ul class="summary">', 1)[1].split("</ul>", 1)[0]
    assert "long assignments: skill over context" in summary  # the terminal board's first line
    for table_id in ("conditions-leaderboard", "configsearch-leaderboard"):
        rows = tables[table_id]
        columns = list(zip(*rows, strict=True))
        assert not [j for j, c in enumerate(columns) if all(v == "-" for v in c)], table_id
