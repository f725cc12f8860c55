"""Online evaluation (issue 52): a live run's scores as its outcomes arrive, the held-out panel
rescored from the lab's panel posts, the forecast-only twin, and `campaign live board`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.campaign.conftest import cli

from labreplay.compile.spec import EnvironmentSpec
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.live.emulate import emulate
from labreplay.suites.campaign.live.lab import LiveLab
from labreplay.suites.campaign.live.scores import live_scores
from labreplay.suites.campaign.metrics import panel_loss
from labreplay.suites.campaign.resolve import resolve_campaign_agent
from labreplay.suites.campaign.runner import run_assignments
from labreplay.suites.campaign.views import spec_body


def _played(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    return [(e["kind"], e["payload"]) for e in events if e["kind"] not in ("header", "lab")]


def test_live_scores_without_delay_are_the_replays_and_the_twin_is_its_control(
    pg_specs: list[EnvironmentSpec], tmp_path: Path
) -> None:
    spec = pg_specs[1]
    body = spec_body(spec.body)
    resolved = resolve_campaign_agent("bayes")
    with Store(tmp_path / "runs.sqlite") as store:
        run_assignments([spec], resolved, store, seed=3, controls=("no-evidence",))
        replay = {r.branch: r for r in store.runs(spec_hash=spec.spec_hash)}
        live = {str(r["branch"]): r for r in emulate([spec], resolved, store, seed=3, twin=True)}
        assert set(live) == {"adaptive", "no-evidence"}
        twin_run = store.run(str(live["no-evidence"]["run_id"]))
        assert twin_run.parent_run_id == live["adaptive"]["run_id"]
        for branch in live:  # the twin on the live stream is the replay's no-evidence control
            events = store.events(str(live[branch]["run_id"]))
            assert _played(events) == _played(store.events(replay[branch].run_id))
            assert store.scores(str(live[branch]["run_id"])) == store.scores(replay[branch].run_id)
        events = store.events(str(live["adaptive"]["run_id"]))
        stored = store.scores(str(live["adaptive"]["run_id"]))
    scores = live_scores(events, body)
    # every panel outcome was posted: the panel figures are final and the stored ones, exactly
    assert scores["final"] and scores["panel_pending"] == []
    assert scores["panel_arrived"] == len(body["queries"])
    assert scores["adaptive_auc"] == stored["adaptive_auc"]
    assert scores["held_out_gain"] == stored["held_out_gain"]
    # one prequential point per closed experiment: its prior forecast against its outcome
    closed = [str(e) for e in next(e["payload"]["closed"] for e in events if e["kind"] == "end")]
    assert [o["experiment_id"] for o in scores["outcomes"]] == closed
    priors: dict[str, Any] = {}
    for e in events:
        action = e["payload"].get("action", {}) if e["kind"] == "action" else {}
        if action.get("type") == "submit_forecast" and e["payload"]["accepted"]:
            priors.setdefault(action["experiment_id"], action)
    first = scores["outcomes"][0]
    prior = priors[first["experiment_id"]]
    forecast = {"p_valid": prior["p_valid"], "categories": prior["categories"]}
    expected = panel_loss({"x": forecast}, {"x": body["evaluator"][first["experiment_id"]]},
                          float(body["eps"]))[0]  # fmt: skip
    assert first["loss"] == expected
    losses = [o["loss"] for o in scores["outcomes"] if o["loss"] is not None]
    assert scores["prequential_log_loss"] == sum(losses) / len(losses)


def test_panel_outcomes_are_checked_and_the_rest_stay_pending(
    pg_specs: list[EnvironmentSpec], tmp_path: Path
) -> None:
    spec = pg_specs[1]
    body = spec_body(spec.body)
    panel = [str(q["experiment_id"]) for q in body["queries"]]
    lab = LiveLab(spec, None, wait_s=0.01)
    post = {"post": "panel_outcome", "experiment_id": panel[0],
            "outcome": dict(body["evaluator"][panel[0]]["outcome"])}  # fmt: skip
    candidate = str(body["candidates"][0]["experiment_id"])
    assert "unknown panel experiment" in str(
        lab.post({**post, "experiment_id": candidate})["error"]
    )
    assert "needs 'outcome'" in str(lab.post({**post, "outcome": {"valid": None}})["error"])
    assert lab.post(post) == {"accepted": True}  # no selection, no forecast needed
    assert "duplicate post" in str(lab.post(post)["error"])
    assert lab.evaluator[panel[0]]["outcome"] == {"valid": None}  # no experiment's record
    recorded = [{"seq": -1, "kind": "lab", "payload": p, "prev_hash": "", "hash": ""}
                for p in lab.unrecorded()]  # fmt: skip
    with Store(tmp_path / "runs.sqlite") as store:
        run_assignments([spec], resolve_campaign_agent("bayes"), store, seed=1, controls=())
        [replay] = store.runs(spec_hash=spec.spec_hash)
        events = store.events(replay.run_id)
        stored = store.scores(replay.run_id)
    # the replay's chain with only the first panel outcome posted: one in, the others pending
    partial = live_scores([*events, *recorded], body)
    assert partial["closed"] and not partial["final"]
    assert partial["panel_arrived"] == 1 and partial["panel_pending"] == panel[1:]
    assert partial["adaptive_auc"] is not None and partial["adaptive_auc"] != stored["adaptive_auc"]
    # no panel post at all: every panel figure pending, none made up
    none = live_scores(events, body)
    assert none["panel_arrived"] == 0 and none["adaptive_auc"] is None
    assert none["panel_losses"] == [None] * len(none["panel_losses"])
    assert none["outcomes"] == []  # a replay has no lab outcome posts


def test_emulate_with_faults_and_a_twin_is_on_the_board_and_verifies(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    store = tmp_path / "live.sqlite"
    code, out, err = cli("campaign", "live", "emulate", "--specs", str(campaign_specs_source),
                         "--only", "short-1", "--store", str(store), "--delay-s", "0.05",
                         "--shuffle", "--fail-rate", "0.3", "--seed", "2", "--twin",
                         "--json")  # fmt: skip
    assert code == 0, err
    assert [r["branch"] for r in json.loads(out)] == ["adaptive", "no-evidence"]
    code, out, err = cli("campaign", "live", "board", "--store", str(store), "--json")
    assert code == 0, err
    [row] = json.loads(out)
    scores, twin = row["scores"], row["twin"]
    assert scores["closed"] and scores["deviations"] >= 1 and scores["outcomes"]
    assert scores["panel_arrived"] + len(scores["panel_pending"]) == scores["panel_size"]
    assert twin["panel_arrived"] == scores["panel_arrived"]  # the same stream's panel posts
    assert (row["evidence_lift"] is None) == (not scores["final"])
    code, text, err = cli("campaign", "live", "board", "--store", str(store))
    assert code == 0, err
    assert "prequential log loss" in text and "cannot exist online" in text
    assert "forecast-only twin" in text
    code, out, err = cli("store", "verify", "--store", str(store))
    assert code == 0, out + err


def test_board_of_a_store_without_live_runs_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "none.sqlite"
    Store(store).close()
    code, out, err = cli("campaign", "live", "board", "--store", str(store))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "no live campaign runs" in err
