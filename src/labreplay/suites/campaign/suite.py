"""The campaign suite's registry entry (entry point `labreplay.suites: campaign`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.sdk.agents import CampaignAgent
from labreplay.sdk.engine import ReportSection

if TYPE_CHECKING:
    import typer

    from labreplay.sdk.agents import Agent, ResolvedAgent
    from labreplay.sdk.engine import EnvironmentSpec, Executor, Rederived, RunInfo, Store
    from labreplay.suites.campaign.branches import AssignmentSummary


class CampaignSuite:
    name = "campaign"
    default_seed = 0  # the run seed of `labreplay.run` and of the CLI's --seed
    agent_contract = CampaignAgent  # `serve` forwards what it declares (act, forecast)

    def cli(self) -> typer.Typer:
        from labreplay.suites.campaign.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.sdk.report import paper_html
        from labreplay.suites.campaign.papers import comparison
        from labreplay.suites.campaign.report import campaign_section
        from labreplay.suites.campaign.report_html import campaign_html

        section = campaign_section(store, run_id)
        if section is None:
            return None
        trajectory = section["trajectory"]
        return ReportSection(
            self.name,
            campaign_html(section) + paper_html(comparison(section["board"])),
            {"trajectory_run": trajectory["run_id"] if trajectory else None},
        )

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        from labreplay.suites.campaign.demo import run_demo

        run_demo(data_dir, store, out_dir)

    def compile(self, data_dir: Path | None = None, **options: Any) -> list[EnvironmentSpec]:
        """Options: record (precursor-genome | alab-pipeline) or record_card (a card file),
        protocol (sdl1), seed, overrides. Those of `campaign compile` are checked by its own
        class (`CampaignCompileOptions`): the CLI's refusals, in its words."""
        import dataclasses

        from labreplay.sdk.options import api_names, refuse_unknown
        from labreplay.suites.campaign.api import compile_specs
        from labreplay.suites.campaign.options import CampaignCompileOptions
        from labreplay.suites.campaign.protocol import ProtocolParams

        own = ("record", "record_card", "protocol", "seed", "records", "allow_modified_data")
        overrides = (f.name for f in dataclasses.fields(ProtocolParams))
        refuse_unknown("campaign compile", options, {*own, *overrides})
        declared = api_names(CampaignCompileOptions)
        checked = CampaignCompileOptions(**{k: v for k, v in options.items() if k in declared})
        given = {k: getattr(checked, k) if k in declared else v for k, v in options.items()}
        _, specs, _ = compile_specs(data_dir=data_dir, **given)
        return specs

    def resolve_agent(self, agent: object, **options: object) -> ResolvedAgent:
        """Options: those of `run` (`CampaignRunOptions` plus the LLM options of
        `openai:MODEL`); an unknown key is refused naming the nearest valid one."""
        from labreplay.suites.campaign.api import resolve_campaign_agent
        from labreplay.suites.campaign.options import parse_run_options

        options = {k: v for k, v in options.items() if k != "seed"}
        run_options, llm = parse_run_options(options)
        return resolve_campaign_agent(
            agent, run_options.isolate, run_options.agent_timeout_s, **llm.builder_kwargs()
        )

    def run(
        self,
        specs: Sequence[EnvironmentSpec],
        agent: object,
        store: Store,
        *,
        seed: int = 0,
        executor: Executor | None = None,
        **options: object,
    ) -> list[AssignmentSummary]:
        """Options: those of `CampaignRunOptions` and `LlmOptions` (the CLI's `campaign run`
        flags are generated from the same classes)."""
        from labreplay.suites.campaign.runner import run_campaign

        return run_campaign(specs, agent, store, seed=seed, executor=executor, **options)

    def check_options(self, **options: object) -> None:
        """Refuse bad or unknown run options before any store is opened (`labreplay.run`)."""
        from labreplay.suites.campaign.options import parse_run_options

        parse_run_options(options)

    def reference_agents(self) -> list[str]:
        from labreplay.suites.campaign.agents import REFERENCE_AGENTS

        return sorted(REFERENCE_AGENTS)

    def rescore(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: object,
        store: Store | None = None,
    ) -> dict[str, float | None]:
        """The scalar scores of a stored branch, recomputed from its events and the stored
        evaluator (`store verify` compares them with the `scores` rows)."""
        from labreplay.suites.campaign.metrics import branch_metrics
        from labreplay.suites.campaign.views import spec_body

        metrics = branch_metrics(events, spec_body(spec.body))
        return {
            k: (float(v) if v is not None else None)
            for k, v in metrics.items()
            if isinstance(v, int | float) or v is None
        }

    def rederive(
        self,
        spec: EnvironmentSpec,
        events: Sequence[Mapping[str, object]],
        run: RunInfo,
        store: Store | None = None,
    ) -> Rederived:
        """A stored branch's curves, closures, summary counts and status, recomputed from
        its events, its call log and the failed-run rule (`store verify`)."""
        from labreplay.suites.campaign.verify import rederive_branch

        return rederive_branch(spec, events, run, store)

    def agent_problems(
        self, make_agent: Callable[[], Agent], spec: EnvironmentSpec, seed: int, **options: object
    ) -> list[str]:
        """Options: strict (default True; False lets a random agent's rejections pass)."""
        from labreplay.suites.campaign.checks import agent_problems

        return agent_problems(make_agent, spec, seed, bool(options.get("strict", True)))


SUITE = CampaignSuite()
