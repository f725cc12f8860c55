"""What a lab may post (the checks that do not depend on the campaign's order), and a live
run's lab posts, as the chain records them, read back as the evaluator record its experiments
are revealed and scored from (the env while it plays, `branch_metrics` after: the scores and
`store verify` need the store alone) and as the run's versioned record (`live_record`)."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import datetime

from labreplay.sdk import MISSING_TAG
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.campaign.views import EvaluatorRecord

LAB_KIND = "lab"  # the event kind of one lab post (accepted or refused)
POSTS = ("evidence", "outcome", "deviation", "record")  # what a lab posts
SELECTION_POST = "selection"  # the lab's own selection (only with --selections lab)
# A failed or aborted experiment has no outcome (no_result: the service waited in vain); an
# operator intervention or an instrument state change is a note, and the experiment goes on.
RESULT_DEVIATIONS = ("failed", "aborted", "no_result")
LAB_DEVIATIONS = ("failed", "aborted", "operator_intervention", "instrument_state")
# What the SDL-1 paper's versioned record holds that only the lab knows (`record` posts).
RECORD_FIELDS = ("sample", "protocol", "instrument_state", "safety_rules", "verifier",
                 "commands", "telemetry", "raw_data")  # fmt: skip
RECORD_VERSION = "labreplay-live-record/1"
HARNESS_FIELDS = ("agent", "agent_params", "model", "isolation", "sandbox", "labreplay_version")
MAX_SKEW_S = 300.0  # a lab's `at` this far ahead of the service's clock is refused


def experiment_post(post: Mapping[str, object]) -> bool:
    """Whether an accepted post is part of its experiment's evaluator record (a note or a
    record post is not)."""
    kind = post.get("kind")
    return post["post"] in ("evidence", "outcome") or (
        post["post"] == "deviation" and kind in RESULT_DEVIATIONS
    )


def post_refusal(
    post: Mapping[str, object], known: Container[str], now: float
) -> tuple[int, str] | None:
    """The checks a post passes whatever the campaign has done: its `at` (recorded as sent,
    never used for order; too far ahead is clock skew), a deviation's kind, a note's
    experiment, a record post's fields."""
    if "at" in post:
        try:
            at = datetime.fromisoformat(str(post["at"]))
            ahead = at.timestamp() - now if at.tzinfo is not None else None
        except ValueError:
            ahead = None
        if ahead is None:
            return 400, "'at' is an ISO 8601 time with a UTC offset (2025-01-31T12:00:00+00:00)"
        if ahead > MAX_SKEW_S:  # the lab's clock is off: it is told so, not trusted
            return 400, (f"clock skew: 'at' is more than {MAX_SKEW_S:g} s ahead of the "
                         "service's clock (the order of arrival is the record's order)")  # fmt: skip
    if post["post"] == "record":
        fields = post.get("record")
        if not isinstance(fields, Mapping) or not fields or set(fields) - set(RECORD_FIELDS):
            return 400, f"a record post needs 'record': an object of {', '.join(RECORD_FIELDS)}"
    elif post["post"] == "deviation":
        if post.get("kind") not in LAB_DEVIATIONS:
            return 400, f"a deviation's 'kind' is one of {', '.join(LAB_DEVIATIONS)}"
        eid = post.get("experiment_id")
        if (
            not experiment_post(post)
            and eid is not None
            and (type(eid) is not str or eid not in known)
        ):
            return 404, f"unknown experiment {post['experiment_id']!r}"
    return None


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
        if event["kind"] != LAB_KIND or not isinstance(payload, dict) or not payload["accepted"]:
            continue
        if experiment_post(post := payload["post"]):
            posts.setdefault(str(post["experiment_id"]), []).append(post)
    if not posts:
        return evaluator
    wanted = tuple(kinds)
    return {**evaluator, **{e: experiment_record(p, wanted, True) for e, p in posts.items()}}


def live_record(events: Sequence[Mapping[str, object]]) -> JsonObject:
    """A live run's versioned record (the list of the SDL-1 paper), read from its chain alone:
    model and harness from the header, budgets from the reset, the lab's part from its
    `record` posts (a later post of a field replaces it; none posted: null), every deviation
    (notes included) and the final state from the `end` event (null: the run has not ended)."""
    first: dict[str, JsonValue] = {}
    lab: dict[str, JsonValue] = dict.fromkeys(RECORD_FIELDS)
    deviations: list[JsonValue] = []
    for event in events:
        kind, payload = str(event["kind"]), event["payload"]
        assert isinstance(payload, dict)
        first.setdefault(kind, payload)
        if kind == "end":
            first["end"] = payload
        post = payload.get("post") if kind == LAB_KIND and payload.get("accepted") else None
        if isinstance(post, dict) and post["post"] == "record":
            lab.update(post["record"])
        elif isinstance(post, dict) and post["post"] == "deviation":
            deviations.append(post)
    header = first.get("header")
    harness = dict(header) if isinstance(header, dict) else {}
    reset = first.get("reset")
    return {
        "version": RECORD_VERSION,
        "model_and_harness": {k: harness.get(k) for k in HARNESS_FIELDS},
        "spec": {k: harness.get(k) for k in ("spec_hash", "protocol", "seed", "branch")},
        **lab,
        "budgets": reset.get("budgets") if isinstance(reset, dict) else None,
        "deviations": deviations,
        "final_state": first.get("end"),
    }


__all__ = ["LAB_KIND", "POSTS", "experiment_record", "lab_evaluator", "live_record"]
