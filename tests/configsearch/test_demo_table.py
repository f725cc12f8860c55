"""`make demo`'s configsearch part prints its figures rounded as the boards round (three
decimals, shares as percentages; it once printed `max/min 2.5398150226174945; cache hit ratio
None`) and says what "fits saved" counts beside the paper's claim (issue 51). The demo itself
runs, on a small space with two seeds so it stays fast."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.configsearch.conftest import SMALL_SETTINGS
from tests.report.test_labels_and_numbers import unreadable

from labreplay.suites.configsearch.space import ConfigSpace

# 12 configurations, 10 of them with n*s >= 30 test points (what the demo's searches choose
# among), in 4 (r, n) training sets: 2 x (4 + 6) = 20 model fits for the exhaustive sweep
SPACE = ConfigSpace(r_values=(0.0, 0.5), n_values=(4, 6), s_values=(5, 8, 10), s_cap=())


@pytest.mark.slow
def test_the_demo_prints_rounded_figures_and_what_fits_saved_means(
    data_dir: Path,
    natural_width: object,
    cache_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from labreplay.suites.configsearch import demo

    monkeypatch.setattr(demo, "QUICK_SETTINGS", SMALL_SETTINGS)
    monkeypatch.setattr(demo, "QUICK_SPACE", SPACE)
    summary = demo.run_demo(data_dir, tmp_path / "runs.sqlite", tmp_path / "out", True, seeds=2)
    text = capsys.readouterr().out
    assert not unreadable(text), unreadable(text)
    assert "None" not in text
    assert (summary["exhaustive_fits"], summary["training_sets"]) == (20, 4)
    ratio = summary["mae_max_min_ratio"]
    assert ratio is not None and f"(highest / lowest {ratio:.3f})" in text
    assert [r["method"] for r in summary["comparison"]] == ["bo", "random"]
    for row in summary["comparison"]:
        # the saving shown is the one the sweep's fits, shown beside it, give
        saved = 1 - row["mean_fits_used"] / summary["exhaustive_fits"]
        assert row["cost_saved_fits_vs_exhaustive"] == pytest.approx(saved)
        line = next(line for line in text.splitlines() if line.startswith(f"│ {row['method']} "))
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert cells[3:] == [
            f"{row['mean_final_best_mae']:.3f}",
            f"{float(str(row['exhaustive_optimum'])):.3f}",
            f"{row['mean_fits_used']:.1f}",
            f"{saved:.1%}",
        ]
    prose = " ".join(text.split())
    assert "sweep's 20 model fits" in prose and "only 4 training sets" in prose
    assert "more than half the cost saved" in prose and "configsearch replay" in prose
