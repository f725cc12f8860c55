"""The cost claim "more than half the cost saved", against the exhaustive sweep and against a
single-configuration protocol, for BO and random search, from real replays."""

from __future__ import annotations

from pathlib import Path

import pytest

from labreplay.suites.configsearch.cost import (
    cost_claim_line,
    cost_claims,
    pooled_cost_claims,
    saving_claim,
)
from labreplay.suites.configsearch.references import compare, load_reference

RECORDED = Path(__file__).resolve().parents[2] / "benchmarks" / "references" / "configsearch"


def test_saving_claim_verdicts_follow_the_interval() -> None:
    assert saving_claim([100, 110, 90], "exhaustive sweep", 1000)["verdict"] == "supported"
    # more fits than the single-configuration protocol: a negative saving, not supported
    single = saving_claim([150, 160, 170], "single configuration (0, 48, 10)", 48)
    assert single["saved"] < 0 and single["verdict"] == "not supported"
    assert saving_claim([100, 900], "exhaustive sweep", 1000)["verdict"] == "inconclusive"
    assert saving_claim([100], "exhaustive sweep", 1000)["verdict"].startswith("untestable")


def test_bo_extra_fits_are_paired_by_seed() -> None:
    claims = cost_claims({"bo": [10, 20], "random": [30, 20]}, 1000, 48)
    assert claims["bo_extra_fits_vs_random"]["mean"] == -10.0
    assert [r["protocol"] for r in claims["methods"]["bo"]] == [
        "exhaustive sweep",
        "single configuration (0, 48, 10)",
    ]
    assert "BO minus random -10.0 fits" in cost_claim_line(claims)


def test_replay_rows_carry_the_cost_claim_and_one_reference_pools_to_no_verdict() -> None:
    ref = load_reference(RECORDED / "refractive_index__rf-scm.json.gz")
    row = compare(ref, [500, 501, 502], 6, 3, 6, surrogate="sklearn-gp")
    claim = row["cost"]["claim"]
    bo_vs_single = claim["methods"]["bo"][1]
    assert bo_vs_single["protocol_fits"] == row["cost"]["single_config_fits"] == 48
    assert bo_vs_single["mean_fits"] == row["cost"]["methods"]["bo"]["mean_fits"]
    for pooled in pooled_cost_claims([row]):
        assert pooled["references"] == 1 and pooled["verdict"].startswith("untestable")


def test_chance_shown_is_that_of_the_random_search_run() -> None:
    from labreplay.suites.configsearch.targets import chance_of_target

    ref = load_reference(RECORDED / "shear_modulus__rf-scm.json.gz")
    row = compare(ref, [500, 501, 502, 503], 6, 3, 6, surrogate="sklearn-gp")
    # BO and random share each seed's initial design: the design hits are the same
    k, seeds, size = row["bo_hits_in_initial_design"], row["seeds"], row["candidates"]
    after = chance_of_target(row["configs_on_target"], size - 3, 3)
    assert row["random_chance_within"] == pytest.approx((k + (seeds - k) * after) / seeds)
    assert row["uniform_chance_within"] == chance_of_target(row["configs_on_target"], size, 6)
