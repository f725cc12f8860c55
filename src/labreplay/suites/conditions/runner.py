"""Run a question agent over a question file and keep everything in the results store.

One run per (question-file sha256 as the spec, agent + params, seed). Each answer is an
event (raw answer, parsed answer, per-question scores) recorded through the shared recorder
(one hash chain bound to the question file's `EnvironmentSpec`); events are written in batches,
so a killed run resumes after its last stored batch. Run-level metrics go to `scores`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from labreplay.errors import AgentError, RunFailedError
from labreplay.sdk import (
    HEADER_KIND,
    Recorder,
    RunHeader,
    canonical_form,
    header_payload,
    open_run,
    read_file,
    sha256_bytes,
    sha256_file,
    sha256_json,
)
from labreplay.sdk.agents import (
    AgentNonJSON,
    AnswersInBatches,
    CapReached,
    call_failures,
    isolation_of,
    json_problem,
    raised_message,
    sandbox_of,
)
from labreplay.sdk.data import loads_strict
from labreplay.sdk.engine import (
    AGENT_RAISED,
    MODEL_CALLS_FAILED,
    REPLIES_INVALID,
    ContentMissing,
    EnvironmentSpec,
    RunHealth,
    Store,
    Verdict,
    cap_kind,
    judge,
)
from labreplay.sdk.events import JsonObject
from labreplay.suites.conditions.agents import QuestionAgent
from labreplay.suites.conditions.events import (
    AnswerEvent,
    AnswerPayload,
    AnswerResult,
    conditions_events,
)
from labreplay.suites.conditions.prompts import normalise_answer
from labreplay.suites.conditions.questions import Question, QuestionView, agent_view
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


def _answers(agent: QuestionAgent, views: Sequence[QuestionView]) -> Iterator[JsonObject]:
    """Raw answers in question order. Agents that can answer many at once (LLM agents with a
    concurrency bound) get a batch at a time; an agent's own failure on a question is recorded
    as that question's (wrong) answer."""
    for start in range(0, len(views), BATCH):
        chunk = views[start : start + BATCH]
        if isinstance(agent, AnswersInBatches):
            try:
                yield from agent.answer_many(chunk)
                continue
            except (AgentError, CapReached):  # a cap ends the run: never a wrong answer
                raise
            except Exception:  # fall back to one at a time to find the failing question
                pass
        for view in chunk:
            yield _guarded_answer(agent, view)


def _guarded_answer(agent: QuestionAgent, view: QuestionView) -> JsonObject:
    """One raw answer; an exception or a value that is not a JSON object becomes
    `{"error": ...}` worded exactly as an isolated agent's (`labreplay.agents.isolated`), so
    the stored run is the same in-process and isolated."""
    try:
        value = agent.answer(dict(view))
    except (AgentError, CapReached):
        raise
    except AgentNonJSON as exc:
        return {"error": exc.message}
    except Exception as exc:
        return {"error": raised_message("answer", exc)}
    problem = json_problem("answer", value)
    if problem is not None:
        return {"error": problem}
    if not isinstance(value, dict):
        return {"error": f"answer() returned {type(value).__name__}, not a JSON object"}
    return value


def answer_payload(question: Question, key: AnswerKey, raw: JsonObject) -> AnswerPayload:
    """One answer event: the raw answer, its parsed form and its per-question scores."""
    view = agent_view(question)
    if not isinstance(raw, Mapping):  # e.g. a batch answerer's garbage: recorded, not a crash
        raw = {"error": f"answer() returned {type(raw).__name__}, not a JSON object"}
    parsed = normalise_answer(raw, view) if "error" not in raw else {"invalid": raw["error"]}
    return {
        "question_id": question["id"],
        "raw": raw,
        "answer": parsed,
        "result": score_answer(key, parsed),
    }


