"""The conditions suite's registry entry (entry point `labreplay.suites: conditions`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labreplay.suite import ReportSection

if TYPE_CHECKING:
    import typer

    from labreplay.store.sqlite import Store


class ConditionsSuite:
    name = "conditions"

    def cli(self) -> typer.Typer:
        from labreplay.suites.conditions.cli import app

        return app

    def report_section(self, store: Store, run_id: str | None = None) -> ReportSection | None:
        from labreplay.report.suites import generic_section

        return generic_section(store, self.name)

    def demo(self, data_dir: Path, store: Path, out_dir: Path, *, full: bool = False) -> None:
        from labreplay.suites.conditions.demo import run_demo

        run_demo(data_dir, store, out_dir / self.name)


SUITE = ConditionsSuite()
