"""The report of a store holding runs of all three suites, measured in headless Chromium: the
page never scrolls sideways (a wide table scrolls inside its own box), no table cell holds raw
JSON, no number in a cell has more than 4 significant digits, no table is drawn empty, long
parts are collapsible, and the page stays a reasonable height.

The report itself has no scripts; the test adds one to a copy of it, which writes what the
browser measured into the DOM that `--dump-dom` prints.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.report.conftest import parse_html
from tests.report.test_browser import _chromium, _run

from labreplay.report import build_report
from labreplay.runtime.trajectory import Trajectory
from labreplay.store import Store

WINDOW = (1024, 800)
MAX_HEIGHT_PX = 20_000  # the whole page with every collapsible block closed
MAX_SIGNIFICANT = 4

PROBE = """<script>
window.addEventListener('load', () => {
  const root = document.documentElement;
  const tables = [...document.querySelectorAll('table')].map(t => ({
    id: t.id, rows: t.tBodies.length ? t.tBodies[0].rows.length : 0}));
  const cells = [...document.querySelectorAll('td')].map(td => td.textContent.trim());
  const sections = [...document.querySelectorAll('h2')].map(h => h.id);
  const out = {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    height: root.scrollHeight, tables: tables, cells: cells, sections: sections,
    details: document.querySelectorAll('details').length};
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""

NUMBER = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)(e[+-]?\d+)?%?$")


def significant_digits(token: str) -> int:
    mantissa = token.lstrip("+-").rstrip("%").split("e")[0]
    return len(mantissa.replace(".", "").lstrip("0"))


def too_precise(cell: str) -> list[str]:
    """The decimal numbers in a cell's text with more than MAX_SIGNIFICANT digits."""
    tokens = re.split(r"[\s\[\](),;:/=]+", cell)
    return [t for t in tokens if NUMBER.match(t) and significant_digits(t) > MAX_SIGNIFICANT]


def test_the_precision_rule_itself() -> None:
    assert too_precise("0.1234 to 0.5") == []
    assert too_precise("+0.07638583580977498") == ["+0.07638583580977498"]
    assert too_precise("12.345 (1.2 to 3.4)") == ["12.345"]
    assert too_precise("run 3f2a, seed 12345") == []  # integers and ids are not scores


def _configsearch_runs(store: Store) -> None:
    """Two optimisers over three seeds in the shapes configsearch stores (its agent parameters
    are large nested mappings, which the report must not print)."""
    params: dict[str, Any] = {
        "budget": 6,
        "init": 2,
        "models": ["rf-scm"],
        "model_params": {"rf-scm": {"max_features": 0.33, "n_estimators": 50}},
        "n_total": 300,
        "space": "895e3fb96c94",
        "task": "band_gap",
    }
    store.put_spec("configsearch", "band_gap", "band_gap", "c" * 64, "{}")
    for agent in ("bo", "random"):
        for seed in range(3):
            run_id, _ = store.open_run(
                suite="configsearch",
                spec_hash="c" * 64,
                spec_id="band_gap",
                branch="main",
                agent=agent,
                agent_params={**params, "cost_alpha": 0 if agent == "bo" else None},
                seed=seed,
            )
            trajectory = Trajectory("c" * 64)
            maes = [0.4 / (1 + k + seed / 7) for k in range(6)]
            for k, mae in enumerate(maes):
                config = {"r": k / 5, "n": 4 + k, "s": 1 + k % 3}
                trajectory.append("evaluation", {"config": config, "mae": mae})
                best = min(maes[: k + 1])
                trajectory.append("step", {"step": k + 1, "config": config, "best_so_far": best})
            store.append_events(run_id, trajectory.events)
            best = [min(maes[: k + 1]) for k in range(len(maes))]
            store.put_scores(run_id, {"best_mae": best[-1], "steps": 6}, {"trace": best})
            store.finish_run(run_id, "complete", {})
    # an exhaustive sweep over a small grid: the claims table is computed from it
    sweep_id, _ = store.open_run(
        suite="configsearch",
        spec_hash="c" * 64,
        spec_id="band_gap",
        branch="sweep/exhaustive",
        agent="exhaustive",
        agent_params={**params, "problem": "sweep", "min_test_points": 30},
        seed=42,
    )
    trajectory = Trajectory("c" * 64)
    for r in (0.0, 0.5):
        for n in (4, 8, 24, 48):
            for s in (1, 2, 4, 10):
                mae = 0.3 + 0.1 * r + 0.5 / n + 0.01 * s
                config = {"r": r, "n": n, "s": s}
                trajectory.append("evaluation", {"config": config, "mae": mae})
    store.append_events(sweep_id, trajectory.events)
    store.put_scores(sweep_id, {"best_mae": 0.32}, {})
    store.finish_run(sweep_id, "complete", {})


@pytest.fixture(scope="module")
def three_suite_store(tmp_path_factory: pytest.TempPathFactory, campaign_store: Path) -> Path:
    import os

    import labreplay
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.report import write_compiled
    from labreplay.suites.conditions.runner import question_spec

    folder = tmp_path_factory.mktemp("three-suites")
    path = folder / "runs.sqlite"
    shutil.copyfile(campaign_store, path)
    questions = folder / "mitsunobu.jsonl"
    data_dir = Path(os.environ["LABREPLAY_DATA_DIR"])
    write_compiled(compile_datasets(["edbo_mitsunobu"], data_dir, seed=0), questions)
    with Store(path) as store:
        for agent in ("random", "ranker"):
            labreplay.run(
                "conditions",
                [question_spec(questions, load_questions(questions))],
                agent,
                store,
                seed=0,
                questions=questions,
            )
        _configsearch_runs(store)
    return path


def _measure(report: Path, tmp_path: Path) -> dict[str, Any]:
    probed = tmp_path / "probed.html"
    probed.write_text(
        report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
        encoding="utf-8",
    )
    done = _run(
        _chromium(),
        tmp_path / "profile",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probed.resolve().as_uri(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the probe script did not run"
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


@pytest.mark.browser
def test_every_suite_section_is_legible_in_chromium(tmp_path: Path, three_suite_store: Path):
    built = build_report(three_suite_store, tmp_path / "report")
    assert built["suites"] == ["campaign", "conditions", "configsearch"]
    report = Path(built["path"])
    page = _measure(report, tmp_path)
    tables = parse_html(report.read_text(encoding="utf-8")).tables
    # readable labels: the agent and only the parameters that tell its runs apart
    assert [r[0] for r in tables["configsearch-leaderboard"]] == ["bo", "exhaustive", "random"]
    assert [r[2] for r in tables["configsearch-leaderboard"]] == ["0-2", "42", "0-2"]  # seeds
    images = {i.get("id", "") for i in parse_html(report.read_text(encoding="utf-8")).images}
    assert "configsearch-best-band_gap" in images  # best-so-far of bo against random, banded
    assert any(i.startswith("configsearch-map-") for i in images)  # heat maps per r
    claims = tables["configsearch-claims"]  # the claims in HTML, not only Markdown
    assert {r[2] for r in claims} == {"robust (n*s >= 30)", "full space"}
    # conditions: score beside the floor with an interval; precedent lift with its interval
    assert all(" to " in r[7] for r in tables["conditions-datasets"])
    assert len(tables["conditions-precedent-lift"]) == 2

    assert {"campaign", "conditions", "configsearch"} <= set(page["sections"])
    for suite in ("campaign", "conditions", "configsearch"):  # the paper beside the store
        assert tables[f"{suite}-paper-published"] and tables[f"{suite}-paper-here"], suite
    # no sideways scrolling of the page: wide tables scroll inside their own box
    assert page["scrollWidth"] <= page["clientWidth"], page["scrollWidth"]
    raw_json = [c for c in page["cells"] if c[:1] in ("{", "[") and c]
    assert not raw_json, raw_json[:3]
    precise = [t for c in page["cells"] for t in too_precise(c)]
    assert not precise, precise[:5]
    empty = [t["id"] for t in page["tables"] if t["rows"] == 0]
    assert not empty, empty
    assert page["details"] >= 3  # the long tables are collapsible
    assert page["height"] <= MAX_HEIGHT_PX, page["height"]


def test_each_suite_shows_its_paper_beside_the_store(tmp_path: Path, three_suite_store: Path):
    """Plain HTML (no browser): every suite's "paper beside this store" block quotes the
    paper's figures with their sources, shows this store's figures computed from its runs (the
    same values the suites' boards give), lists why they differ, and holds no raw JSON."""
    from labreplay.report.html import ci_text, num
    from labreplay.suites.campaign.leaderboard import leaderboard
    from labreplay.suites.campaign.papers import PAPER as CAMPAIGN

    built = build_report(three_suite_store, tmp_path / "report")
    text = Path(built["path"]).read_text(encoding="utf-8")
    tables = parse_html(text).tables
    for suite in ("campaign", "conditions", "configsearch"):
        assert f'id="{suite}-paper"' in text
        published = tables[f"{suite}-paper-published"]
        assert published and all(len(r) == 3 and r[2] for r in published)  # each with a source
        assert tables[f"{suite}-paper-here"], suite
        assert text.count(f'<ul id="{suite}-paper-differences"><li>') == 1
        cells = [
            c
            for table in ("published", "here")
            for r in tables[f"{suite}-paper-{table}"]
            for c in r
        ]
        assert not [c for c in cells if c[:1] in ("{", "[")], suite
    assert [r[1] for r in tables["campaign-paper-published"]] == [
        p.value for p in CAMPAIGN.published
    ]
    # this store's figures are the board's, not typed
    with Store(three_suite_store, readonly=True) as store:
        board = leaderboard(store)
        ranker = next(r for r in store.runs(suite="conditions") if r.agent.startswith("ranker"))
        mc_all = store.scores(ranker.run_id)["mc_all_score"]
    here = {r[0]: r for r in tables["campaign-paper-here"]}
    assert board["rows"]  # bayes is ranked
    for row in board["rows"]:
        assert here[row["system"]][3] == num(row["adaptive_auc"])
        assert here[row["system"]][5] == ci_text(row["selection_lift"])
        assert here[row["system"]][6] == ci_text(row["evidence_lift"])  # both controls ran
    conditions = {r[0]: r for r in tables["conditions-paper-here"]}
    assert conditions[ranker.agent][3].endswith(f"/ {mc_all:.3f}")
    configsearch = {r[1]: r for r in tables["configsearch-paper-here"]}
    assert configsearch["-, bo"][3] == "3" and configsearch["-, random"][3] == "3"  # seeds
