"""Run a question agent over a question file and keep everything in the results store.

One run per (question-file sha256 as the spec, agent + params, seed). Each answer is an
event (raw answer, parsed answer, per-question scores) in a hash chain; events are written in
batches, so a killed run resumes after its last stored batch. Run-level metrics go to `scores`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from labreplay._hashing import canonical_json, sha256_file
from labreplay.agents.base import call_failures, drain_calls
from labreplay.errors import AgentError, RunFailedError
from labreplay.store.sqlite import Store
from labreplay.suites.conditions.agents import QuestionAgent
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import agent_view
from labreplay.suites.conditions.scoring import answer_key, score_answer
from labreplay.suites.conditions.summary import headline, spearman_yield_only, summarise

SUITE = "conditions"
PROTOCOL = "rxnoptbench-questions"
GENESIS = "0" * 64
BATCH = 500


def _event(seq: int, prev: str, payload: dict[str, Any]) -> dict[str, Any]:
    # Plain sorted-key JSON is enough here (payloads hold ints, short strings and scores that
    # were computed deterministically) and is several times faster than canonical_json.
    body = json.dumps(
        {"seq": seq, "kind": "answer", "payload": payload, "prev_hash": prev},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return {"seq": seq, "kind": "answer", "payload": payload, "prev_hash": prev, "hash": digest}


def register_questions(
    store: Store, questions_path: Path, questions: Sequence[Mapping[str, Any]]
) -> str:
    """Store the question file as the run spec; its sha256 is the spec hash."""
    digest = sha256_file(questions_path)
    body = {
        "kind": "conditions-question-file",
        "file": questions_path.name,
        "sha256": digest,
        "n_questions": len(questions),
        "compile_spec_hashes": sorted({str(q["meta"].get("spec_hash", "")) for q in questions}),
    }
    store.put_spec(SUITE, PROTOCOL, questions_path.name, digest, canonical_json(body))
    return digest


def _answers(agent: QuestionAgent, views: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Raw answers in question order. Agents that can answer many at once (LLM agents with a
    concurrency bound) get a batch at a time; an agent's own failure on a question is recorded
    as that question's (wrong) answer."""
    many = getattr(agent, "answer_many", None)
    for start in range(0, len(views), BATCH):
        chunk = views[start : start + BATCH]
        if callable(many):
            try:
                yield from many(chunk)
                continue
            except AgentError:
                raise
            except Exception:  # fall back to one at a time to find the failing question
                pass
        for view in chunk:
            try:
                yield agent.answer(view)
            except AgentError:
                raise
            except Exception as exc:
                yield {"error": f"{type(exc).__name__}: {exc}"}


def _flush(
    store: Store,
    run_id: str,
    events: list[dict[str, Any]],
    agent: QuestionAgent,
    calls_seen: int,
    progress: Callable[[int], None] | None,
) -> int:
    """Write a batch of answer events and the model calls behind them; returns the call count."""
    if events:
        store.append_events(run_id, events)
    calls = drain_calls(agent)
    for c in calls:
        c["call_index"] = calls_seen
        calls_seen += 1
    if calls:
        store.record_llm_calls(run_id, calls)
    if progress and events:
        progress(len(events))
    return calls_seen


def run_agent(
    store: Store,
    questions_path: Path,
    questions: Sequence[Mapping[str, Any]],
    agent: QuestionAgent,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Answer every question (resuming a partial run), score, store; return the summary."""
    spec_hash = register_questions(store, questions_path, questions)
    params = agent.params()
    run_id, existed = store.open_run(
        suite=SUITE,
        spec_hash=spec_hash,
        spec_id=questions_path.name,
        branch="main",
        agent=agent.name,
        agent_params=params,
        seed=seed,
        model=params.get("model"),
        endpoint=params.get("endpoint") or params.get("base_url"),
        extra_provenance={"question_file_sha256": spec_hash},
    )
    status = store.run(run_id).status if existed else "running"
    if status == "complete":
        return {
            "run_id": run_id,
            "resumed": False,
            "cached": True,
            **(store.run(run_id).summary or {}),
        }
    if status == "failed":  # its endpoint never answered: start it afresh
        store.reset_run(run_id)
        existed = False
    done = store.events(run_id) if existed else []
    prev = done[-1]["hash"] if done else GENESIS
    results_by_id = {e["payload"]["question_id"]: e["payload"]["result"] for e in done}
    keys = [answer_key(q) for q in questions]
    pending: list[dict[str, Any]] = []
    seq = len(done)
    calls_seen = 0
    todo = [
        (q, key) for q, key in zip(questions, keys, strict=True) if q["id"] not in results_by_id
    ]
    raws = _answers(agent, [agent_view(q) for q, _ in todo])
    for (q, key), raw in zip(todo, raws, strict=True):
        view = agent_view(q)
        parsed = normalise_answer(raw, view) if "error" not in raw else {"invalid": raw["error"]}
        # Round-trip through the store's canonical form (12 significant digits), so a resumed
        # run, which reads earlier results back from the store, sums exactly the same numbers.
        result = json.loads(canonical_json(score_answer(key, parsed)))
        payload = {"question_id": q["id"], "raw": raw, "answer": parsed, "result": result}
        event = _event(seq, prev, payload)
        pending.append(event)
        prev, seq = event["hash"], seq + 1
        results_by_id[q["id"]] = result
        if len(pending) >= BATCH:
            calls_seen = _flush(store, run_id, pending, agent, calls_seen, progress)
            pending = []
    _flush(store, run_id, pending, agent, calls_seen, progress)
    results = [results_by_id[q["id"]] for q in questions]
    summary = summarise(keys, results, seed)
    flat = headline(summary)
    # The full summary (per type, per dataset, lifts with intervals) rides along as the detail
    # of a value-less "summary" row, so reports can read it from the store alone.
    store.put_scores(run_id, {**flat, "summary": None}, {"summary": summary})
    health = call_failures(store.llm_calls(run_id))
    if health["llm_calls"]:
        flat = {**flat, "failed_call_share": health["failed_call_share"]}
    store.finish_run(run_id, "failed" if health["all_failed"] else "complete", flat)
    if health["all_failed"]:
        raise RunFailedError(
            f"run {run_id}: every model call failed (stored as failed, not ranked; rerun the "
            f"same command to resume): {health['cause']}"
        )
    return {"run_id": run_id, "resumed": existed, "cached": False, **flat}


def leaderboard(store: Store) -> dict[str, Any]:
    """Every finished conditions run, with its headline metrics, plus the over-agent audit."""
    rows: list[dict[str, Any]] = []
    for run in store.runs(where="suite=? AND status='complete'", params=(SUITE,)):
        scores = {k: v for k, v in store.scores(run.run_id).items() if k != "summary"}
        rows.append(
            {
                "run_id": run.run_id,
                "agent": run.agent,
                "seed": run.seed,
                "question_file": run.spec_id,
                "spec_hash": run.spec_hash[:12],
                **scores,
            }
        )
    rows.sort(
        key=lambda r: (
            str(r["question_file"]),
            -float(r.get("mc_all_score") or 0.0),
            str(r["agent"]),
        )
    )
    audits = {}
    for spec in sorted({str(r["spec_hash"]) for r in rows}):
        audits[spec] = spearman_yield_only([r for r in rows if r["spec_hash"] == spec])
    return {"runs": rows, "yield_only_spearman": audits}
