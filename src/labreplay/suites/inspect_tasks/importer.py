"""`labreplay import inspect-log LOG --store S`: an inspect_ai log's results into our store.

A `labreplay/conditions` log becomes a conditions run: each sample's completion is recorded
as that question's raw text answer and read and scored by our own parser and scorer (the
recorder, hash chain and scores of `labreplay conditions run`), so boards, paired statistics
and reports cover it. The agent is `inspect:<model>`; its params hold the interface, the model,
the precedent option and a hash of the sample ids, because a `--limit`ed log answers a subset
of the file: the run's spec is the question file restricted to the questions the log holds.
Importing the same log again is a no-op (the run key is the same and the run is complete).

A `labreplay/campaign` log needs no import: its task played our runner against the store it
names (`-T store=...`); the import checks that every sample's runs are complete there.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from labreplay.errors import DataError, LabreplayError
from labreplay.sdk import MAX_INPUT_BYTES, path_kind, readable_file, sha256_json
from labreplay.sdk.engine import Store
from labreplay.sdk.events import JsonObject, JsonValue

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog


class _LoggedAgent:
    """The harness of an inspect log as a replay agent: each question's answer is the logged
    sample's completion, read by our parser like any raw text answer."""

    def __init__(
        self, model: str, params: Mapping[str, JsonValue], completions: Mapping[str, str]
    ) -> None:
        self.name = f"inspect:{model}"
        self._params = dict(params)
        self._completions = dict(completions)

    def params(self) -> dict[str, JsonValue]:
        return dict(self._params)

    def answer(self, question_view: Mapping[str, JsonValue]) -> JsonObject:
        return {"text": self._completions[str(question_view["id"])]}


def _read_log(path: Path) -> EvalLog:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise LabreplayError(
            "this needs the `inspect-ai` package: pip install 'labreplay[inspect]'"
        ) from exc

    readable_file(path, "inspect log", MAX_INPUT_BYTES)  # inspect reads it whole
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect raises many kinds on a bad file
        raise DataError(
            f"not a readable inspect log ({type(exc).__name__})", file=str(path)
        ) from exc


def import_inspect_log(log_path: str | Path, store_path: str | Path) -> dict[str, object]:
    path = Path(log_path)
    log = _read_log(path)
    task = str(log.eval.task)
    if task.endswith("conditions"):
        return _import_conditions(path, log, Path(store_path))
    if task.endswith("campaign"):
        return dict(_check_campaign(path, log, Path(store_path)))
    raise DataError(f"task {task!r} is not a labreplay task", file=str(path), field="eval.task")


def _import_conditions(path: Path, log: EvalLog, store_path: Path) -> dict[str, object]:
    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.sdk.engine import run_suite
    from labreplay.suites.conditions.episodes import EPISODES
    from labreplay.suites.conditions.runner import question_spec
    from labreplay.suites.inspect_tasks.conditions import _selected

    args = dict(log.eval.task_args or {})
    if "questions" not in args:
        raise DataError("the log names no question file", file=str(path), field="task_args")
    # the task records the file's absolute path in its metadata (task args keep what was typed)
    meta = dict(getattr(log.eval, "task_metadata", None) or log.eval.metadata or {})
    questions_path = Path(str(meta.get("questions") or args["questions"]))
    if path_kind(questions_path) is None:  # anything else there: load_questions names it
        raise DataError("the log's question file is not here", file=str(questions_path))
    precedents = str(args.get("precedents", "both"))
    if log.status != "success" or not log.samples:
        raise DataError(f"log status {log.status!r} with no samples", file=str(path))
    completions = {str(s.id): s.output.completion for s in log.samples}
    chosen = [q for q in _selected(str(questions_path), precedents) if q["id"] in completions]
    unknown = sorted(set(completions) - {q["id"] for q in chosen})
    if unknown:
        raise DataError("sample id is not a question of the file", file=str(path), value=unknown[0])
    model = str(log.eval.model)
    params: dict[str, JsonValue] = {
        "interface": "inspect",
        "model": model,
        "precedents": precedents,
        "samples": sha256_json(sorted(completions))[:16],
    }
    agent = _LoggedAgent(model, params, completions)
    with Store(store_path) as db:
        (result,) = run_suite(
            EPISODES,
            [question_spec(questions_path, chosen)],
            ResolvedAgent(agent.name, lambda: agent, agent.name, agent.params(), probe=agent),
            db,
            seed=0,
            options={"scope": [str(q["id"]) for q in chosen]},
        )
    if result.get("cached"):
        return {"suite": "conditions", "log": str(path), **result}
    return {"suite": "conditions", "log": str(path), "samples": len(chosen), **result}


class CampaignCheck(TypedDict):
    """A campaign log checked against the store its task recorded into."""

    suite: str
    log: str
    runs: int  # the store's campaign runs by the log's model
    complete: int


def _check_campaign(path: Path, log: EvalLog, store_path: Path) -> CampaignCheck:
    args = dict(log.eval.task_args or {})
    named = Path(str(args.get("store", "")))
    if named.resolve() != store_path.resolve():
        raise DataError(
            f"the campaign task recorded into {named}, not into this store",
            file=str(path),
            field="task_args.store",
        )
    with Store(store_path, readonly=True) as db:
        runs = [r for r in db.runs(suite="campaign") if r.agent == f"inspect:{log.eval.model}"]
    return {
        "suite": "campaign",
        "log": str(path),
        "runs": len(runs),
        "complete": sum(r.status == "complete" for r in runs),
    }


__all__ = ["import_inspect_log"]
