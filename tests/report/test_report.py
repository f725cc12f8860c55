"""`labreplay report` on a real store: content, self-containment, determinism, CLI errors."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from tests.report.conftest import parse_html

from labreplay.report import build_report
from labreplay.store import Store
from labreplay.suites.campaign.leaderboard import leaderboard


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_report_shows_leaderboard_curves_and_trajectory(tmp_path, campaign_store):
    result = build_report(campaign_store, tmp_path / "out")
    page = parse_html(Path(result["path"]).read_text(encoding="utf-8"))
    with Store(campaign_store) as store:
        board = leaderboard(store)
        run = store.run(result["trajectory_run"])
        n_events = store.event_count(run.run_id)
    board_rows = page.tables["campaign-leaderboard"]
    ranked = [r for r in board_rows if r[0].isdigit()]
    assert [r[2] for r in ranked] == [r["system"] for r in board["rows"]]
    assert [r[3] for r in ranked] == [f"{r['adaptive_auc']:.4g}" for r in board["rows"]]
    # Reference agents (no-evidence, random policy) are reference rows, never ranked.
    assert {r[2] for r in board_rows if r[0] == "ref"} == {
        "random",
        "no-evidence",
        "base-rate forecaster",
        "context-trained model",
    }
    assert [r[2] for r in ranked] == ["bayes"]
    assert all(r[10] == "0" and r[11] == "3" for r in ranked)  # seeds, assignments
    assert ranked[0][12].split(" / ")[0] == "4"
    assert board["pairwise"] == [] and not page.tables.get("campaign-pairwise")
    loao = page.tables["campaign-loao"]
    assert len(loao) == 1 and all(len(r) == 1 + 3 + 1 for r in loao)
    # The viewer shows the best system's adaptive run, every event of it, in order.
    assert run.branch == "adaptive" and run.agent == board["rows"][0]["system"].split("#")[0]
    steps = page.tables["belief-trajectory-table"]
    assert [int(r[0]) for r in steps] == list(range(n_events))
    # reset, the run's header event (what the run is), then the pre-campaign checkpoint
    assert [r[1] for r in steps[:3]] == ["reset", "header", "checkpoint t=0"]
    assert any(r[3].startswith("refinement:") for r in steps) or run.agent == "random"
    assert any(r[7] for r in steps[3:])  # a panel score after a later checkpoint
    ids = {img.get("id") for img in page.images}
    assert {"campaign-lifts", "campaign-lift-per-assignment", "trajectory-plot"} <= ids
    assert sum(1 for i in ids if i and i.startswith("curve-")) == 3  # one per agent
    for img in page.images:
        assert img["src"].startswith("data:image/png;base64,")
        assert base64.b64decode(img["src"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_is_self_contained_and_deterministic(tmp_path, campaign_store):
    first = Path(build_report(campaign_store, tmp_path / "a")["path"]).read_bytes()
    second = Path(build_report(campaign_store, tmp_path / "b")["path"]).read_bytes()
    assert first == second
    page = parse_html(first.decode("utf-8"))
    assert not ({"script", "link", "iframe", "object", "embed"} & page.tags)
    assert all(u.startswith("data:") for u in page.urls)
    assert b"http://" not in first and b"https://" not in first and b"url(" not in first
    assert list((tmp_path / "a").iterdir()) == [tmp_path / "a" / "index.html"]  # no temp left


def test_cli_report_and_its_errors(tmp_path, campaign_store):
    done = _cli("report", "--store", str(campaign_store), "--out", str(tmp_path / "r"), "--json")
    assert done.returncode == 0, done.stderr
    assert '"campaign"' in done.stdout and (tmp_path / "r" / "index.html").is_file()
    missing = _cli("report", "--store", str(tmp_path / "nope.sqlite"), "--out", str(tmp_path))
    assert missing.returncode == 2
    assert "nope.sqlite does not exist" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "nope.sqlite").exists()  # reading never creates a store
    bad_run = _cli(
        "report", "--store", str(campaign_store), "--out", str(tmp_path / "x"), "--run", "zzz"
    )
    assert bad_run.returncode == 2 and "no run zzz" in bad_run.stderr
    assert not (tmp_path / "x" / "index.html").exists()


def test_chosen_run_and_empty_store(tmp_path, campaign_store):
    with Store(campaign_store) as store:
        control = store.runs(branch="random", agent="random")[0]
    result = build_report(campaign_store, tmp_path / "c", run_id=control.run_id)
    text = Path(result["path"]).read_text(encoding="utf-8")
    assert result["trajectory_run"] == control.run_id and control.run_id in text
    with Store(tmp_path / "empty.sqlite"):
        pass
    empty = build_report(tmp_path / "empty.sqlite", tmp_path / "e")
    assert empty["suites"] == [] and 'id="empty"' in Path(empty["path"]).read_text()