def open_question_run(
    store: Store,
    questions_path: Path,
    questions: Sequence[Question],
    agent: QuestionAgent,
    seed: int,
    subset: bool = False,
) -> tuple[Recorder, dict[str, object] | None]:
    """The run's recorder (resumed onto its verified stored answers) and, if the run is
    already complete, its stored summary."""
    spec = question_spec(questions_path, questions, subset)
    params = agent.params()
    if isolation_of(agent) != "in-process":  # an isolated run never reuses an in-process one
        params = {**params, "isolation": isolation_of(agent)}
    header = RunHeader(
        spec,
        "main",
        agent.name,
        params,
        seed,
        model=_model(params),
        endpoint=params.get("endpoint") or params.get("base_url"),
        extra_provenance={
            "question_file_sha256": spec.body["sha256"],
            "agent_sandbox": sandbox_of(agent),
        },
    )
    # The question file travels with the run, content-addressed by the spec's sha256, so the
    # store alone is enough to recompute every score (`store verify`).
    data = read_file(questions_path, "question file")
    if sha256_bytes(data) == spec.body["sha256"]:
        store.put_content("conditions-questions", data)
    # resume rules (complete: read back; failed: reset, afresh) live in the recorder module
    recorder, status = open_run(store, header, batch=BATCH)
    if status == "complete":
        info = store.run(recorder.run_id)
        return recorder, {
            "run_id": recorder.run_id,
            "resumed": False,
            "cached": True,
            **(info.summary or {}),
        }
    bound = recorder.header_at(
        0,
        header_payload(
            agent=agent.name,
            agent_params=params,
            isolation=isolation_of(agent),
            sandbox=sandbox_of(agent),
            model=header.model,
            seed=seed,
            branch=header.branch,
            spec_hash=spec.spec_hash,
            protocol=spec.protocol,
        ),
    )  # checks a stored header against this run's; None: a run stored before headers
    if not recorder.resume() and bound is not None:
        recorder.append(HEADER_KIND, bound)
    return recorder, None


def _model(params: Mapping[str, object]) -> str | None:
    """The model a run's row and header name: its agent's `model` parameter, if any."""
    model = params.get("model")
    return None if model is None else str(model)


def answered(recorder: Recorder) -> dict[str, AnswerResult]:
    """question id -> stored per-question result, for every answer recorded so far."""
    return {
        e["payload"]["question_id"]: e["payload"]["result"]
        for e in conditions_events(recorder.events)
        if e["kind"] == "answer"
    }


def answer_events(events: Iterable[Mapping[str, object]]) -> list[AnswerEvent]:
    """The answer events of a run (its header event aside)."""
    return [e for e in conditions_events(events) if e["kind"] == "answer"]


def finish_question_run(
    recorder: Recorder, questions: Sequence[Question], seed: int, cap: str | None = None
) -> dict[str, object]:
    """Score every recorded answer, store the scores and mark the run complete (`failed` when
    every model call failed or a run cap stopped it: never ranked, resumable)."""
    assert recorder.store is not None
    if cap is not None:
        recorder.flush()
        recorded = recorder.finish(
            "failed",
            {
                "cap_reached": cap,
                "cause": f"cap reached: {cap}",
                "cause_kind": cap_kind(cap),  # named as campaign names it (the failure rule)
            },
        )
        raise RunFailedError(
            f"run {recorder.run_id}: cap reached: {cap}; {recorded.get('llm_calls', 0)} calls "
            "accounted (stored as failed, not ranked; rerun with a higher cap to resume)"
        )
    results_by_id = answered(recorder)
    results = [results_by_id[q["id"]] for q in questions]
    summary = summarise([answer_key(q) for q in questions], results, seed)
    flat = headline(summary)
    # The full summary (per type, per dataset, lifts with intervals) rides along as the detail
    # of a value-less "summary" row, so reports can read it from the store alone.
    assert recorder.store is not None
    recorder.flush()  # the call log complete in the store, including earlier sessions'
    calls = recorder.store.llm_calls(recorder.run_id)
    health = call_failures(calls)
    extra: dict[str, object] = {}
    if health["llm_calls"]:
        # a score row too (the board's column); the summary's accounting is the recorder's
        flat = {**flat, "failed_call_share": health["failed_call_share"]}
        extra = {"invalid_answers": _invalid(recorder)}
    verdict = answers_verdict(recorder.events, calls)
    extra = {**extra, **_health(recorder.events, calls).to_json()}
    if verdict.status == "failed":
        extra = {**extra, "cause": verdict.cause, "cause_kind": verdict.kind}
    recorded = recorder.finish(
        verdict.status, {**flat, **extra}, {**flat, "summary": None}, {"summary": summary}
    )
    if verdict.status == "failed":
        raise RunFailedError(
            f"run {recorder.run_id}: the agent could not act (stored as failed, not ranked; "
            f"rerun the same command to resume): {verdict.cause}"
        )
    # The numbers as stored (canonical: 12 significant digits), so a run read back from the
    # store returns exactly what the run that wrote it returned.
    stored, _ = canonical_form(recorded)
    return {"run_id": recorder.run_id, "resumed": recorder.existed, "cached": False, **stored}


