"""The campaign conversation (`lr-llm-prompts-4`, `llm_prompts.Conversation`) shows the agent
what one full-state message per turn showed: at every turn of a played campaign the state is
rebuilt from the conversation's messages alone (the restart's CAMPAIGN, HISTORY and NOW, then
each later message's changes) and must equal the full-state rendering of that turn; the bayes
reference agent played through the conversation makes the same decisions and scores."""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from labreplay.sdk import canonical_json
from labreplay.suites.campaign.agents import BayesAgent
from labreplay.suites.campaign.llm_prompts import (
    Conversation,
    PromptLayout,
    campaign_messages,
    checkpoint_messages,
    compact,
)
from labreplay.suites.campaign.runner import run_assignment_branches

TURN_ONLY = {"phase", "step", "result_of_previous_action"}


def _merge(shown: Any, change: Any) -> Any:
    """`shown` updated by a NOW message's `change` (objects by key, recursively)."""
    if isinstance(shown, dict) and isinstance(change, dict):
        return {**shown, **{k: _merge(shown.get(k), v) for k, v in change.items()}}
    return change


def _after(lines: list[str], header: str) -> list[str]:
    return lines[next(i for i, line in enumerate(lines) if line.startswith(header)) + 1 :]


def rebuilt(messages: list[dict[str, str]]) -> tuple[str, list[str], dict[str, Any]]:
    """(CAMPAIGN text, HISTORY lines, NOW) as a reader of `messages` alone knows them."""
    campaign = messages[0]["content"].split("CAMPAIGN (the same all campaign long):\n", 1)[1]
    first = messages[1]["content"].split("\n")
    history = _after(first, "HISTORY")
    history = history[: history.index("NOW:")]
    now = json.loads(_after(first, "NOW:")[0])
    assert [m["role"] for m in messages[2:]] == ["assistant", "user"] * ((len(messages) - 2) // 2)
    for message in messages[3::2]:
        lines = message["content"].split("\n")
        now = _merge(now, json.loads(_after(lines, "NOW (what changed")[0]))
        for line in lines:
            if line.startswith("NO LONGER IN THE STATE"):
                for *parents, key in json.loads(line.split(": ", 1)[1]):
                    holder = now
                    for name in parents:
                        holder = holder[name]
                    del holder[key]
    return campaign, history, now


class ThroughTheChat(BayesAgent):
    """The bayes reference, each turn rendered as the LLM agent renders it; the state the
    conversation shows is checked against the full-state rendering before the action is
    taken (and kept in the conversation, as the LLM agent keeps its reply)."""

    def reset(self, seed: int) -> None:
        super().reset(seed)
        self.chat, self.full = Conversation(), PromptLayout()

    def _check(self, messages: list[dict[str, str]], state: Any, now: Mapping[str, Any]) -> None:
        campaign, history, turn = self.full.render(state)
        got_campaign, got_history, got_now = rebuilt(messages)
        assert (got_campaign, got_history) == (campaign, history)
        expected = json.loads(canonical_json(compact({**turn, **now})))  # as rendered
        assert {k: v for k, v in got_now.items() if k in expected} == expected
        assert set(got_now) - set(expected) <= TURN_ONLY

    def act(self, observation: Any) -> Any:
        messages = campaign_messages(observation, self.chat)
        last = observation.get("last_result")
        now = {"phase": observation["phase"], "step": observation["step"],
               "result_of_previous_action": last if last is not None else "none (first turn)"}  # fmt: skip
        self._check(messages, observation["state"], now)
        action = super().act(observation)
        self.chat.answered(action)
        return action

    def forecast(self, snapshot: Any) -> Any:
        self._check(checkpoint_messages(snapshot, self.chat), snapshot["state"], {})
        return super().forecast(snapshot)


def _decisions(events: list[dict[str, Any]]) -> list[Any]:
    return [e["payload"] for e in events if e["kind"] in ("action", "checkpoint")]


def test_the_conversation_shows_every_turn_the_full_state_and_bayes_plays_the_same(pg_specs):
    long1 = next(s for s in pg_specs if s.body["assignment"]["id"] == "long-1")
    direct = run_assignment_branches(long1, BayesAgent, None, 0)
    chat = run_assignment_branches(long1, ThroughTheChat, None, 0)
    assert sum(len(_decisions(b.events)) for b in direct.values()) > 100
    for branch, played in direct.items():
        assert _decisions(chat[branch].events) == _decisions(played.events), branch
        assert chat[branch].metrics == played.metrics, branch


def test_a_conversation_extends_the_previous_request_and_restarts_per_experiment(pg_specs):
    """Within an experiment each request begins with the previous one and its answer; a
    closed experiment restarts it from the whole state, the CAMPAIGN message unchanged; a
    schema already given is referred to by its label."""
    long1 = next(s for s in pg_specs if s.body["assignment"]["id"] == "long-1")
    sent: list[list[dict[str, str]]] = []

    class Recording(ThroughTheChat):
        def act(self, observation: Any) -> Any:
            sent.append(campaign_messages(observation, self.chat))
            return super().act(observation)

    run_assignment_branches(long1, Recording, None, 0, ())
    restarts = [m for m in sent if len(m) == 2]
    assert 1 < len(restarts) < len(sent) / 2
    assert all(m[0] == sent[0][0] for m in sent)  # the same CAMPAIGN message throughout
    for before, after in itertools.pairwise(sent):
        if len(after) > 2:
            assert after[: len(before)] == before and after[len(before)]["role"] == "assistant"
    assert any("(given above)" in m[-1]["content"] for m in sent)
