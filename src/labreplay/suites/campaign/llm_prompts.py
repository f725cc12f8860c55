"""What the LLM campaign agent sends: our policy prompt and the deterministic rendering of
observations and checkpoint snapshots into chat messages.

Observations are rendered as canonical JSON (sorted keys, no whitespace: compact and
byte-stable), with one twist for long campaigns: top-level state keys that have not changed
since the campaign's first turn come first and keys that have changed come after them, in the
order they first changed. Successive prompts then share a long, stable prefix, which servers
with prefix caching (llama.cpp, vLLM, OpenAI prompt caching) reuse instead of re-reading it.
The layout depends only on the sequence of observations since reset, so a replayed campaign
renders the same bytes (and hits the same response-cache entries).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from labreplay.sdk import canonical_json

PROMPT_VERSION = "lr-llm-prompts-2"

# One system prompt for both campaign tasks, and the state before the task in every message: an
# action turn and a panel checkpoint then share their longest part as a common prefix.
CAMPAIGN_POLICY = (
    "You work for a materials-synthesis campaign that runs on a fixed budget. Each message shows "
    "the campaign state you are allowed to see, then gives you one task: either choose the "
    "campaign's next action (you are its decision-making policy) or forecast held-out "
    "experiments (this changes nothing and costs no budget). Use only the visible state and "
    "assume nothing about results you have not been shown. Answer with exactly one JSON object "
    "that satisfies the JSON Schema given with the task: no explanations, no markdown, no "
    "second object."
)


def _json(value: Any) -> str:
    return canonical_json(value)


class StateLayout:
    """Remembers which top-level state keys changed since reset (see the module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._first: dict[str, str] | None = None
        self._volatile: list[str] = []

    def render(self, state: Mapping[str, Any]) -> tuple[str, str]:
        """(stable part, changing part), each a JSON object with canonical values."""
        rendered = {str(k): _json(v) for k, v in state.items()}
        if self._first is None:
            self._first = dict(rendered)
        for key in sorted(rendered):
            changed = key not in self._first or self._first[key] != rendered[key]
            if changed and key not in self._volatile:
                self._volatile.append(key)
        volatile = set(self._volatile)
        stable_keys = [k for k in sorted(rendered) if k not in volatile]
        changing_keys = [k for k in self._volatile if k in rendered]
        return _object(stable_keys, rendered), _object(changing_keys, rendered)


def _object(keys: list[str], rendered: Mapping[str, str]) -> str:
    # Same bytes as canonical_json for these keys in this order.
    items = ",".join(f"{json.dumps(k, ensure_ascii=False)}:{rendered[k]}" for k in keys)
    return "{" + items + "}"


def campaign_messages(
    observation: Mapping[str, Any], layout: StateLayout | None = None
) -> list[dict[str, str]]:
    """The chat messages for one campaign turn. Without a layout (or on a campaign's first
    turn) the whole state is one canonical JSON object."""
    stable, changing = (layout or StateLayout()).render(observation.get("state", {}))
    last = observation.get("last_result")
    # Stable parts first, per-turn parts last (prefix caching, see the module docstring).
    user = "\n".join(
        [
            *_state_lines(stable, changing),
            "TASK: choose the campaign's next action.",
            f"RULES: {observation.get('rules', '')}",
            "PERMITTED ACTIONS NOW (JSON Schema):",
            _json(observation.get("action_schema", {})),
            f"PHASE: {observation.get('phase')}",
            f"STEP: {observation.get('step')}",
            "RESULT OF YOUR PREVIOUS ACTION: "
            + (_json(last) if last is not None else "none (this is the first turn)"),
            "Reply with one JSON object: the action you take now.",
        ]
    )
    return [{"role": "system", "content": CAMPAIGN_POLICY}, {"role": "user", "content": user}]


def _state_lines(stable: str, changing: str) -> list[str]:
    return [
        "VISIBLE STATE, PART UNCHANGED SINCE THE CAMPAIGN STARTED:",
        stable,
        "VISIBLE STATE, PART THAT HAS CHANGED:",
        changing,
    ]


def checkpoint_messages(
    snapshot: Mapping[str, Any], layout: StateLayout | None = None
) -> list[dict[str, str]]:
    """The chat messages for one evaluator panel checkpoint."""
    stable, changing = (layout or StateLayout()).render(snapshot.get("state", {}))
    user = "\n".join(
        [
            *_state_lines(stable, changing),
            f"TASK: {snapshot.get('instructions', '')}",
            "EXPERIMENTS TO FORECAST:",
            _json(snapshot.get("panel", [])),
            "RESPONSE SCHEMA (JSON Schema):",
            _json(snapshot.get("response_schema", {})),
            "Reply with one JSON object holding a forecast for every experiment listed.",
        ]
    )
    return [{"role": "system", "content": CAMPAIGN_POLICY}, {"role": "user", "content": user}]