def _health(
    events: Sequence[Mapping[str, object]], calls: Sequence[Mapping[str, object]]
) -> RunHealth:
    """Each answer is one policy call; it failed when the agent gave no usable answer."""
    failed_calls = {str(c["error"]) for c in calls if c.get("error")}
    health = RunHealth()
    for event in conditions_events(events):
        if event["kind"] != "answer":
            continue
        raw = event["payload"].get("raw")
        error = raw.get("error") if isinstance(raw, Mapping) else None
        if not error:
            health.policy(None)
        elif "() raised " in str(error):
            health.policy(AGENT_RAISED, error)
        elif str(error) in failed_calls or any(str(error) in f for f in failed_calls):
            health.policy(MODEL_CALLS_FAILED, error)
        else:
            health.policy(REPLIES_INVALID, error)
    return health


def answers_verdict(
    events: Sequence[Mapping[str, object]], calls: Sequence[Mapping[str, object]]
) -> Verdict:
    """The one failed-run rule (`labreplay.runtime.failure`) for a conditions run; a run whose
    every model call failed measured its endpoint and is failed too."""
    every = call_failures(calls)
    if every["all_failed"]:
        cause = f"{MODEL_CALLS_FAILED}: every model call failed; first: {every['cause']}"
        return Verdict("failed", MODEL_CALLS_FAILED, cause)
    return judge(_health(events, calls))


def _invalid(recorder: Recorder) -> int:
    """Answers recorded invalid (no usable reply: the suite scored them wrong)."""
    return sum(
        1 for e in answer_events(recorder.events) if "invalid" in (e["payload"]["answer"] or {})
    )


def run_agent(
    store: Store,
    questions_path: Path,
    questions: Sequence[Question],
    agent: QuestionAgent,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, object]:
    """Answer every question with the agent object `agent` (resuming a partial run), score,
    store; return the summary. Runs through the shared driver, in-process
    (`labreplay.suites.conditions.execute.run_questions`)."""
    from labreplay.suites.conditions.execute import run_questions

    return run_questions(store, questions_path, agent, seed, progress=progress)


def _usage_columns(summary: Mapping[str, object]) -> dict[str, object]:
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


def leaderboard(store: Store) -> Board:
    """Every finished conditions run, with its headline metrics, plus the over-agent utility
    robustness audit per question file (`robustness`)."""
    rows: list[dict[str, object]] = []
    unverified: dict[str, list[str]] = {}  # spec hash -> modified data files behind it
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
        rows.append(
            {
                "run_id": run.run_id,
                "agent": run.agent,
                "seed": run.seed,
                "question_file": run.spec_id,
                "spec_hash": run.spec_hash[:12],
                **scores,
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
        "precedent_references": _precedent_references(store, rows),
    }


def _score(value: object) -> float:
    """A stored score (a float, or None when the run had no such question) for sorting."""
    return float(value) if isinstance(value, int | float) else 0.0


def _precedent_references(
    store: Store, rows: Sequence[Mapping[str, object]]
) -> dict[str, ReferenceLifts]:
    """question file -> the exclusion baseline's and the precedent ranker's precedent lifts
    (`precedent_audit`), the reference rows every precedent lift on the board is read against;
    {} for a question file the store does not keep."""
    import tempfile

    from labreplay.suites.conditions.precedent_audit import reference_lifts
    from labreplay.suites.conditions.questions import load_questions

    out: dict[str, ReferenceLifts] = {}
    for run in store.runs(suite=SUITE, status="complete"):
        name = str(run.spec_id)
        if name in out or not any(r["run_id"] == run.run_id for r in rows):
            continue
        body = loads_strict(store.get_spec(run.spec_hash)).get("body", {})
        data = store.content(str(body.get("sha256", "")))
        if data is None:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "questions.jsonl"
            path.write_bytes(data)
            out[name] = reference_lifts(load_questions(path), int(run.seed))
    return out


def rescored_summary(
    spec: EnvironmentSpec, events: Sequence[Mapping[str, object]], seed: int, store: Store
) -> Summary | None:
    """A stored run's full summary (the `summary` detail), recomputed from its answer events
    and the question file the store keeps (None: a store written before it was kept)."""
    import tempfile

    from labreplay.suites.conditions.questions import load_questions

    data = store.content(str(spec.body["sha256"]))
    if data is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "questions.jsonl"
        path.write_bytes(data)
        by_id = {str(q["id"]): q for q in load_questions(path)}
    answers = [e["payload"] for e in conditions_events(events) if e["kind"] == "answer"]
    keys = [answer_key(by_id[str(a["question_id"])]) for a in answers]
    results = [score_answer(k, a["answer"]) for k, a in zip(keys, answers, strict=True)]
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
