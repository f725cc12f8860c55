"""Run a question agent over a question file and keep everything in the results store.

One run per (question-file sha256 as the spec, agent + params, seed). Each answer is an
event (raw answer, parsed answer, per-question scores) recorded through the shared recorder
(one hash chain bound to the question file's `EnvironmentSpec`); events are written in batches,
so a killed run resumes after its last stored batch. Run-level metrics go to `scores`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from labreplay.sdk import (
    sha256_file,
    sha256_json,
)
from labreplay.sdk.data import loads_strict
from labreplay.sdk.engine import (
    ContentMissing,
    EnvironmentSpec,
    Store,
)
from labreplay.sdk.events import JsonObject, JsonValue
from labreplay.suites.conditions.events import (
    AnswerEvent,
    AnswerResult,
    conditions_events,
)
from labreplay.suites.conditions.questions import Question
from labreplay.suites.conditions.scoring import AnswerKey, answer_key, score_answer
from labreplay.suites.conditions.summary import Summary, headline, summarise

if TYPE_CHECKING:
    from labreplay.suites.conditions.precedent_audit import Lift
    from labreplay.suites.conditions.robustness import UtilityAudit

SUITE = "conditions"
PROTOCOL = "rxnoptbench-questions"
PROTOCOL_VERSION = "1"
BATCH = 500


def question_spec(
    questions_path: Path, questions: Sequence[Question], subset: bool = False
) -> EnvironmentSpec:
    """The run spec of a question file: its sha256, size and the compile specs behind it --
    never its name, so byte-identical files under any name are one spec (one board row); for a
    `--limit` subset, also the sha256 of its question ids: each subset is its own run."""
    sha256 = sha256_file(questions_path)
    body: dict[str, object] = {
        "kind": "conditions-question-file",
        "sha256": sha256,
        "n_questions": len(questions),
        "compile_spec_hashes": sorted({str(q["meta"].get("spec_hash", "")) for q in questions}),
    }
    # questions compiled from modified data (--allow-modified-data) name the files; the run
    # spec keeps them (only when there are any, so other specs keep their hashes)
    unverified = sorted(
        {
            str(path)
            for q in questions
            for listed in [q["meta"].get("unverified_data")]
            if isinstance(listed, list)
            for path in listed
        }
    )
    if unverified:
        body["unverified_data"] = unverified
    spec_id = f"questions-{sha256[:16]}"
    if subset:
        ids_sha256 = sha256_json(sorted(str(q["id"]) for q in questions))
        body["question_ids_sha256"] = ids_sha256
        spec_id = f"{spec_id}-subset-{ids_sha256[:8]}"
    # the file's place travels with the spec (not hashed), so `run` needs no questions=PATH
    attached = {sha256: str(questions_path.resolve())}
    return EnvironmentSpec(SUITE, PROTOCOL, PROTOCOL_VERSION, spec_id, body, attached)


def answer_events(events: Iterable[Mapping[str, object]]) -> list[AnswerEvent]:
    """The answer events of a run (its header event aside)."""
    return [e for e in conditions_events(events) if e["kind"] == "answer"]


def _usage_columns(summary: Mapping[str, JsonValue]) -> JsonObject:
    """A run's model accounting on its board row (LLM runs only)."""
    usage = summary.get("usage")
    if not usage or not isinstance(usage, Mapping):  # a dict whenever the run called a model
        return {}
    return {
        "llm_calls": usage.get("calls"),
        "prompt_tokens": usage.get("prompt_tokens"),
        "completion_tokens": usage.get("completion_tokens"),
        "cached_tokens": usage.get("cached_tokens"),
        "invalid_replies": usage.get("invalid_replies"),
        "resolved_models": usage.get("resolved_models"),
        "cost_usd": usage.get("cost_usd"),  # absent: no price for the model (cost unknown)
    }


ReferenceLifts = dict[str, dict[str, dict[str, "Lift"]]]  # agent -> dataset -> metric -> lift


class Board(TypedDict):
    """The conditions leaderboard: one row per finished run (headline scores, usage), the
    utility audit and the precedent references per question file."""

    runs: list[dict[str, object]]
    # failed runs (never ranked): agent, question file, cause, and what their calls spent
    failed: list[dict[str, object]]
    utility_audit: dict[str, UtilityAudit]  # question file -> the audit over its runs
    unverified_data: list[str]  # question files compiled from modified data
    precedent_references: dict[str, ReferenceLifts]
    withheld_twins: dict[str, dict[str, int]]  # question file -> dataset -> twins withheld
    # question file -> the usual winner's headline scores on its runs' questions (a reference
    # row, never ranked; every run row carries its substrate-specific skill against it)
    usual_winner: dict[str, dict[str, float | None]]


