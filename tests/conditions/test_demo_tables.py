"""`make demo`'s conditions part: its score table names each metric as the report and the
leaderboard do (`HEADLINE_LABELS`, one table) and prints three decimals (issue 51). The demo
itself runs, on one small dataset (edbo_mitsunobu: every question type) so it stays fast."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.report.test_labels_and_numbers import unreadable


def test_the_demo_labels_its_metrics_as_the_report_does(
    data_dir: Path,
    natural_width: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from labreplay.suites.conditions import demo
    from labreplay.suites.conditions.summary import HEADLINE_LABELS

    monkeypatch.setattr(demo, "dataset_names", lambda: ["edbo_mitsunobu"])
    figures = demo.run_demo(data_dir, tmp_path / "runs.sqlite", tmp_path / "out")
    text = capsys.readouterr().out
    assert not unreadable(text), unreadable(text)
    ranker = figures["runs"]["ranker_leave_table_out"]
    rows = [line for line in text.splitlines() if line.startswith("│")]
    for metric, _ in demo.SHOWN:  # a file gets the table whole: one line per metric
        (line,) = [line for line in rows if line.startswith(f"│ {HEADLINE_LABELS[metric]} ")]
        value = ranker.get(metric)  # None: no question of its kind scored (no FIB hit)
        cell = "-" if value is None else f"{float(str(value)):.3f}"
        assert f" {cell} " in line, (metric, line)
