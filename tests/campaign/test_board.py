"""The campaign boards: long/short tables, entry rule, ceilings, power, protocol refusal."""

from __future__ import annotations

import math
from typing import Any

import pytest

from labreplay.errors import SpecError
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.agents import BayesAgent, NoEvidenceAgent, RandomAgent
from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.ceiling import (
    ceiling_best,
    ceiling_selected,
    context_score,
)
from labreplay.suites.campaign.leaderboard import leaderboard
from labreplay.suites.campaign.power import power_line
from labreplay.suites.campaign.runner import run_assignment, run_branch


class Forgetful(BayesAgent):
    """Answers the pre-campaign checkpoint, then returns nothing: every later one falls back."""

    name = "forgetful"

    def forecast(self, snapshot: Any) -> dict[str, Any]:
        if snapshot["state"]["closed"]:
            return {"forecasts": []}
        return super().forecast(snapshot)


def _chosen(pg_specs):
    return [s for s in pg_specs if s.body["assignment"]["id"] in ("long-1", "long-2", "short-1")]


@pytest.fixture(scope="module")
def board_store(pg_specs, tmp_path_factory):
    path = tmp_path_factory.mktemp("board") / "runs.sqlite"
    with Store(path) as store:
        for spec in _chosen(pg_specs):
            run_assignment(spec, BayesAgent, store, 0)
            run_assignment(spec, RandomAgent, store, 0, ("random",))
            run_assignment(spec, Forgetful, store, 0, ("random",))
            run_branch(spec, NoEvidenceAgent(), 0, "adaptive", store)  # no control branch
    return path


def test_long_and_short_boards_with_ceilings_and_power(board_store):
    with Store(board_store) as store:
        board = leaderboard(store)
    long, short = board["tables"]["long"], board["tables"]["short"]
    assert long["assignments"] == [
        "precursor-genome/sdl1/seed0/long-1",
        "precursor-genome/sdl1/seed0/long-2",
    ]
    assert short["assignments"] == ["precursor-genome/sdl1/seed0/short-1"]
    for table in (long, short):
        assert [r["system"] for r in table["rows"]] == ["bayes"]
        refs = {r["system"] for r in table["references"]}
        assert {"random", "base-rate forecaster", "context-trained model"} <= refs
        for row in table["rows"] + table["references"]:
            assert "evidence_ceiling" in row and "headroom_captured" in row
        assert table["power"]["n_assignments"] == len(table["assignments"])
        # entry rule: fallbacks and a missing control keep a system off the board, with reasons
        assert set(table["incomplete"]) == {"forgetful", "no-evidence"}
        reasons = table["incomplete_reasons"]
        assert all("fallback" in " ".join(v) for v in reasons["forgetful"].values())
        assert all("random branch not complete" in v for v in reasons["no-evidence"].values())
    row = long["rows"][0]
    assert row["evidence_ceiling"]["selected"] > 0
    assert row["headroom_captured"] == pytest.approx(
        row["held_out_gain"] / row["evidence_ceiling"]["selected"]
    )
    # every control closed as many experiments as the adaptive branch
    closed = {b: v["experiments_closed"] for b, v in row["branches"].items()}
    assert len(set(closed.values())) == 1 and closed["adaptive"] == 24
    power = long["power"]
    assert power["min_separable"] > 0 and power["assignments_needed"] >= 1
    # the paper's board is mirrored at the top level for single-board readers
    assert board["rows"] == long["rows"]


def test_two_protocols_under_one_spec_id_are_refused_unless_one_is_selected(
    board_store, pg_records, tmp_path
):
    import shutil

    path = tmp_path / "mixed.sqlite"
    shutil.copy(board_store, path)
    _, rows_specs, _ = compile_specs(seed=0, records=pg_records, context_detail="rows")
    spec = next(s for s in rows_specs if s.body["assignment"]["id"] == "long-1")
    with Store(path) as store:
        run_assignment(spec, BayesAgent, store, 0, ("random",))
        with pytest.raises(SpecError, match=r"precursor-genome/sdl1/seed0/long-1\b"):
            leaderboard(store)
        board = leaderboard(store, spec_hashes=[spec.spec_hash])
    assert board["tables"]["long"]["assignments"] == ["precursor-genome/sdl1/seed0/long-1"]


def test_ceilings_and_target_follow_the_context_model(pg_specs):
    for spec in pg_specs:
        body = spec.body
        target = body["acceleration_target"]
        score0 = context_score(body)
        assert target["tau"] == pytest.approx(score0 + 0.05, abs=1e-6)
        # never met before any experiment by the context-trained model
        assert score0 < target["tau"]
    body = pg_specs[0].body
    best = ceiling_best(body)
    assert len(best["experiments"]) == body["budgets"]["experiments"]
    assert best["gain"] > 0
    assert ceiling_selected(body, best["experiments"]) >= best["gain"] - 1e-12
    assert ceiling_selected(body, []) == 0.0


def test_power_line_normal_approximation():
    import numpy as np

    rng = np.random.default_rng(0)
    d = rng.normal(0.0, 1.0, 16)
    p = power_line([list(d)], 16, 0.5, 8, "test")
    sd = float(np.std(d, ddof=1))
    z = 1.959963984540054 + 0.8416212335729143
    assert p["min_separable"] == pytest.approx(z * sd / 4)
    assert p["assignments_needed"] == math.ceil((z * sd / 0.5) ** 2)
    assert p["seeds_needed"] == math.ceil(p["assignments_needed"] / 8)
    assert power_line([[0.1]], 1, 0.5, 1, "test")["min_separable"] is None