def leaderboard(store: Store) -> Board:
    """Every finished conditions run, with its headline metrics, plus the over-agent utility
    robustness audit per question file (`robustness`)."""
    rows: list[dict[str, object]] = []
    unverified: dict[str, list[str]] = {}  # spec hash -> modified data files behind it
    files: dict[str, list[Question] | None] = {}  # spec hash -> its question file, if kept
    first: dict[str, tuple[int, list[Question]]] = {}  # question file -> first run's seed, file
    usual: dict[str, dict[str, float | None]] = {}
    audited: list[dict[str, object]] = []  # what the utility audit re-scores
    for run in store.runs(suite=SUITE, status="complete"):
        audited.append(
            {
                "run_id": run.run_id,
                "agent": run.agent,
                "seed": run.seed,
                "_spec_hash": run.spec_hash,
            }
        )
        scores = {k: v for k, v in store.scores(run.run_id).items() if k != "summary"}
        if run.spec_hash not in unverified:
            body = loads_strict(store.get_spec(run.spec_hash)).get("body", {})
            unverified[run.spec_hash] = list(body.get("unverified_data") or [])
            files[run.spec_hash] = stored_questions(store, str(body.get("sha256", "")))
        questions = files[run.spec_hash]
        skill: dict[str, object] = {}
        if questions is not None:
            skill, reference = _against_usual_winner(store, run.run_id, run.seed, questions)
            usual.setdefault(run.spec_id, reference)
            first.setdefault(run.spec_id, (int(run.seed), questions))
        rows.append(
            {
                "run_id": run.run_id,
                "agent": run.agent,
                "seed": run.seed,
                "question_file": run.spec_id,
                "spec_hash": run.spec_hash[:12],
                **scores,
                **skill,
                **_usage_columns(run.summary or {}),
                **(
                    {"unverified_data": unverified[run.spec_hash]}
                    if unverified[run.spec_hash]
                    else {}
                ),
            }
        )
    rows.sort(
        key=lambda r: (
            str(r["question_file"]),
            -_score(r.get("mc_all_score")),
            str(r["agent"]),
        )
    )
    from labreplay.suites.conditions.precedent_audit import reference_lifts, withheld_twins
    from labreplay.suites.conditions.robustness import leaderboard_audit

    audits = leaderboard_audit(store, audited)
    marked = sorted({str(r["question_file"]) for r in rows if r.get("unverified_data")})
    failed: list[dict[str, object]] = [
        {
            "run_id": run.run_id,
            "agent": run.agent,
            "seed": run.seed,
            "question_file": run.spec_id,
            **{key: (run.summary or {}).get(key) for key in ("cause", "cause_kind", "usage")},
        }
        for run in store.runs(suite=SUITE, status="failed")
    ]
    return {
        "runs": rows,
        "failed": failed,
        "utility_audit": audits,
        "unverified_data": marked,
        "precedent_references": {
            name: reference_lifts(qs, seed) for name, (seed, qs) in first.items()
        },
        "withheld_twins": {name: withheld_twins(qs) for name, (_, qs) in first.items()},
        "usual_winner": usual,
    }


def _against_usual_winner(
    store: Store, run_id: str, seed: int, questions: Sequence[Question]
) -> tuple[dict[str, object], dict[str, float | None]]:
    """A run's substrate-specific skill (its board columns: MC_all score minus the usual
    winner's with the table-clustered interval, and every skill metric) and the usual winner's
    headline scores on the same questions (the reference row)."""
    from labreplay.suites.conditions.usual_winner import substrate_skill, usual_winner_results

    by_id = {str(q["id"]): q for q in questions}
    keys, results = _rescored(by_id, store.events(run_id))
    reference = usual_winner_results(by_id, keys)
    skill = substrate_skill(keys, results, reference, seed)
    columns: dict[str, object] = {
        "skill_mc_all_score": skill["mc_all.score"]["mean"],
        "skill_mc_all_score_ci95": skill["mc_all.score"]["ci95"],
        "substrate_skill": skill,
    }
    return columns, headline(summarise(keys, reference, seed))


def _score(value: object) -> float:
    """A stored score (a float, or None when the run had no such question) for sorting."""
    return float(value) if isinstance(value, int | float) else 0.0


def stored_questions(store: Store, sha256: str) -> list[Question] | None:
    """The question file the store keeps under `sha256` (None: not kept, e.g. a store written
    before question files were kept)."""
    import tempfile

    from labreplay.suites.conditions.questions import load_questions

    data = store.content(sha256)
    if data is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "questions.jsonl"
        path.write_bytes(data)
        return load_questions(path)


def _rescored(
    by_id: Mapping[str, Question], events: Iterable[Mapping[str, object]]
) -> tuple[list[AnswerKey], list[AnswerResult]]:
    """A stored run's answer keys and answers scored afresh, in answer order."""
    answers = [e["payload"] for e in answer_events(events)]
    keys = [answer_key(by_id[str(a["question_id"])]) for a in answers]
    return keys, [score_answer(k, a["answer"]) for k, a in zip(keys, answers, strict=True)]


def rescored_summary(
    spec: EnvironmentSpec, events: Sequence[Mapping[str, object]], seed: int, store: Store
) -> Summary | None:
    """A stored run's full summary (the `summary` detail), recomputed from its answer events
    and the question file the store keeps (None: a store written before it was kept)."""
    questions = stored_questions(store, str(spec.body["sha256"]))
    if questions is None:
        return None
    keys, results = _rescored({str(q["id"]): q for q in questions}, events)
    return summarise(keys, results, seed)


def rescore_run(
    spec: EnvironmentSpec, events: Sequence[Mapping[str, object]], seed: int, store: Store
) -> dict[str, float | None]:
    """The headline scores of a stored run, recomputed from its answer events and the
    question file the store keeps under the spec's sha256 (ContentMissing when the store does
    not keep it: written before question files were kept, or the file deleted)."""
    summary = rescored_summary(spec, events, seed, store)
    if summary is None:
        raise ContentMissing(
            f"table contents: no question file with sha256 {str(spec.body['sha256'])[:16]}... "
            "(the run's spec names it), so its scores and summary detail cannot be recomputed"
        )
    flat = headline(summary)
    return {
        k: (float(v) if v is not None else None)
        for k, v in flat.items()
        if v is None or (isinstance(v, int | float) and not isinstance(v, bool))
    }
