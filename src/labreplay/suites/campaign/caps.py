"""Harness caps on a campaign branch's policy turns, and the record of every cap a run had.

Submitting a forecast spends no budget, so a policy that re-sends a valid `submit_forecast`
would never end. The harness bounds the policy turns (calls of `act`) of a branch and of each
experiment, by default a declared multiple of the legal actions the budgets allow:

    legal actions per branch     = 4 * experiments + evidence + 2 * reviews + 1
        (select, prior forecast, close, update forecast per experiment; one per inspection;
         a review and its forecast update; stop)
    legal actions per experiment = 4 + evidence kinds + 2 * reviews
    cap                          = POLICY_TURN_MULTIPLE * legal actions

A branch that reaches one ends `failed`, the cap named, its calls accounted; rerunning with a
larger cap (or none) resumes it. The model-spending caps (`--max-calls`, `--max-tokens-total`,
`--max-time`) live with the LLM client (`labreplay.agents.llm_caps`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labreplay.sdk.agents import CapReached
from labreplay.suites.campaign.protocol import EVIDENCE_KINDS
from labreplay.suites.campaign.views import SpecBody

POLICY_TURN_MULTIPLE = 3


def policy_turn_caps(body: SpecBody) -> dict[str, int]:
    budgets = body["budgets"]
    experiments, evidence = int(budgets["experiments"]), int(budgets["evidence"])
    reviews = int(budgets["reviews"])
    per_branch = 4 * experiments + evidence + 2 * reviews + 1
    per_experiment = 4 + len(EVIDENCE_KINDS) + 2 * reviews
    return {
        "policy_turns_per_branch": POLICY_TURN_MULTIPLE * per_branch,
        "policy_turns_per_experiment": POLICY_TURN_MULTIPLE * per_experiment,
    }


class TurnCounter:
    """Counts a branch's policy turns; `check` raises `CapReached` past a cap."""

    def __init__(self, caps: Mapping[str, int]) -> None:
        self.caps = dict(caps)
        self.turns = 0
        self.in_experiment = 0
        self._open: str | None = None

    def turn(self, open_experiment: str | None) -> None:
        if open_experiment != self._open:
            self._open, self.in_experiment = open_experiment, 0
        self.turns += 1
        self.in_experiment += 1
        branch_cap = self.caps["policy_turns_per_branch"]
        experiment_cap = self.caps["policy_turns_per_experiment"]
        if self.turns > branch_cap:
            raise CapReached(
                f"policy turns per branch {branch_cap}", f"{self.turns - 1} turns taken"
            )
        if open_experiment is not None and self.in_experiment > experiment_cap:
            raise CapReached(
                f"policy turns per experiment {experiment_cap}",
                f"{self.in_experiment - 1} turns on {open_experiment}",
            )


def agent_caps(agent: object) -> dict[str, Any]:
    """The model-spending caps of an (LLM) agent, or {} for agents without any."""
    inner = getattr(agent, "inner", agent)
    meter = getattr(getattr(inner, "client", None), "meter", None)
    caps = getattr(meter, "caps", None)
    as_params = getattr(caps, "as_params", None)
    return dict(as_params()) if callable(as_params) else {}
