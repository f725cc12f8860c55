"""The meltsuite `Suite`: options classes, compile, run through the shared driver, rescore.

Registered with one entry-point line in its distribution's metadata:

    [project.entry-points."labreplay.suites"]
    melt = "meltsuite.suite:SUITE"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.errors import RunFailedError
from labreplay.sdk import HEADER_KIND, HeaderPayload, RunHeader, header_payload, open_run
from labreplay.sdk.agents import (
    AgentUnavailable,
    ResolvedAgent,
    close_agent,
    isolation_of,
    resolve_agent,
    resolve_isolated,
    sandbox_of,
)
from labreplay.sdk.engine import EnvironmentSpec, Store, Unit, judge, run_units
from labreplay.sdk.options import check_agent_timeout, int_in, parse_options
from meltsuite.contract import CONTRACT_REF, REFERENCE_AGENTS, REFERENCE_REF, MeltPredictor
from meltsuite.episode import Prediction, compile_specs, health, play, score

if TYPE_CHECKING:
    import typer

    from labreplay.sdk.engine import Executor, ReportSection


@dataclass(frozen=True)
class MeltCompileOptions:
    """`labreplay.compile("melt", ...)` and `labreplay melt compile`: the split seed and how
    many elements are held out."""

    seed: int = 0
    n_queries: int = 6

    def check(self) -> None:
        int_in("seed", self.seed, 0)
        int_in("n_queries", self.n_queries, 1, 12)


@dataclass(frozen=True)
class MeltRunOptions:
    """`labreplay.run("melt", ...)` and `labreplay melt run`: serve a Python agent from a
    child process (`isolate`) and its per-call limit (`agent_timeout_s`)."""

    isolate: bool = False
    agent_timeout_s: float | None = None

    def check(self) -> None:
        check_agent_timeout(self.isolate, self.agent_timeout_s)


def run_options(given: Mapping[str, Any]) -> MeltRunOptions:
    options, _ = parse_options(MeltRunOptions, "melt run", given)
    options.check()
    return options


def _stored(run_id: str, store: Store) -> dict[str, Any] | None:
    info = store.run(run_id)
    if info is None or info.status != "complete":
        return None
    return {"run_id": run_id, "cached": True, **(info.summary or {})}


def _record(
    spec: EnvironmentSpec,
    run_id: str,
    recorder: Any,
    header: HeaderPayload,
    store: Store,
    value: Any,
) -> dict[str, Any]:
    """Write one played episode (the driver calls this; `play` never sees the store): the
    run's header event first (what its runs row says, bound into the chain), then each
    prediction."""
    predictions: list[Prediction]
    predictions, stop = value
    bound = recorder.header_at(0, header)  # None: a partial run stored before headers
    if bound is not None:
        recorder.append(HEADER_KIND, bound)
    for p in predictions:
        recorder.append("prediction", p)
    found = health(predictions)
    found.harness_stop = stop
    verdict = judge(found)
    scores = score(spec, predictions)
    summary: dict[str, Any] = {**scores, **found.to_json()}
    if verdict.status == "failed":
        summary = {**summary, "cause": verdict.cause, "cause_kind": verdict.kind}
    recorder.finish(verdict.status, summary, scores)
    if verdict.status == "failed":
        raise RunFailedError(f"run {run_id}: stored as failed, not ranked: {verdict.cause}")
    # the numbers as stored (canonical JSON keeps 12 significant digits): a run returns the
    # same summary the first time and when read back
    return {**(_stored(run_id, store) or {}), "cached": False}


def _play(
    spec: EnvironmentSpec, make: Callable[[], MeltPredictor], seed: int, cache: Any
) -> tuple[list[Prediction], str | None]:
    agent = make()
    try:
        return play(spec, agent, seed), None
    except AgentUnavailable as exc:  # the agent stopped answering: the run fails, named
        return [], f"agent stopped answering: {exc}"
    finally:
        close_agent(agent)


class MeltSuite:
    name = "melt"
    default_seed = 0
    agent_contract = MeltPredictor  # `serve` forwards what it declares (`predict`)

    def cli(self) -> typer.Typer:
        from meltsuite.cli import app

        return app

    def compile(self, data_dir: Path | None = None, **options: Any) -> list[EnvironmentSpec]:
        parsed, _ = parse_options(MeltCompileOptions, "melt compile", options)
        parsed.check()
        return compile_specs(parsed.seed, parsed.n_queries)

    def check_options(self, **options: Any) -> None:
        run_options(options)

    def resolve_agent(self, agent: Any, **options: Any) -> ResolvedAgent:
        options.pop("seed", None)
        parsed = run_options(options)
        if isinstance(agent, ResolvedAgent):
            return agent
        if parsed.isolate:
            refs = {name: f"{REFERENCE_REF}[{name}]" for name in REFERENCE_AGENTS}
            return resolve_isolated(agent, CONTRACT_REF, parsed.agent_timeout_s, builtin_refs=refs)
        return resolve_agent(
            agent, MeltPredictor, builtins=dict(REFERENCE_AGENTS), builtin_ref=REFERENCE_REF
        )

    def run(
        self,
        specs: Sequence[EnvironmentSpec],
        agent: Any,
        store: Store,
        *,
        seed: int = 0,
        executor: Executor | None = None,
        **options: Any,
    ) -> list[dict[str, Any]]:
        resolved = self.resolve_agent(agent, **options)
        probe = resolved.probe if resolved.probe is not None else resolved.make()
        params = dict(resolved.params)
        if isolation_of(probe) != "in-process":  # an isolated run never reuses another
            params["isolation"] = isolation_of(probe)
        isolation, sandbox = isolation_of(probe), sandbox_of(probe)
        close_agent(probe)
        units = []
        for spec in specs:
            header = RunHeader(
                spec,
                "main",
                resolved.name,
                params,
                seed,
                extra_provenance={"agent_sandbox": sandbox},
            )
            recorder, status = open_run(store, header)
            run_id = recorder.run_id
            bound = header_payload(
                agent=resolved.name,
                agent_params=params,
                isolation=isolation,
                sandbox=sandbox,
                seed=seed,
                branch="main",
                spec_hash=spec.spec_hash,
                protocol=spec.protocol,
            )
            units.append(
                Unit(
                    run_id,
                    partial(_play, spec, resolved.make, seed),
                    partial(_record, spec, run_id, recorder, bound),
                    stored=partial(_stored, run_id) if status == "complete" else _none,
                )
            )
        return run_units(self.name, units, store, executor)

    def rescore(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, Any]],
        run: Any,
        store: Store | None = None,
    ) -> dict[str, float | None]:
        return score(spec, [e["payload"] for e in events if e.get("kind") == "prediction"])

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.sdk.report import generic_section

        return generic_section(store, self.name)

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        with Store(store) as db:
            for name in REFERENCE_AGENTS:
                self.run(self.compile(), name, db)

    def reference_agents(self) -> list[str]:
        return sorted(REFERENCE_AGENTS)

    def agent_problems(
        self, make_agent: Callable[[], Any], spec: EnvironmentSpec, seed: int, **options: Any
    ) -> list[str]:
        """Same predictions twice from fresh agents (determinism), all usable."""
        first, second = play(spec, make_agent(), seed), play(spec, make_agent(), seed)
        problems = [f"{p['id']}: {p['invalid']}" for p in first if p["invalid"]]
        if first != second:
            problems.append("two fresh agents with one seed predicted differently")
        return problems


def _none(store: Store) -> None:
    return None


SUITE = MeltSuite()
