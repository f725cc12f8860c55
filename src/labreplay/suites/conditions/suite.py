"""The conditions suite's registry entry (entry point `labreplay.suites: conditions`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.errors import SpecError
from labreplay.sdk.agents import QuestionAgent
from labreplay.sdk.engine import ReportSection

if TYPE_CHECKING:
    import typer

    from labreplay.sdk.engine import EnvironmentSpec, Executor, Rederived, RunInfo, Store


class ConditionsSuite:
    name = "conditions"
    default_seed = 0  # the run seed of `labreplay.run` and of the CLI's --seed
    agent_contract = QuestionAgent  # `serve` forwards what it declares (answer)

    def cli(self) -> typer.Typer:
        from labreplay.suites.conditions.cli import app

        return app

    def import_cli(self) -> typer.Typer:
        """Commands of `labreplay import ...` this suite adds (`inspect-log`)."""
        from labreplay.suites.inspect_tasks.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.sdk.report import generic_section, paper_html
        from labreplay.suites.conditions.papers import comparison
        from labreplay.suites.conditions.report_html import (
            cost_panel,
            dataset_bars,
            precedent_lifts,
        )
        from labreplay.suites.conditions.summary import HEADLINE_LABELS

        section = generic_section(store, self.name, labels=HEADLINE_LABELS)
        if section is None:
            return None
        html = section.html + dataset_bars(store) + precedent_lifts(store) + cost_panel(store)
        html += paper_html(comparison(store))
        return ReportSection(section.suite, html, section.info)

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        from labreplay.suites.conditions.demo import run_demo

        run_demo(data_dir, store, out_dir / self.name)

    def compile(self, data_dir: Path | None = None, **options: Any) -> list[EnvironmentSpec]:
        """Options: those of `ConditionsCompileOptions` (out: the question file to write,
        required; datasets, default all; seed; the compile rules max_options, min_options,
        max_tables, fib_max_hit_floor) and allow_modified_data, checked as `conditions
        compile` checks its flags."""
        from labreplay.sdk.data import resolve_data_dir
        from labreplay.sdk.options import DataOptions, split_options
        from labreplay.suites.conditions.compiler import compile_datasets
        from labreplay.suites.conditions.datasets import dataset_names
        from labreplay.suites.conditions.options import ConditionsCompileOptions
        from labreplay.suites.conditions.report import write_compiled
        from labreplay.suites.conditions.runner import question_spec

        if options.get("out") is None:
            raise SpecError("conditions compile needs out=PATH (the question file to write)")
        where = "conditions compile"
        compiling, data = split_options(where, options, ConditionsCompileOptions, DataOptions)
        assert isinstance(compiling, ConditionsCompileOptions) and isinstance(data, DataOptions)
        compiled = compile_datasets(
            compiling.datasets or dataset_names(),
            resolve_data_dir(data_dir),
            compiling.seed,
            compiling.rules(),
            data.allow_modified_data,
        )
        write_compiled(compiled, compiling.out)
        return [question_spec(compiling.out, compiled.questions)]

    def resolve_agent(self, agent: Any, **options: Any) -> Any:
        """Options: those of `run` (`ConditionsRunOptions` and `LlmOptions`)."""
        from labreplay.suites.conditions.run import resolve_conditions_agent

        return resolve_conditions_agent(agent, **options)

    def run(
        self,
        specs: Sequence[EnvironmentSpec],
        agent: object,
        store: Store,
        *,
        seed: int = 0,
        executor: Executor | None = None,
        **options: object,
    ) -> list[dict[str, object]]:
        """Options: those of `ConditionsRunOptions` (questions: the question file each spec
        was compiled into) and `LlmOptions`; the CLI's `conditions run` flags are generated
        from the same classes."""
        from labreplay.suites.conditions.run import run_conditions

        return run_conditions(specs, agent, store, seed=seed, executor=executor, **options)

    def check_options(self, **options: object) -> None:
        """Refuse bad or unknown run options before any store is opened (`labreplay.run`)."""
        from labreplay.suites.conditions.options import parse_run_options

        parse_run_options(options)

    def rescore(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> dict[str, float | None]:
        """The headline scores of a stored run, recomputed from its answers and the question
        file the store keeps (`store verify` compares them with the `scores` rows)."""
        from labreplay.sdk.agents import call_failures
        from labreplay.suites.conditions.runner import rescore_run

        if store is None:
            return {}
        fresh = rescore_run(spec, events, int(getattr(run, "seed", 0)), store)
        # the `failed_call_share` row a run with model calls stores
        calls = store.llm_calls(run.run_id)
        share = {"failed_call_share": call_failures(calls)["failed_call_share"]} if calls else {}
        return {**fresh, **share} if fresh else {}

    def rederive(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> Rederived:
        """A stored run's summary detail and status, recomputed from its answers, the
        question file the store keeps and its call log (`store verify`). A run failed by a cap
        rests on the recorded cap, which the events cannot confirm: its status is said as not
        derivable (None)."""
        from labreplay.suites.conditions.episodes import answers_verdict
        from labreplay.suites.conditions.runner import rescored_summary

        calls = store.llm_calls(run.run_id) if store is not None else []
        status: str | None = answers_verdict(events, calls).status
        if status == "complete" and (run.summary or {}).get("cap_reached"):
            status = None
        summary = rescored_summary(spec, events, run.seed, store) if store is not None else None
        details = {"summary": summary} if summary is not None else {}
        return {"controls": [], "details": details, "status": status, "summary": {}}

    def reference_agents(self) -> list[str]:
        return ["random", "ranker", "usual_winner"]

    def agent_problems(
        self, make_agent: Callable[[], Any], spec: EnvironmentSpec, seed: int, **options: Any
    ) -> list[str]:
        """Options: questions (the question file of `spec`; by default the file the compiler
        attached to it)."""
        from labreplay.suites.conditions.checks import agent_problems
        from labreplay.suites.conditions.episodes import spec_questions
        from labreplay.suites.conditions.questions import load_questions

        given = options.get("questions")
        questions = load_questions(Path(given)) if given else list(spec_questions(spec))
        return agent_problems(make_agent, questions, seed)


SUITE = ConditionsSuite()
