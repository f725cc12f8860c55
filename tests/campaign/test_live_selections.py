"""Online evaluation with the lab's own agent selecting (`--selections lab`, issue 52): the
lab posts each selection, the system under evaluation only forecasts; whose selection it was
is in the events, and bad selections are one HTTP error each, recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.campaign.conftest import TOKEN, ServeWithLab, cli, lab_request

from labreplay.compile.spec import EnvironmentSpec
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.live.emulate import EmulatedLab
from labreplay.suites.campaign.live.lab import LiveLab


def test_emulate_with_the_labs_selections_is_scored_and_verifies(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    store = tmp_path / "live.sqlite"
    code, out, err = cli("campaign", "live", "emulate", "--specs", str(campaign_specs_source),
                         "--only", "short-1", "--store", str(store), "--selections", "lab",
                         "--shuffle", "--delay-s", "0.02", "--seed", "2", "--json")  # fmt: skip
    assert code == 0, err
    [result] = json.loads(out)
    assert result["status"] == "complete"
    assert result["scores"]["adaptive_auc"] is not None
    with Store(store) as db:
        events = db.events(result["run_id"])
    selects = [e["payload"] for e in events if e["kind"] == "action"
               and e["payload"]["action"]["type"] == "select_experiment"]  # fmt: skip
    assert selects and all(s["accepted"] and s["selected_by"] == "lab" for s in selects)
    posted = [e["payload"]["post"]["experiment_id"] for e in events
              if e["kind"] == "lab" and e["payload"]["post"]["post"] == "selection"]  # fmt: skip
    assert posted == [s["action"]["experiment_id"] for s in selects]  # the lab's, in its order
    forecasts = [e for e in events if e["kind"] == "action"
                 and e["payload"]["action"]["type"] == "submit_forecast"]  # fmt: skip
    assert forecasts  # the system under evaluation was asked for its forecasts
    header = next(e["payload"] for e in events if e["kind"] == "header")
    assert header["agent_params"]["live"]["selections"] == "lab"
    assert cli("store", "verify", "--store", str(store))[0] == 0
    code, out, _ = cli("campaign", "live", "board", "--store", str(store))
    assert code == 0 and "selection lift cannot exist" in out


def test_a_selection_post_is_refused_where_the_agent_selects(
    pg_specs: list[EnvironmentSpec],
) -> None:
    spec = pg_specs[1]
    lab = LiveLab(spec, None, wait_s=0.01)
    eid = str(spec.body["candidates"][0]["experiment_id"])
    answer = lab.post({"post": "selection", "experiment_id": eid})
    assert answer["status"] == 409 and "selects here" in str(answer["error"])
    assert [r["accepted"] for r in lab.unrecorded()] == [False]


def _selecting_lab(spec: EnvironmentSpec, base: str, answers: list[tuple[int, str]]) -> None:
    """A lab that selects the whole budget at once (then an unknown, a repeated and one
    beyond the budget), and posts the spec's record for each experiment awaited."""
    record = EmulatedLab(spec, print, 0.0, False, 0.0, 0)
    budget = int(spec.body["budgets"]["experiments"])
    chosen = record.order[:budget]
    bad = [
        {"post": "selection", "experiment_id": e} for e in ("nope", chosen[0], record.order[budget])
    ]
    selections = [{"post": "selection", "experiment_id": e} for e in chosen] + bad
    asked: set[str] = set()
    for _ in range(3000):
        status, body = lab_request(f"{base}/awaiting", TOKEN)
        if status in (0, 404) and asked:
            return  # the campaign is over
        if status == 200 and body["awaiting_selection"] and selections:
            for post in selections:
                code, answer = lab_request(f"{base}/posts", TOKEN, json.dumps(post).encode())
                answers.append((code, str(answer.get("error"))))
            selections = []
        for eid in body.get("awaiting", []) if status == 200 else []:
            asked.add(eid)
            for post in record.posts(eid):
                lab_request(f"{base}/posts", TOKEN, json.dumps(post).encode())
        time.sleep(0.01)


def test_serve_takes_the_labs_selections_and_refuses_bad_ones(
    serve_with_lab: ServeWithLab,
) -> None:
    bad, events = serve_with_lab(_selecting_lab, "--selections", "lab")
    assert [a[0] for a in bad] == [404, 409, 409], bad
    assert "already selected" in bad[1][1] and "budget" in bad[2][1]
    assert all(e["payload"].get("selected_by") == "lab" for e in events if e["kind"] == "action"
               and e["payload"]["action"]["type"] == "select_experiment")  # fmt: skip
