"""The meltsuite `Suite`: options classes, compile, its episodes (played and recorded by the
core runner, `labreplay.sdk.engine.run_suite`), rescore.

Registered with one entry-point line in its distribution's metadata:

    [project.entry-points."labreplay.suites"]
    melt = "meltsuite.suite:SUITE"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from labreplay.sdk import HEADER_KIND
from labreplay.sdk.agents import ResolvedAgent, resolve_agent, resolve_isolated
from labreplay.sdk.engine import EnvironmentSpec, Store, raise_failed, run_suite
from labreplay.sdk.episodes import Episode, Event, EventSink, Scored
from labreplay.sdk.options import Checked, Ints, IsolationOptions, flag, seeds, split_options
from meltsuite.contract import CONTRACT_REF, REFERENCE_AGENTS, REFERENCE_REF, MeltPredictor
from meltsuite.episode import compile_specs, health, play, score

if TYPE_CHECKING:
    import typer

    from labreplay.sdk.engine import Executor, ReportSection


@dataclass(frozen=True, kw_only=True)
class MeltCompileOptions(Checked):
    """`labreplay.compile("melt", ...)` and `labreplay melt compile`: the split seed and how
    many elements are held out. The CLI's flags are generated from these fields."""

    seed: int = flag(0, "Split seed.", check=seeds())
    n_queries: int = flag(6, "Held-out elements.", check=Ints(1, 12))


@dataclass(frozen=True, kw_only=True)
class MeltRunOptions(IsolationOptions):
    """`labreplay.run("melt", ...)` and `labreplay melt run`: the shared isolation options
    (`isolate`, `agent_timeout_s`, `require_sandbox`) and nothing of its own."""


def run_options(given: Mapping[str, Any]) -> MeltRunOptions:
    (options,) = split_options("melt run", dict(given), MeltRunOptions)
    assert isinstance(options, MeltRunOptions)
    return options


class MeltEpisodes:
    """The suite as the core runner plays it: one episode per spec (`play` into the runner's
    sink, never the store; `score` pure, also used by `store verify`)."""

    name = "melt"
    resume: Literal["continue", "replay"] = "replay"  # a resumed run is played again

    def episodes(self, spec: EnvironmentSpec, options: Mapping[str, object]) -> list[Episode]:
        return [Episode("main")]

    def agent_for(
        self,
        spec: EnvironmentSpec,
        agent: ResolvedAgent,
        seed: int,
        options: Mapping[str, object],
        cache: object,
    ) -> MeltPredictor:
        made: MeltPredictor = agent.make()
        return made

    def play(
        self, spec: EnvironmentSpec, episode: Episode, agent: MeltPredictor, sink: EventSink
    ) -> None:
        header = sink.header()  # what the runs row says, bound into the chain first
        if header is not None:
            sink.emit(HEADER_KIND, header)
        for prediction in play(spec, agent, episode.seed):
            sink.emit("prediction", prediction)

    def score(
        self,
        spec: EnvironmentSpec,
        episode: Episode,
        events: Sequence[Event],
        calls: Sequence[Mapping[str, object]],
        seed: int,
    ) -> Scored:
        predictions: list[Mapping[str, object]] = [
            p for e in events if e["kind"] == "prediction" for p in [e["payload"]]
            if isinstance(p, Mapping)
        ]  # fmt: skip
        scores = score(spec, predictions)
        return {"scores": scores, "details": {}, "summary": dict(scores),
                "health": health(predictions)}  # fmt: skip


EPISODES = MeltEpisodes()


class MeltSuite:
    name = "melt"
    default_seed = 0
    agent_contract = MeltPredictor  # `serve` forwards what it declares (`predict`)

    def cli(self) -> typer.Typer:
        from meltsuite.cli import app

        return app

    def compile(self, data_dir: Path | None = None, **options: Any) -> list[EnvironmentSpec]:
        (parsed,) = split_options("melt compile", options, MeltCompileOptions)
        assert isinstance(parsed, MeltCompileOptions)
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
        results = run_suite(
            EPISODES, specs, resolved, store, seed=seed, options={}, executor=executor
        )
        raise_failed(results)  # stored first, then said: the command exits 1
        return results

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


SUITE = MeltSuite()
