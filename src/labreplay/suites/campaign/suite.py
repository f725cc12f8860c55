"""The campaign suite's registry entry (entry point `labreplay.suites: campaign`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.suite import ReportSection

if TYPE_CHECKING:
    import typer

    from labreplay.store.sqlite import Store


class CampaignSuite:
    name = "campaign"

    def cli(self) -> typer.Typer:
        from labreplay.suites.campaign.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.report.html import campaign_html
        from labreplay.suites.campaign.report import campaign_section

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


SUITE = CampaignSuite()
