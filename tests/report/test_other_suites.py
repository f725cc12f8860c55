"""Runs of other suites are read generically from the store (no suite module imported):
leaderboard of scalar scores, paired intervals over shared units, per-key accuracy, traces and
configurations. The runs are written through the public Store API in the shapes those suites
store (question results in events, a summary in score details)."""

from __future__ import annotations

from pathlib import Path

from tests.report.conftest import parse_html

from labreplay.report import build_report
from labreplay.runtime.trajectory import Trajectory
from labreplay.store import Store

QUESTIONS = [f"q{i}" for i in range(12)]


def _write_run(store: Store, suite: str, agent: str, payloads: list[dict], scores, details):
    store.put_spec(suite, "p", "set-1", "h" * 64, "{}")
    run_id, _ = store.open_run(
        suite=suite,
        spec_hash="h" * 64,
        spec_id="set-1",
        branch="main",
        agent=agent,
        agent_params={},
        seed=7,
    )
    trajectory = Trajectory("h" * 64)
    for p in payloads:
        trajectory.append("answer", p)
    store.append_events(run_id, trajectory.events)
    store.put_scores(run_id, scores, details)
    store.finish_run(run_id, "complete", {})


def test_generic_sections(tmp_path):
    path = tmp_path / "mixed.sqlite"
    with Store(path) as store:
        for agent, right in (("model-a", 10), ("model-b", 3)):
            payloads = [
                {
                    "question_id": q,
                    "result": {"score": 1.0 if i < right else (None if i % 2 else 0.2)},
                }
                for i, q in enumerate(QUESTIONS)
            ]
            summary = {
                "by_type": {
                    "fib_all": {"per_key_accuracy_all": {"ligand": right / 12, "base": 0.5}}
                }
            }
            _write_run(
                store,
                "conditions",
                agent,
                payloads,
                {"accuracy": right / 12, "summary": None},
                {"summary": summary},
            )
        configs = [
            {"config": {"r": r, "n": n, "s": 10}, "mae": 0.1 * (r + 1) + 0.01 * n}
            for r in (0, 1)
            for n in (24, 48)
        ]
        _write_run(
            store,
            "configsearch",
            "search",
            configs,
            {"best": 0.1, "trace": None},
            {"trace": [0.3, 0.2, 0.1]},
        )
    result = build_report(path, tmp_path / "out")
    assert result["suites"] == ["conditions", "configsearch"]
    page = parse_html(Path(result["path"]).read_text(encoding="utf-8"))
    board = page.tables["conditions-leaderboard"]
    assert [r[0] for r in board] == ["model-a", "model-b"]
    assert board[0][3] == f"{10 / 12:.3f}"  # metric columns: accuracy ("summary" is all None)
    assert len(board[0]) == 4  # so it is left out
    pair = page.tables["conditions-pairwise"][0]
    assert pair[:3] == ["model-a", "model-b", "12"]
    # a - b per question: 0 on 3, 1 - x on 7 (x alternates None->0 and 0.2), both non-1 after.
    assert pair[3] == f"{(0.8 * 3 + 1.0 * 4) / 12:+.3f}"
    per_key = page.tables["conditions-per-key"]
    # one row per system and kind of answer (mean over runs), not per internal score path
    assert [r[0] for r in per_key] == ["model-a (all)", "model-b (all)"]
    assert [r[1:] for r in per_key] == [["0.500", f"{10 / 12:.3f}"], ["0.500", "0.250"]]
    assert {"configsearch-traces", "configsearch-scatter3d"} <= {i["id"] for i in page.images}
    assert len(page.tables["configsearch-runs"]) == 1
