"""The configsearch suite's registry entry (entry point `labreplay.suites: configsearch`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from labreplay.errors import SpecError
from labreplay.sdk.agents import Optimizer
from labreplay.sdk.engine import ReportSection
from labreplay.suites.configsearch.options import DEFAULT_SEED

if TYPE_CHECKING:
    import typer

    from labreplay.sdk.agents import ResolvedAgent
    from labreplay.sdk.engine import EnvironmentSpec, Executor, Rederived, RunInfo, Store
    from labreplay.suites.configsearch.events import ConfigsearchEvent
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.runner import ConfigSearch
    from labreplay.suites.configsearch.space import ConfigSpace


def config_point(payload: Mapping[str, object]) -> tuple[float, float, float, float] | None:
    """An event payload as an evaluated configuration (r, n, s, objective) for the report's
    scatter: numeric `r`, `n`, `s` directly or under `config`, and an objective (`mae`,
    `objective` or `value`); None for any other payload."""

    def number(x: object) -> float | None:
        return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None

    config = payload.get("config")
    where = config if isinstance(config, Mapping) else payload
    rns = [number(where.get(k)) for k in ("r", "n", "s")]
    objective = next(
        (
            v
            for v in (number(payload.get(k)) for k in ("mae", "objective", "value"))
            if v is not None
        ),
        None,
    )
    if objective is None or any(v is None for v in rns):
        return None
    r, n, s = (float(v) for v in rns if v is not None)
    return r, n, s, objective


class ConfigsearchSuite:
    name = "configsearch"
    # the search seed when `labreplay.run` is given none, as `configsearch run --seed`
    default_seed = DEFAULT_SEED
    agent_contract = Optimizer  # `serve` forwards what it declares (suggest, observe)

    def cli(self) -> typer.Typer:
        from labreplay.suites.configsearch.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.sdk.report import generic_section, paper_html
        from labreplay.suites.configsearch.papers import comparison
        from labreplay.suites.configsearch.report_html import claims_html, traces_html
        from labreplay.suites.configsearch.report_maps import landscapes_html
        from labreplay.suites.configsearch.targets import SCORE_LABELS

        section = generic_section(store, self.name, config_point, ("r", "n", "s"), SCORE_LABELS)
        if section is None:
            return None
        return ReportSection(
            section.suite,
            section.html
            + traces_html(store)
            + claims_html(store)
            + landscapes_html(store)
            + paper_html(comparison(store)),
            section.info,
        )

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        from labreplay.suites.configsearch.demo import run_demo

        run_demo(data_dir, store, out_dir / self.name, quick=not full)

    def _campaign(
        self, data_dir: Path | None, store: Store | None, options: Mapping[str, Any]
    ) -> ConfigSearch:
        from labreplay.sdk.data import resolve_data_dir
        from labreplay.suites.configsearch.pipeline import PipelineSettings
        from labreplay.suites.configsearch.runner import ConfigSearch

        settings = options.get("settings") or PipelineSettings(
            n_total=int(options.get("n_total", 1600)), n_ood=int(options.get("n_ood", 480))
        )
        return ConfigSearch(
            resolve_data_dir(data_dir),
            options.get("task") or "band_gap",
            store,
            settings,
            options.get("space"),
            options.get("cache_dir"),
            # C_min (targets.py): a declared option, default 30 test points
            min_test_points=int(options.get("min_test_points", 30)),
            allow_modified_data=bool(options.get("allow_modified_data", False)),
        )

    def compile(self, data_dir: Path | None = None, **options: object) -> list[EnvironmentSpec]:
        """Options: task, n_total, n_ood (or settings), space, cache_dir, min_test_points,
        allow_modified_data."""
        from labreplay.sdk.options import refuse_unknown
        from labreplay.suites.configsearch.options import ConfigsearchOptions

        known = ("task", "n_total", "n_ood", "settings", "space", "cache_dir")
        refuse_unknown(
            "configsearch compile", options, {*known, "min_test_points", "allow_modified_data"}
        )
        # the checks of the flags `configsearch sweep`/`run` take for the same values
        sample = ("n_total", "n_ood", "min_test_points")
        ConfigsearchOptions(**{k: v for k, v in options.items() if k in sample})  # type: ignore[arg-type]
        return [self._campaign(data_dir, None, options).environment]

    def resolve_agent(self, agent: object, **options: object) -> str | ResolvedAgent:
        """A search method name (bo | random | exhaustive), an `openai:MODEL` optimiser (the
        LLM options of `LlmOptions`), or any `Optimizer` (object, factory, registered name,
        MODULE:ATTR) checked against the contract; options `isolate` and `agent_timeout_s`
        serve an importable one from a child process."""
        from labreplay.suites.configsearch.api import resolve_searcher
        from labreplay.suites.configsearch.options import parse_run_options

        seed = options.pop("seed", None)
        run, _, llm, _ = parse_run_options(options)
        run.check_search(agent if isinstance(agent, str) else None)
        if isinstance(seed, int):
            run.check_seeds(seed)
        return resolve_searcher(agent, run, llm)[0]

    def run(
        self,
        specs: Sequence[EnvironmentSpec],
        agent: object,
        store: Store,
        *,
        seed: int = DEFAULT_SEED,
        executor: Executor | None = None,
        **options: object,
    ) -> list[dict[str, object]]:
        """`agent` is a search method (bo | random | exhaustive) or any optimiser (see
        `resolve_agent`). Options: those of `ConfigsearchRunOptions` (models, problem, budget,
        init, seeds, gt, cost_alpha, min_test_points, n_total, n_ood, isolate, ...),
        `ProblemObjects` (task, settings, space, cache_dir, data_dir), `LlmOptions` and
        allow_modified_data: the classes `configsearch run` generates its flags from."""
        from labreplay.suites.configsearch.episodes import run_searches
        from labreplay.suites.configsearch.options import parse_run_options

        run, objects, _, data = parse_run_options(options)
        run.check_search(agent if isinstance(agent, str) else None)
        run.check_seeds(seed)
        given = {**options, "allow_modified_data": data.allow_modified_data}
        data_dir = Path(objects.data_dir) if objects.data_dir is not None else None
        out = []
        for spec in specs:
            # the spec is self-contained: its task, pipeline settings and space rebuild its
            # problem (options given again must agree: the hash is compared below)
            rebuilt = spec_problem(spec)
            if any(k in options for k in ("settings", "n_total", "n_ood")):
                rebuilt.pop("settings")
            if "space" in options:
                rebuilt.pop("space")
            campaign = self._campaign(data_dir, store, {**given, **rebuilt})
            if campaign.spec_hash != spec.spec_hash:
                raise SpecError(f"spec {spec.spec_hash[:16]}... does not match these options/data")
            seeds = [seed + k for k in range(run.seeds)]
            done = run_searches(
                campaign, run.model_list(), run.problem, agent, run.budget, run.init, seeds,
                run.gt, executor, run.cost_alpha,
            )  # fmt: skip
            out += [
                {"run_id": r, "seed": s, **summary}
                for s, (r, _, summary) in zip(seeds, done, strict=True)
            ]
        return out

    def check_options(self, **options: object) -> None:
        """Refuse bad or unknown run options before any store is opened (`labreplay.run`)."""
        from labreplay.suites.configsearch.options import parse_run_options

        parse_run_options(options)

    def reference_agents(self) -> list[str]:
        return ["bo", "random"]

    def rescore(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> dict[str, float | None]:
        """The scores of an exhaustive sweep, recomputed from its evaluation events (`store
        verify` compares them with the `scores` rows). A search's scores need the truth table of
        other runs, so a search gives none here."""
        from labreplay.suites.configsearch.episodes import SWEEP_BRANCH, sweep_scores

        if run.branch != SWEEP_BRANCH:
            return {}
        return sweep_scores(events)["scores"]

    def rederive(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> Rederived:
        """A stored run's status, as far as the store gives it (`store verify`): failed when
        every model call in `llm_calls` failed; a recorded cause (the optimiser stopped
        answering, its suggestions were unusable: a failed run keeps no steps) rests on the
        record (None); else complete."""
        from labreplay.sdk.agents import call_failures

        calls = store.llm_calls(run.run_id) if store is not None else []
        status: str | None = "failed" if call_failures(calls)["all_failed"] else "complete"
        if status == "complete" and (run.summary or {}).get("cause"):
            status = None
        return {"controls": [], "details": {}, "status": status, "summary": {}}

    def agent_problems(
        self,
        make_agent: Callable[[], str | Optimizer],
        spec: EnvironmentSpec,
        seed: int,
        **options: Any,
    ) -> list[str]:
        """`make_agent()` names a search method or builds an optimiser; options as for `run`
        (a small space keeps it cheap). Checks: within budget, only valid suggestions of feasible
        configurations, deterministic."""
        campaign = self._campaign(options.get("data_dir"), None, {**options, "task": spec.spec_id})
        if campaign.spec_hash != spec.spec_hash:
            return [f"spec {spec.spec_hash[:16]}... does not match these options/data"]
        from labreplay.sdk.agents import ResolvedAgent
        from labreplay.suites.configsearch.episodes import method_agent, search_detached

        budget = int(options.get("budget", 6))
        models = list(options.get("models", ["rf-scm"]))

        def once() -> list[ConfigsearchEvent]:
            made = make_agent()  # a method name or an Optimizer
            agent = (
                method_agent(made)
                if isinstance(made, str)
                else ResolvedAgent(made.name, lambda: made, made.name, made.params(), probe=made)
            )
            return search_detached(campaign, models, "best-model", agent, budget, 3, seed)

        runs = [once() for _ in range(2)]
        problems = []
        steps = [e for e in runs[0] if e["kind"] == "step"]
        if len(steps) > budget:
            problems.append(f"budget: {len(steps)} steps > budget {budget}")
        feasible = {(c.r, c.n, c.s) for c in campaign.feasible}
        for e in steps:
            c = e["payload"]["config"]
            if c is None:  # an invalid suggestion: nothing evaluated, its error says why
                problems.append(f"validity: step {e['payload']['step']}: {e['payload']['error']}")
                break
            if (float(c["r"]), int(c["n"]), int(c["s"])) not in feasible:
                problems.append(f"feasibility: step {e['payload']['step']} chose {c}")
                break
        if [e["hash"] for e in runs[0]] != [e["hash"] for e in runs[1]]:
            problems.append("determinism: two searches with the same seed differ")
        return problems


class SpecProblem(TypedDict):
    """The campaign options a spec rebuilds (`spec_problem`); `run` drops the ones the caller
    gives again."""

    task: str
    settings: NotRequired[PipelineSettings]
    space: NotRequired[ConfigSpace]


def spec_problem(spec: EnvironmentSpec) -> SpecProblem:
    """The task, pipeline settings and configuration space a configsearch spec was compiled
    from, read from the spec itself."""
    from labreplay.suites.configsearch.pipeline import PipelineSettings
    from labreplay.suites.configsearch.space import ConfigSpace

    body = spec.body
    space = body["space"]
    return {
        "task": spec.spec_id,
        "settings": PipelineSettings(**body["pipeline"]["settings"]),
        "space": ConfigSpace(
            tuple(float(r) for r in space["r"]),
            tuple(int(n) for n in space["n"]),
            tuple(int(s) for s in space["s"]),
            tuple((int(n), int(s)) for n, s in space["s_cap"]),
        ),
    }


SUITE = ConfigsearchSuite()
