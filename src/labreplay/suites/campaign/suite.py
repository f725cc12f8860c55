"""The campaign suite's registry entry (entry point `labreplay.suites: campaign`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labreplay.suite import ReportSection

if TYPE_CHECKING:
    import typer

    from labreplay.compile.spec import EnvironmentSpec
    from labreplay.execute.base import Executor
    from labreplay.store.sqlite import Store


class CampaignSuite:
    name = "campaign"

    def cli(self) -> typer.Typer:
        from labreplay.suites.campaign.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.suites.campaign.report import campaign_section
        from labreplay.suites.campaign.report_html import campaign_html

        section = campaign_section(store, run_id)
        if section is None:
            return None
        trajectory = section["trajectory"]
        return ReportSection(
            self.name,
            campaign_html(section),
            {"trajectory_run": trajectory["run_id"] if trajectory else None},
        )

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        from labreplay.suites.campaign.demo import run_demo

        run_demo(data_dir, store, out_dir)

    def compile(self, data_dir: Path | None = None, **options: Any) -> list[EnvironmentSpec]:
        """Options: record (precursor-genome | alab), protocol (sdl1), seed, overrides."""
        from labreplay.suites.campaign.api import compile_specs

        _, specs, _ = compile_specs(data_dir=data_dir, **options)
        return specs

    def resolve_agent(self, agent: Any, **options: Any) -> Any:
        """Options: isolate, agent_timeout_s, and the LLM options of `openai:MODEL`."""
        from labreplay.suites.campaign.api import resolve_campaign_agent

        options = {k: v for k, v in options.items() if k not in ("controls", "seed")}
        isolate = bool(options.pop("isolate", False))
        timeout_s = options.pop("agent_timeout_s", None)
        return resolve_campaign_agent(agent, isolate, timeout_s, **options)

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
        """Options: controls (default random, no-evidence); the rest go to the agent."""
        from labreplay.suites.campaign.execute import run_assignments

        controls = tuple(options.pop("controls", ("random", "no-evidence")))
        from labreplay.agents.resolve import ResolvedAgent

        if not isinstance(agent, ResolvedAgent):
            agent = self.resolve_agent(agent, **options)
        options = {k: v for k, v in options.items() if k not in ("isolate", "agent_timeout_s")}
        return run_assignments(list(specs), agent, store, seed, controls, executor, options)

    def reference_agents(self) -> list[str]:
        from labreplay.suites.campaign.agents import REFERENCE_AGENTS

        return sorted(REFERENCE_AGENTS)

    def agent_problems(
        self, make_agent: Callable[[], Any], spec: EnvironmentSpec, seed: int, **options: Any
    ) -> list[str]:
        """Options: strict (default True; False lets a random agent's rejections pass)."""
        from labreplay.suites.campaign.checks import agent_problems

        return agent_problems(make_agent, spec, seed, bool(options.get("strict", True)))


SUITE = CampaignSuite()
