"""A record card's reference learner and agent-facing text (issue 48, items 1-2).

On the shipped example cards: the context-trained model (a logistic regression over the card's
descriptors) scores above the base-rate forecaster and tells held-out queries apart; a
know-nothing agent (context base rates) shows no skill over it; no solid-state wording reaches
the agent of a table. The Precursor Genome keeps its text (and, in test_card_pg_hashes, its
spec hashes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labreplay.sdk import canonical_json
from labreplay.suites.campaign.agents import base_rate_forecast
from labreplay.suites.campaign.board_rows import ci
from labreplay.suites.campaign.ceiling import context_model, context_score
from labreplay.suites.campaign.env import RULES, CampaignEnv
from labreplay.suites.campaign.learner import CardModel, reference_model
from labreplay.suites.campaign.llm_prompts import (
    CAMPAIGN_POLICY,
    CONTEXT_ROWS_SHOWN,
    campaign_messages,
    checkpoint_messages,
    compact,
)
from labreplay.suites.campaign.metrics import panel_loss
from labreplay.suites.campaign.model import to_forecast

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "cards"
CARDS = ["buchwald-hartwig-ahneman2018", "edbo-direct-arylation-shields2021"]
SOLID_STATE = re.compile(
    r"calcin|precursor|\bphases?\b|xrd|expert review|physically valid|characteri[sz]|"
    r"solid.state|furnace|refinement|reaction categor|materials.synthesis",
    re.IGNORECASE,
)


@pytest.fixture(scope="module", params=CARDS)
def card_specs(request, compiled_campaign):
    return compiled_campaign(record_card=EXAMPLES / f"{request.param}.card.toml", seed=0)[1]


def _base_rate_score(body) -> float:
    f = base_rate_forecast(body["context_rows"], body["categories"], body["record"]["table"])
    forecasts = {q["experiment_id"]: f for q in body["queries"]}
    return -panel_loss(forecasts, body["evaluator"], float(body["eps"]))[0]


def test_context_model_beats_base_rate_and_tells_queries_apart(card_specs):
    context = [context_score(s.body) for s in card_specs]
    base = [_base_rate_score(s.body) for s in card_specs]
    print(
        f"{card_specs[0].body['record']['source']}: context-trained model "
        f"{sum(context) / len(context):.4f}, base-rate forecaster {sum(base) / len(base):.4f}"
    )
    assert sum(context) / len(context) > sum(base) / len(base)
    for spec in card_specs:
        model = context_model(spec.body)
        assert isinstance(model, CardModel)
        forecasts = {
            json.dumps(to_forecast(model.predict(q["descriptors"])), sort_keys=True)
            for q in spec.body["queries"]
        }
        assert len(forecasts) > 1, spec.spec_id


def test_know_nothing_agent_shows_no_skill_over_context(card_specs):
    skill = [_base_rate_score(s.body) - context_score(s.body) for s in card_specs]
    interval = ci(skill, 0, "skill-over-context", "know-nothing")
    assert interval is not None and interval["lo"] <= 0.0


def test_a_cards_board_says_what_the_context_model_read(card_specs, tmp_path):
    """Issue 48: under a card's board (and in its JSON), the reference rows' learner and the
    descriptors it read, taken from the stored specs' declaration (`record.table`)."""
    import io

    from rich.console import Console

    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.agents import NoEvidenceAgent
    from labreplay.suites.campaign.board_export import render
    from labreplay.suites.campaign.board_text import print_board
    from labreplay.suites.campaign.leaderboard import leaderboard
    from labreplay.suites.campaign.runner import run_branch

    # one long run: the long table is the one read below (a short run only adds its own table)
    chosen = [s for s in card_specs if s.body["assignment"]["id"] == "long-1"]
    with Store(tmp_path / "runs.sqlite") as store:
        for spec in chosen:
            run_branch(spec, NoEvidenceAgent(), 0, "adaptive", store)
        board = leaderboard(store)
    declared = chosen[0].body["record"]["table"]
    reading = board["tables"]["long"]["context_model"]
    names = ", ".join(declared["descriptors"])
    assert reading == f"{declared['learner']} (descriptors read: {names})"
    out = io.StringIO()
    print_board(Console(file=out, width=400), board)
    said = " ".join(out.getvalue().split())
    assert f"reference rows on this card: the context-trained model is a {reading}" in said
    assert reading in " ".join(render(board, "markdown").split())


def test_no_failure_class_without_a_validity_column(card_specs):
    body = card_specs[0].body
    assert body["record"]["table"]["validity"] is False
    model = context_model(body)
    assert "physical_failure" not in model.classes
    assert to_forecast(model.predict(body["queries"][0]["descriptors"]))["p_valid"] == 1.0
    assert (
        base_rate_forecast(body["context_rows"], body["categories"], {"validity": False})["p_valid"]
        == 1.0
    )
    with_validity = CardModel(body["categories"], {**body["record"]["table"], "validity": True})
    assert with_validity.classes[-1] == "physical_failure"


