"""A live run's lab posts, as the chain records them, read back as the evaluator record its
experiments are revealed and scored from (the env while it plays, `branch_metrics` after:
the scores and `store verify` need the store alone)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from labreplay.sdk import MISSING_TAG
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.views import EvaluatorRecord

LAB_KIND = "lab"  # the event kind of one lab post (accepted or refused)
POSTS = ("evidence", "outcome", "deviation")  # what a lab posts about a selected experiment


def experiment_record(
    posts: Sequence[JsonObject], kinds: Iterable[str], final: bool
) -> EvaluatorRecord:
    """One experiment's evaluator record from its accepted posts, in arrival order. Once its
    result is in (`final`: an outcome or a deviation), a kind the lab posted nothing of reads
    as none recorded; before, as nothing yet. A deviation without outcome has no label (the
    experiment is left out of the scores, like a recorded experiment without one)."""
    evidence: dict[str, object] = {}
    items: dict[str, list[JsonValue]] = {}
    outcome: JsonValue = {"valid": None}
    why = "not posted by the lab"
    for post in posts:
        if post["post"] == "evidence":
            if "missing" in post:
                evidence[str(post["kind"])] = {MISSING_TAG: str(post["missing"])}
            else:
                evidence[str(post["kind"])] = items.setdefault(str(post["kind"]), [])
                items[str(post["kind"])].append(post["item"])
        elif post["post"] == "outcome":
            outcome = post["outcome"]
        else:
            why = f"experiment {post['kind']}: {post.get('detail', '')}".rstrip(": ")
    for kind in kinds:
        evidence.setdefault(kind, {MISSING_TAG: why} if final else [])
    return {"evidence": evidence, "outcome": dict(outcome) if isinstance(outcome, dict) else {}}


def lab_evaluator(
    events: Sequence[Mapping[str, object]],
    evaluator: Mapping[str, EvaluatorRecord],
    kinds: Iterable[str],
) -> Mapping[str, EvaluatorRecord]:
    """`evaluator` with each experiment a live run's lab posted about read from its posts (a
    replay has none: `evaluator` unchanged)."""
    posts: dict[str, list[JsonObject]] = {}
    for event in events:
        payload = event["payload"]
        if event["kind"] == LAB_KIND and isinstance(payload, dict) and payload["accepted"]:
            post = payload["post"]
            posts.setdefault(str(post["experiment_id"]), []).append(post)
    if not posts:
        return evaluator
    wanted = tuple(kinds)
    return {**evaluator, **{e: experiment_record(p, wanted, True) for e, p in posts.items()}}


__all__ = ["LAB_KIND", "POSTS", "experiment_record", "lab_evaluator"]
