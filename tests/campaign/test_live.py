"""Online evaluation, first slice (issue 52): a compiled campaign played as a live lab through
the live episode source, recorded by the runner as a `live` run."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from tests.campaign.conftest import TOKEN, ServeWithLab, cli, lab_request

from labreplay.compile.spec import EnvironmentSpec
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.live.emulate import EmulatedLab, emulate
from labreplay.suites.campaign.live.lab import LiveLab
from labreplay.suites.campaign.resolve import resolve_campaign_agent
from labreplay.suites.campaign.runner import run_assignments


def _campaign_events(events: Sequence[Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """The events an agent and its environment made: no header (it names the run), no lab
    posts (a replay's record is in its spec)."""
    return [(e["kind"], e["payload"]) for e in events if e["kind"] not in ("header", "lab")]


@pytest.mark.parametrize("agent", ["bayes", "random"])
def test_live_run_without_delay_is_the_replay(
    pg_specs: list[EnvironmentSpec], tmp_path: Path, agent: str
) -> None:
    spec = pg_specs[1]
    resolved = resolve_campaign_agent(agent)
    with Store(tmp_path / "runs.sqlite") as store:
        run_assignments([spec], resolved, store, seed=3, controls=())
        [replay] = store.runs(spec_hash=spec.spec_hash)
        [live] = emulate([spec], resolved, store, seed=3)
        assert live["status"] == "complete" and live["run_id"] != replay.run_id
        live_events = store.events(str(live["run_id"]))
        replay_events = store.events(replay.run_id)
        assert _campaign_events(live_events) == _campaign_events(replay_events)
        # the lab posted the record the replay reads, after each prior forecast, all accepted
        posts = [e["payload"] for e in live_events if e["kind"] == "lab"]
        assert posts and all(p["accepted"] for p in posts)
        posted = {p["post"]["experiment_id"] for p in posts if p["post"]["post"] != "panel_outcome"}
        asked = {
            p["action"]["experiment_id"]
            for k, p in _campaign_events(replay_events)
            if k == "action" and p["accepted"] and p["action"]["type"] == "submit_forecast"
        }
        assert posted == asked
        assert store.scores(str(live["run_id"])) == store.scores(replay.run_id)
        header = next(e["payload"] for e in live_events if e["kind"] == "header")
        assert header["agent_params"]["live"]["lab"] == "emulated"


def test_emulate_with_delay_shuffle_and_failures_is_scored_and_verifies(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    store = tmp_path / "live.sqlite"
    args = ["campaign", "live", "emulate", "--specs", str(campaign_specs_source), "--only",
            "short-1", "--store", str(store), "--delay-s", "0.05", "--shuffle", "--fail-rate",
            "0.5", "--seed", "2", "--json"]  # fmt: skip
    code, out, err = cli(*args)
    assert code == 0, err
    [result] = json.loads(out)
    assert result["status"] == "complete"
    assert result["scores"]["adaptive_auc"] is not None
    with Store(store) as db:
        events = db.events(result["run_id"])
    posts = [e["payload"]["post"] for e in events if e["kind"] == "lab"]
    assert any(p["post"] == "deviation" and p["kind"] == "failed" for p in posts)
    assert any(p["post"] == "outcome" for p in posts)
    code, out, err = cli("store", "verify", "--store", str(store))
    assert code == 0, out + err
    # a live run is signed and its signature verified like any run
    keys = tmp_path / "keys"
    assert cli("store", "keygen", "--out", str(keys))[0] == 0
    code, out, err = cli("store", "sign", "--store", str(store), "--key",
                         str(keys / "labreplay-signing-key.pem"))  # fmt: skip
    assert code == 0 and "signed 1 run(s)" in out, out + err
    public = str(keys / "labreplay-signing-key.pub.pem")
    code, out, err = cli("store", "verify", "--store", str(store), "--public-key", public)
    assert code == 0, out + err
    # the posts are part of the verified chain: one changed afterwards is found
    with sqlite3.connect(store) as db:
        db.execute(
            "UPDATE events SET payload = replace(payload, '\"valid\":true', '\"valid\":false') "
            "WHERE kind = 'lab' AND payload LIKE '%\"valid\":true%'"
        )
    assert cli("store", "verify", "--store", str(store))[0] != 0


def test_an_llm_agent_plays_live_with_the_llm_options_and_its_calls_are_recorded(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    """The live commands take `campaign run`'s LLM options: a model behind an OpenAI-shaped
    server plays an emulated live campaign, its calls recorded and capped as in a replay."""
    from labreplay.testing.fault_server import StubServer
    from labreplay.testing.schema_server import SchemaAnswerer

    store = tmp_path / "live.sqlite"
    with StubServer(SchemaAnswerer()) as server:
        code, out, err = cli(
            "campaign", "live", "emulate", "--specs", str(campaign_specs_source), "--only",
            "short-1", "--store", str(store), "--agent", "openai:stub-model", "--base-url",
            server.base_url, "--max-calls", "500", "--delay-s", "0.02", "--json",
        )  # fmt: skip
        sent = len(server.chat_requests)
    assert code == 0, err
    [result] = json.loads(out)
    assert result["status"] == "complete" and result["scores"]["adaptive_auc"] is not None
    with Store(store) as db:
        calls = db.llm_calls(result["run_id"])
        header = db.run(result["run_id"]).agent_params
    assert 0 < len(calls) == sent and header["live"]["lab"] == "emulated"
    assert cli("store", "verify", "--store", str(store))[0] == 0
    # a cap too small fails the run with its cause, as a replay's would
    code, out, err = cli(
        "campaign", "live", "emulate", "--specs", str(campaign_specs_source), "--only", "short-1",
        "--store", str(tmp_path / "capped.sqlite"), "--agent", "openai:stub-model",
        "--base-url", "http://127.0.0.1:9/v1", "--max-calls", "0", "--json",
    )  # fmt: skip
    assert code == 2 and "--max-calls" in err and not (tmp_path / "capped.sqlite").exists()


def test_a_bad_rate_is_one_line_and_creates_nothing(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    store = tmp_path / "live.sqlite"
    args = ["campaign", "live", "emulate", "--specs", str(campaign_specs_source), "--store",
            str(store), "--fail-rate", "1.5"]  # fmt: skip
    code, _, err = cli(*args)
    assert code == 2
    assert err.startswith("labreplay: error: --fail-rate") and len(err.splitlines()) == 1
    assert not store.exists()


def test_the_source_refuses_bad_posts_and_records_each(pg_specs: list[EnvironmentSpec]) -> None:
    spec = pg_specs[1]
    lab = LiveLab(spec, None, wait_s=0.01)
    eid = str(spec.body["candidates"][0]["experiment_id"])
    outcome = {"post": "outcome", "experiment_id": eid, "outcome": {"valid": False}}
    item = {"post": "evidence", "experiment_id": eid, "kind": "xrd_scan", "item": {"item_id": "a"}}
    assert "unknown experiment" in str(lab.post({**outcome, "experiment_id": "nope"})["error"])
    assert "was not selected" in str(lab.post(outcome)["error"])
    lab.selected(eid)
    assert "before its forecast was asked" in str(lab.post(outcome)["error"])
    assert lab.post(item) == {"accepted": True}
    assert "duplicate post" in str(lab.post(item)["error"])
    assert "is one of" in str(lab.post(["not", "an", "object"])["error"])
    lab.forecast_asked(eid)  # the lab says nothing: recorded as a deviation once waited for
    assert "late post" in str(lab.post(outcome)["error"])
    recorded = lab.unrecorded()
    assert [r["accepted"] for r in recorded] == [False, False, False, True, False, False, True,
                                                  False]  # fmt: skip
    assert recorded[5]["post"] == {"raw": "['not', 'an', 'object']"}
    assert lab.evaluator[eid]["evidence"]["xrd_scan"] == [{"item_id": "a"}]
    assert lab.unrecorded() == []


def _lab(spec: EnvironmentSpec, base: str, answers: list[tuple[int, str]]) -> None:
    """A lab posting the spec's record for each experiment the campaign waits for, with bad
    requests around the first one; `answers`: (status, error) of each bad request."""
    token, asked, record = TOKEN, set(), EmulatedLab(spec, print, 0.0, False, 0.0, 0)
    posts = f"{base}/posts"
    for _ in range(3000):
        status, body = lab_request(f"{base}/awaiting", token)
        if status in (0, 404) and asked:
            return  # the campaign is over
        for eid in body.get("awaiting", []) if status == 200 else []:
            if not asked:
                for bad_token, sent in (("wrong", b"{}"), (token, b"{not json"),
                                        (token, json.dumps({"post": "outcome",
                                                            "experiment_id": "nope"}).encode())):  # fmt: skip
                    code, answer = lab_request(posts, bad_token, sent)
                    answers.append((code, str(answer.get("error"))))
            asked.add(eid)
            for post in record.posts(eid):
                code, answer = lab_request(posts, token, json.dumps(post).encode())
                answers.append((code, str(answer.get("error"))))
            if len(asked) == 1:
                code, answer = lab_request(posts, token, json.dumps(post).encode())
                answers.append((code, str(answer.get("error"))))
        time.sleep(0.01)


def test_serve_takes_a_labs_posts_and_records_every_refusal(
    serve_with_lab: ServeWithLab,
) -> None:
    bad, _ = serve_with_lab(_lab)
    assert [a[0] for a in bad] == [401, 400, 404, 409], bad
    assert "duplicate post" in bad[3][1]


@pytest.mark.parametrize(
    ("token", "argv", "words"),
    [("", [], "LABREPLAY_LIVE_TOKEN"), (TOKEN, ["--host", "0.0.0.0"], "--allow-remote")],
)
def test_serve_refuses_no_token_and_a_remote_bind_unless_asked(
    campaign_specs_source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    token: str,
    argv: list[str],
    words: str,
) -> None:
    monkeypatch.setenv("LABREPLAY_LIVE_TOKEN", token)
    store = tmp_path / "live.sqlite"
    code, _, err = cli("campaign", "live", "serve", "--specs", str(campaign_specs_source),
                       "--store", str(store), *argv)  # fmt: skip
    assert code == 2 and words in err and len(err.splitlines()) == 1
    assert not store.exists()