def test_learning_reaches_queries_that_share_descriptors():
    """A learned outcome is one more observation of the same logistic model (a Laplace
    posterior step): it moves most the queries of the same new level (a held-out group the
    context never saw), less those sharing only a level seen in context, and is taken back
    exactly."""
    rows = [
        {"descriptors": {"a": f"A{i % 3}", "b": f"B{i % 2}", "t": 20.0 + i % 4,
                         "groups": [f"a=A{i % 3}"]},
         "outcome": {"valid": True, "category": "hi" if i % 3 == 0 else "lo"}}
        for i in range(60)
    ]  # fmt: skip
    model = CardModel(["lo", "hi"], {"descriptors": ["a", "b", "t"], "validity": False})
    model.fit_context(rows)
    same_group = {"a": "A9", "b": "B1", "t": 23.0}
    shares_b = {"a": "A8", "b": "B0", "t": 23.0}
    apart = {"a": "A8", "b": "B1", "t": 23.0}
    queries = [same_group, shares_b, apart]
    # a number beyond the context's range (t: 20-23) reads as the nearest edge: no extrapolation
    assert model.predict({**apart, "t": 1e6}) == model.predict(apart)
    assert model.predict({**apart, "t": -5.0}) == model.predict({**apart, "t": 20.0})
    before = [model.predict(q)["hi"] for q in queries]
    with model.trying({"a": "A9", "b": "B0", "t": 21.0}, {"hi": 1.0}, 3.0):
        moved = [model.predict(q)["hi"] - p for q, p in zip(queries, before, strict=True)]
    assert moved[0] > moved[1] > abs(moved[2]) >= 0.0
    assert [model.predict(q)["hi"] for q in queries] == before
    model.learn({"a": "A9", "b": "B0", "t": 21.0}, {"hi": 1.0}, 3.0)
    assert model.predict(same_group)["hi"] - before[0] == pytest.approx(moved[0], rel=1e-9)
    # the fit is kept for the next caller (runs and the board refit one spec often): a model
    # handed out again has learned nothing from this one
    declared = {"descriptors": ["a", "b", "t"], "validity": False}
    first = reference_model(["lo", "hi"], rows, declared)
    first.learn({"a": "A9", "b": "B0", "t": 21.0}, {"hi": 1.0}, 3.0)
    again = reference_model(["lo", "hi"], rows, declared)
    assert [again.predict(q)["hi"] for q in queries] == pytest.approx(before, rel=1e-9)


def _agent_texts(spec) -> tuple[list[str], list[str]]:
    """(the texts written for the agent, the whole LLM messages) at the first turn and the
    first checkpoint."""
    env = CampaignEnv(spec)
    env.reset(0)
    obs = env.observation()
    snap = env.checkpoint_snapshot()
    schemas = [obs["action_schema"], snap["response_schema"]]
    descriptions = re.findall(r'"description": "([^"]*)"', json.dumps(schemas))
    messages = [*campaign_messages(obs), *checkpoint_messages(snap)]
    return [obs["rules"], snap["instructions"], *descriptions], [m["content"] for m in messages]


def test_table_text_is_the_cards_own(card_specs):
    texts, messages = _agent_texts(card_specs[0])
    rules = texts[0]
    assert "high_yield: yield \u2265 50" in rules and "yield_assay (price 1): the measured" in rules
    assert "outcome_category (supported by yield_assay)" in rules
    assert "high_yield: yield \u2265 50" in texts[1]
    # the protocol's own keys ("phase" of an observation) are not wording about the science
    for text in [*texts, *(m.replace('"phase"', "") for m in messages)]:
        assert not SOLID_STATE.search(text), SOLID_STATE.search(text)


def test_precursor_genome_text_unchanged(pg_specs):
    texts, messages = _agent_texts(pg_specs[0])
    assert texts[0] == RULES
    assert texts[1] == (
        "Forecast every held-out query: P(physically valid and characterizable) and, if "
        "valid, a distribution over the reaction categories. This does not advance the "
        "campaign or spend budget."
    )
    assert set(texts[2:]) >= {
        "P(physically valid and characterizable)",
        "distribution over reaction categories if valid (sums to 1)",
    }
    assert f"RULES: {RULES}" in messages[0] and messages[0].startswith(f"{CAMPAIGN_POLICY}\n")
    assert "RULES NOW" not in messages[1]


def test_long_context_is_summarised_in_the_prompt(card_specs):
    """An LLM prompt holds a table's thousands of context rows as their outcome counts (the
    spec's context summary, per group), not the rows, and says so; at CONTEXT_ROWS_SHOWN rows
    the rows stay. The state a Python agent sees keeps them."""
    env = CampaignEnv(card_specs[0])
    env.reset(0)
    obs = env.observation()
    rows = obs["state"]["context"]
    assert isinstance(rows, list) and len(rows) > CONTEXT_ROWS_SHOWN
    prompt = campaign_messages(obs)[0]["content"]  # the CAMPAIGN part closes the system message
    assert len(prompt) < 60_000
    assert f"the state's {len(rows)} context rows are summarised" in prompt
    summary = card_specs[0].body["context_summary"]
    assert canonical_json(summary["outcome_counts"]) in prompt
    assert canonical_json(compact({"per_group": summary["per_precursor"]}))[1:-1] in prompt
    assert f'"context":{{"n_experiments":{len(rows)},' in prompt  # no rows
    obs["state"]["context"] = rows[:CONTEXT_ROWS_SHOWN]
    kept = campaign_messages(obs)[0]["content"]
    assert (
        "rows are summarised" not in kept
        and '"context":{"columns":["experiment_id","descriptors.' in kept
    )
