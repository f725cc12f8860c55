"""The campaign part of `labreplay.testing.check_agent`: schema, firewall and determinism.

The agent plays one branch twice on a canary-planted copy of the spec. Every action must satisfy
the schema it was shown (unless `strict=False`: a random agent's rejections are data), nothing
it is shown may carry a canary it did not pay for, and both plays must end on the same
trajectory hash.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from labreplay.sdk import canonical_json
from labreplay.sdk.agents import Agent
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonValue


class _Watch:
    """Wraps an agent: keeps everything it was shown and every schema violation."""

    def __init__(self, inner: Agent) -> None:
        self.inner, self.name = inner, inner.name
        self.seen: list[str] = []
        self.violations: list[str] = []

    def params(self) -> dict[str, JsonValue]:
        return dict(self.inner.params())

    def reset(self, seed: int) -> None:
        self.inner.reset(seed)

    def _check(self, value: object, schema: object, what: str) -> None:
        import jsonschema

        if not isinstance(value, Mapping):
            self.violations.append(f"{what} is {type(value).__name__}, not a JSON object")
            return
        try:
            jsonschema.validate(dict(value), schema)
        except jsonschema.ValidationError as exc:
            self.violations.append(f"{what}: {exc.message}")

    def act(self, observation: Mapping[str, object]) -> dict[str, object]:
        self.seen.append(canonical_json(observation))
        action = self.inner.act(observation)
        self._check(action, observation["action_schema"], "action")
        return action

    def forecast(self, snapshot: Mapping[str, object]) -> dict[str, object]:
        self.seen.append(canonical_json(snapshot))
        answer = self.inner.forecast(snapshot)
        self._check(answer, snapshot["response_schema"], "forecast")
        return answer


def agent_problems(
    make_agent: Callable[[], Agent], spec: EnvironmentSpec, seed: int, strict: bool = True
) -> list[str]:
    from labreplay.sdk.engine import AGENT_UNAVAILABLE, CAUSES
    from labreplay.suites.campaign.canaries import leaked, paid_canaries, plant_canaries
    from labreplay.suites.campaign.runner import run_branch

    # a cap or an agent that stopped answering, not the agent's own replies
    HARNESS_STOPS = {AGENT_UNAVAILABLE, *(c for c in CAUSES if c.endswith(" cap"))}

    planted, by_item = plant_canaries(spec)
    problems: list[str] = []
    heads = []
    for _ in range(2):
        agent = _Watch(make_agent())
        result = run_branch(planted, agent, seed, "adaptive")
        heads.append(result.head_hash)
        if result.status == "failed" and result.cause_kind in HARNESS_STOPS:
            # e.g. reset() raised: the harness ended the branch, failed
            problems.append(f"run: the branch failed: {result.cause}")
            break
        if strict and agent.violations:
            problems.append(f"schema: {agent.violations[0]} ({len(agent.violations)} in all)")
        paid = paid_canaries(result.events, by_item)
        for text in agent.seen:
            found = leaked(text, paid)
            if found:
                problems.append(f"firewall: shown {sorted(found)[:2]} without paying for it")
                break
    if len(heads) == 2 and heads[0] != heads[1]:
        problems.append("determinism: two plays with the same seed ended on different hashes")
    return problems
