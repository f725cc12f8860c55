"""Reference rows of every replay: the no-data heuristic smallest-ns beside BO and random, the
fits each search used against the exhaustive sweep and a single configuration, and BO against
each reference pooled over references with a cluster bootstrap, on fresh seeds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from labreplay.suites.configsearch.cli import app
from labreplay.suites.configsearch.pooled import cluster_bootstrap_ci, pooled
from labreplay.suites.configsearch.references import _search_tables, load_reference
from labreplay.suites.configsearch.targets import fits_of

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "references" / "configsearch"


def _ref(name: str) -> Path:
    path = RECORDED / name
    if not path.exists():
        pytest.skip("no recorded reference files")
    return path


def test_smallest_ns_tries_untried_candidates_in_ascending_n_times_s() -> None:
    ref = load_reference(_ref("refractive_index__rf-scm.json.gz"))
    result = _search_tables(
        {ref.model: ref}, "best-model", "smallest-ns", 10, 4, 500, 30, "botorch"
    )
    design = [s.candidate.config for s in result.steps[:4] if s.candidate]
    guided = [s.candidate.config for s in result.steps[4:] if s.candidate]
    assert len(guided) == 6 and all(s.phase == "smallest-ns" for s in result.steps[4:])
    sizes = [c.n * c.s for c in guided]
    assert sizes == sorted(sizes) and min(sizes) >= 30
    # nothing untried is smaller than what it picked
    untried = [c for c in ref.maes if c.n * c.s >= 30 and c not in design]
    assert sorted(c.n * c.s for c in untried)[:6] == sizes
    # ties are broken by the seed, not by the table's order
    other = _search_tables({ref.model: ref}, "best-model", "smallest-ns", 10, 4, 501, 30, "botorch")
    assert [s.candidate for s in other.steps[4:]] != [s.candidate for s in result.steps[4:]]


def test_cluster_bootstrap_is_seeded_and_wider_than_one_cluster_warrants() -> None:
    constant = np.full((3, 5), 0.25)
    assert cluster_bootstrap_ci(constant, resamples=500) == (0.25, 0.25, 0.25)
    # references that differ while their seeds agree: the interval comes from the references
    table = np.repeat(np.array([[0.0], [1.0], [0.0], [1.0]]), 10, axis=1)
    mean, lo, hi = cluster_bootstrap_ci(table, seed=7, resamples=2000)
    assert mean == 0.5 and lo < 0.25 and hi > 0.75
    assert cluster_bootstrap_ci(table, seed=7, resamples=2000) == (mean, lo, hi)


def _seeds(hits: list[int]) -> dict[str, list]:
    return {"hit": hits, "steps_to_target": [5 if h else None for h in hits],
            "final_normalised": [0.5 * h for h in hits], "fits_used": [100] * len(hits)}  # fmt: skip


def test_pooled_block_leads_with_the_baseline_that_hits_most() -> None:
    # random hits least, the heuristic most: BO is read against the heuristic first
    rows = [
        {"reference": f"ref{i}", "scored": True, "seeds": 4, "budget": 12,
         "per_seed": {"seeds": [0, 1, 2, 3], "bo": _seeds([1, 1, 0, 0]),
                      "random": _seeds([1, 0, 0, 0]), "smallest-ns": _seeds([1, 1, 1, 0])}}
        for i in range(3)
    ]  # fmt: skip
    block = pooled(rows, resamples=200)  # type: ignore[arg-type]
    assert block["strongest"] == "smallest-ns"
    assert list(block["vs"]) == ["smallest-ns", "random"]
    assert block["vs"]["smallest-ns"]["smallest-ns_hits"] == 9
    assert block["vs"]["random"]["random_hits"] == 3
    # the order of `against` changes nothing but a tie
    assert pooled(rows, ("smallest-ns", "random"), resamples=200)["strongest"] == "smallest-ns"  # type: ignore[arg-type]
    for r in rows:
        r["per_seed"]["random"] = _seeds([1, 1, 1, 0])  # type: ignore[index]
    # equal hits: the one BO gains least on in normalised score (here equal too: the first)
    assert pooled(rows, resamples=200)["strongest"] == "random"  # type: ignore[arg-type]


def test_replay_defaults_reference_rows_cost_and_pooled_block_on_fresh_seeds(
    tmp_path: Path,
) -> None:
    refs = [_ref("shear_modulus__crabnet.json.gz"), _ref("refractive_index__rf-scm.json.gz")]
    for path in refs:  # two references in one directory keep the test short
        shutil.copy(path, tmp_path / path.name)
    runner = CliRunner()
    args = ["replay", "--references", str(tmp_path), "--seeds", "2", "--seed-start", "500",
            "--surrogate", "sklearn-gp"]  # fmt: skip
    result = runner.invoke(app, [*args, "--json", "--json-pooled"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    rows, pooled = doc["rows"], doc["pooled"]
    assert len(rows) == 2
    for row in rows:
        # the paper's budget is the default for best-model too
        assert (row["budget"], row["init"]) == (12, 4)
        assert row["per_seed"]["seeds"] == [500, 501]
        assert set(row["per_seed"]) == {"seeds", "bo", "random", "smallest-ns"}
        cost = row["cost"]
        ref = load_reference(refs[0] if row["model"] == "crabnet" else refs[1])
        assert cost["exhaustive_fits"] == fits_of([(ref.model, c) for c in ref.maes])
        assert cost["single_config_fits"] == 48
        for method in ("bo", "random", "smallest-ns"):
            fits = row["per_seed"][method]["fits_used"]
            c = cost["methods"][method]
            assert c["mean_fits"] == pytest.approx(np.mean(fits))
            assert c["saved_vs_exhaustive"] == pytest.approx(
                1 - np.mean(fits) / cost["exhaustive_fits"]
            )
    shear = next(r for r in rows if r["task"] == "shear_modulus")
    h = shear["heuristic"]
    if h["hits"] >= shear["bo_hits"] and h["hits"] > 0:
        assert "admissibility boundary" in h["boundary"]
    else:
        assert h["boundary"] is None
    assert pooled["references"] == [r["reference"] for r in rows]
    assert pooled["bootstrap"]["resamples"] == 10_000 and pooled["bootstrap"]["seed"] == 0
    for other in ("random", "smallest-ns"):
        v = pooled["vs"][other]
        hit = np.mean([np.subtract(r["per_seed"]["bo"]["hit"], r["per_seed"][other]["hit"])
                       for r in rows])  # fmt: skip
        assert v["hit"]["mean"] == pytest.approx(hit)
        lo, hi = v["hit"]["ci95"]
        assert lo <= v["hit"]["mean"] <= hi
    # the plain --json keeps its list of rows; the text output carries the pooled block
    plain = runner.invoke(app, args)
    assert plain.exit_code == 0, plain.output
    assert "pooled over 2 references x 2 seeds (500..501)" in plain.output
    # JSON keys are sorted: `strongest` names the lead; the text prints it first
    lead = f"  vs {pooled['strongest']} (the strongest baseline): "
    assert plain.output.index(lead) < min(
        plain.output.index(f"  vs {m}: ") for m in pooled["vs"] if m != pooled["strongest"]
    )
    assert (
        "smallest-ns (no-data heuristic" in plain.output and "single configuration" in plain.output
    )


def test_boundary_line_needs_hits_the_heuristic_made_itself() -> None:
    from labreplay.suites.configsearch.references import ReplayPlan, _boundary, replay_landscape

    ref = load_reference(_ref("refractive_index__rf-scm.json.gz"))
    plan = ReplayPlan(ref)
    land = replay_landscape(ref, "best-model")
    # hits inside the shared initial design say nothing about n*s; fewer hits than BO neither
    assert _boundary(plan, land, bo_hits=1, heuristic_hits=2, in_design=2) is None
    assert _boundary(plan, land, bo_hits=5, heuristic_hits=4, in_design=0) is None
    line = _boundary(plan, land, bo_hits=2, heuristic_hits=3, in_design=1)
    assert line is not None and "admissibility boundary" in line and "C_min bound 30" in line
