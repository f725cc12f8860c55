"""The failed-run rule, once for every suite (`docs/metrics.md`: the fourth round's decisions
and its Changes section).

A run is `failed` (stored, never ranked, the command exits 1) when its agent could not act:
every policy call failed, or more than `FAILED_SHARE` of its policy calls, or of its checkpoint
forecasts, failed or fell back; or the harness stopped it (a cap, an agent that stopped
answering). The cause is named with one of `CAUSES`, followed by the detail.

A *policy call* is one decision asked of the agent: a campaign action, a conditions answer, a
configsearch suggestion. It *failed* when the agent produced no usable decision: its model
call failed (`model calls failed`), its reply was unusable (`replies invalid`: no JSON, NaN,
a non-JSON value), or it raised (`agent raised`). A well-formed decision the environment
rejects (an unknown candidate, a wrong option) is the agent's answer: scored, not a failure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

FAILED_SHARE = 0.5  # declared: more than half of the policy calls (or checkpoints) failed

MODEL_CALLS_FAILED = "model calls failed"
REPLIES_INVALID = "replies invalid"
AGENT_RAISED = "agent raised"
AGENT_UNAVAILABLE = "agent stopped answering"
TURN_CAP = "turn cap"
TIME_CAP = "time cap"
TOKEN_CAP = "token cap"
COST_CAP = "cost cap"
CALL_CAP = "call cap"
CHECKPOINTS_FAILED = "checkpoints failed"
CAUSES = (
    MODEL_CALLS_FAILED,
    REPLIES_INVALID,
    AGENT_RAISED,
    AGENT_UNAVAILABLE,
    TURN_CAP,
    TIME_CAP,
    TOKEN_CAP,
    COST_CAP,
    CALL_CAP,
    CHECKPOINTS_FAILED,
)


def cap_kind(cap: str) -> str:
    """The named cause of a cap (`--max-time 5 (...)` -> `time cap`, `--max-cost 2` and
    `--max-total-cost 9` -> `cost cap`); a cap on calls, or one not named, is a call cap."""
    text = cap.lower()
    if "cost" in text:
        return COST_CAP
    if "turn" in text:
        return TURN_CAP
    if "time" in text:
        return TIME_CAP
    if "token" in text:
        return TOKEN_CAP
    return CALL_CAP


def call_failed(call: Mapping[str, object]) -> str | None:
    """Why one model call gave no usable reply (a named cause), or None."""
    if call.get("error"):
        return MODEL_CALLS_FAILED
    if call.get("parse_error"):
        return REPLIES_INVALID
    return None


def decision_failed(error: object, calls: Sequence[Mapping[str, object]] = ()) -> str | None:
    """Why one policy call failed, from the error its harness recorded (None: no error) and
    the model calls made for it: the last call decides (earlier ones may have been repaired)."""
    if not error:
        return None
    text = str(error)
    if "() raised " in text:
        return AGENT_RAISED
    if calls:
        return call_failed(calls[-1]) or REPLIES_INVALID
    return REPLIES_INVALID


class HealthCounts(TypedDict):
    """A run's policy calls and checkpoints, asked and failed (`RunHealth.to_json`)."""

    policy_calls: int
    policy_failures: dict[str, int]  # cause -> failed policy calls
    checkpoints: int
    checkpoint_failures: int


@dataclass
class RunHealth:
    """What the failed-run rule reads: policy calls and checkpoints asked and failed, and a
    stop by the harness (a cap or an agent that stopped answering)."""

    policy_calls: int = 0
    policy_failures: Counter[str] = field(default_factory=Counter)
    first_failure: dict[str, str] = field(default_factory=dict)  # cause -> first detail
    checkpoints: int = 0
    checkpoint_failures: int = 0
    harness_stop: str | None = None  # the harness's own cause ("time cap: --max-time 5 ...")

    def policy(self, cause: str | None, detail: object = None) -> None:
        """Count one policy call; `cause` names why it failed (None: it did not)."""
        self.policy_calls += 1
        if cause is not None:
            self.policy_failures[cause] += 1
            self.first_failure.setdefault(cause, " ".join(str(detail or cause).split())[:300])

    def checkpoint(self, failed: bool) -> None:
        self.checkpoints += 1
        self.checkpoint_failures += int(failed)

    def to_json(self) -> HealthCounts:
        return {
            "policy_calls": self.policy_calls,
            "policy_failures": dict(sorted(self.policy_failures.items())),
            "checkpoints": self.checkpoints,
            "checkpoint_failures": self.checkpoint_failures,
        }


@dataclass(frozen=True)
class Verdict:
    """`failed` with its named cause (`kind`, one of `CAUSES`) and detail, or `complete`."""

    status: str
    kind: str | None = None
    cause: str | None = None


def judge(health: RunHealth, share: float = FAILED_SHARE) -> Verdict:
    """The one failed-run rule (see the module docstring)."""
    if health.harness_stop is not None:
        stopped = health.harness_stop
        kind = next((c for c in CAUSES if stopped.startswith(c)), AGENT_UNAVAILABLE)
        return Verdict("failed", kind, stopped)
    failed = sum(health.policy_failures.values())
    if health.policy_calls and (
        failed == health.policy_calls or failed > share * health.policy_calls
    ):
        kind = health.policy_failures.most_common(1)[0][0]
        every = "every policy call" if failed == health.policy_calls else "most policy calls"
        detail = health.first_failure.get(kind, kind)
        return Verdict(
            "failed",
            kind,
            f"{kind}: {every} failed ({failed} of {health.policy_calls}); first: {detail}",
        )
    if health.checkpoints and health.checkpoint_failures > share * health.checkpoints:
        return Verdict(
            "failed",
            CHECKPOINTS_FAILED,
            f"{CHECKPOINTS_FAILED}: {health.checkpoint_failures} of {health.checkpoints} "
            "checkpoint forecasts failed or fell back",
        )
    return Verdict("complete")


__all__ = [
    "AGENT_RAISED",
    "AGENT_UNAVAILABLE",
    "CALL_CAP",
    "CAUSES",
    "CHECKPOINTS_FAILED",
    "COST_CAP",
    "FAILED_SHARE",
    "MODEL_CALLS_FAILED",
    "REPLIES_INVALID",
    "TIME_CAP",
    "TOKEN_CAP",
    "TURN_CAP",
    "RunHealth",
    "Verdict",
    "call_failed",
    "cap_kind",
    "decision_failed",
    "judge",
]
