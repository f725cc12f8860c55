"""The normalised target and the cost accounting of METRICS.md (pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

from labreplay.suites.configsearch.search import (
    Candidate,
    Step,
    landscape,
    maximin_design,
    scored_trace,
)
from labreplay.suites.configsearch.space import Config, ConfigSpace
from labreplay.suites.configsearch.targets import (
    Landscape,
    block_shrunk,
    chance_of_target,
    costs,
    fits_of,
    in_reference_block,
    reliable,
    standard_error,
    sweep_summary,
    target_metrics,
)


def test_normalised_score_and_the_top5_or_one_se_target() -> None:
    # 100 candidates: the target is the 5th smallest value, widened to m* + SE(m*) when known
    values = tuple([0.0005] + [0.2 + 0.01 * i for i in range(99)])
    land = Landscape("min", values, "(0.7, 4, 1)")
    med = float(np.median(values))
    assert land.normalised(med) == pytest.approx(0.0)
    assert land.normalised(0.0005) == pytest.approx(1.0)
    assert land.threshold == pytest.approx(0.23) and land.on_target == 5 and not land.se_known
    metrics = target_metrics(land, [0.5, 0.3, 0.23, 0.23], [1, 2, 3, 4], init=2)
    assert metrics["steps_to_target"] == 3 and metrics["evaluations_to_target"] == 3
    assert metrics["reached_target"] and not metrics["target_in_initial_design"]
    assert land.top_threshold == 0.0005 and metrics["reached_top1pct"] is False
    # the optimum's own SE is wider than the top-5% band: the band never gets narrower
    wide = Landscape("min", values, "x", se_floor=0.25, se_known=True)
    assert wide.threshold == pytest.approx(0.2505) and wide.on_target == 7
    assert land.chance(8) == pytest.approx(chance_of_target(5, 100, 8))


def test_block_shrinkage_removes_the_winners_curse_of_a_small_test_set() -> None:
    # block (0, 6): its s = 5 value is a lucky draw of 30 test points (raw minimum), the larger
    # test sets of the block agree on 1.0; block (0.1, 24) is 0.9 at every s, precisely
    lucky, big = Config(0.0, 6, 5), [Config(0.0, 6, s) for s in (8, 9, 10)]
    good = [Config(0.1, 24, s) for s in (2, 3, 4)]
    maes = {lucky: 0.7, **{c: 1.0 for c in big}, **{c: 0.9 for c in good}}
    se = {c: 1.0 / np.sqrt(c.n * c.s) for c in maes}
    shrunk = block_shrunk(maes, se)
    assert shrunk is not None
    # the spread inside each block is what its test sets' noise gives: tau^2 = 0, every value
    # is its block's precision-weighted mean, known as well as the block's largest test set
    assert shrunk.tau2 == 0.0
    w = {c: 1 / se[c] ** 2 for c in [lucky, *big]}
    block = sum(maes[c] * w[c] for c in w) / sum(w.values())
    assert shrunk.values[lucky] == pytest.approx(block) and block > 0.9
    assert shrunk.se[lucky] == pytest.approx(se[Config(0.0, 6, 10)])
    assert min(shrunk.values, key=shrunk.values.__getitem__) in good
    # a real spread inside a block (far beyond its SEs) is kept
    wide = {Config(0.0, 48, s): 1.0 + s for s in (1, 2, 3)} | {
        Config(0.1, 48, s): 2.0 + s for s in (1, 2, 3)
    }
    kept = block_shrunk(wide, {c: 0.01 for c in wide})
    assert kept is not None and kept.tau2 > 0
    assert all(kept.values[c] == pytest.approx(wide[c], abs=1e-3) for c in wide)
    # an unknown SE: no shrinkage (the raw reading, flagged elsewhere)
    assert block_shrunk(maes, {**se, lucky: None}) is None
    # the landscape reads the shrunk values; a search's best so far is read the same way
    table = {("m", c): v for c, v in maes.items()}
    land = landscape(
        "best-model", table, ["m"], list(maes), None, 30, {("m", c): v for c, v in se.items()}
    )
    assert land.notes["block_tau2"] == {"m": 0.0} and land.argopt.startswith("(0.1, 24")
    assert land.optimum == pytest.approx(0.9) and land.value_of("m", lucky, 0.7) == pytest.approx(
        block
    )
    steps = [Step(1, "init", Candidate(lucky, "m"), {"m": 0.7}, 0.7, 0.7, None, 0.0),
             Step(2, "bo", None, {}, None, 0.7, None, 0.0),
             Step(3, "bo", Candidate(good[0], "m"), {"m": 0.9}, 0.9, 0.7, None, 0.0)]  # fmt: skip
    assert scored_trace(land, steps) == pytest.approx([block, block, 0.9])
    raw = landscape("best-model", table, ["m"], list(maes), None, 30)
    assert raw.scores is None and scored_trace(raw, steps) == [0.7, 0.7, 0.7]


def test_maximised_degenerate_and_needle_landscapes() -> None:
    land = Landscape("max", (0.0, 1.0, 2.0, 3.0, 10.0), "x")
    assert land.normalised(10.0) == pytest.approx(1.0) and land.normalised(2.0) == 0.0
    flat = Landscape("min", (1.0, 1.0, 1.0, 2.0), "x")
    assert flat.degenerate and flat.normalised(1.0) is None
    metrics = target_metrics(flat, [1.0], [1], init=1)
    # three of four candidates are on target: trivial, and said so
    assert metrics["degenerate_objective"] and metrics["steps_to_target"] == 1
    assert any(w.startswith("trivial") for w in flat.warnings(3))
    assert any(w.startswith("needle") for w in land.warnings(1))


def test_c_min_and_the_reference_block() -> None:
    assert reliable(Config(0.0, 10, 3), 30) and not reliable(Config(0.0, 4, 7), 30)
    assert in_reference_block(Config(0.0, 48, 1)) and not in_reference_block(Config(0.1, 48, 10))
    assert standard_error(2.0, 16) == pytest.approx(0.5) and standard_error(None, 16) is None


def test_costs_count_fits_per_training_set_and_name_the_protocols() -> None:
    used = [
        ("rf-scm", Config(0.0, 4, 1)),
        ("rf-scm", Config(0.0, 4, 9)),
        ("rf-scm", Config(0.1, 12, 2)),
    ]
    assert fits_of(used) == 4 + 12  # every s of (0, 4) reuses the same 4 fits
    space = ConfigSpace(r_values=(0.0, 0.1), n_values=(4, 12, 48), s_values=(1, 9, 10), s_cap=())
    exhaustive = [("rf-scm", c) for c in space.points()]
    out = costs(used, exhaustive, ["rf-scm"])
    assert out["exhaustive_fits"] == 2 * (4 + 12 + 48) and out["exhaustive_evaluations"] == 18
    assert out["omee_0_48_10_fits"] == 48 and out["omee_0_48_10_evaluations"] == 1
    assert out["cost_saved_fits_vs_exhaustive"] == pytest.approx(1 - 16 / 128)
    assert out["cost_saved_fits_vs_omee_0_48_10"] == pytest.approx(1 - 16 / 48)
    # three evaluations against Omee et al.'s single one: a negative saving, reported as such
    assert out["cost_saved_evaluations_vs_omee_0_48_10"] == pytest.approx(-2.0)


def test_maximin_design_is_seeded_and_spreads_out() -> None:
    space = ConfigSpace()
    x = space.encode(space.points())
    a, b = maximin_design(x, 4, 3, "best-model"), maximin_design(x, 4, 3, "best-model")
    assert a == b and len(set(a)) == 4

    def gap(idx: list[int]) -> float:
        pts = x[idx]
        d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
        return float(d[np.triu_indices(4, 1)].min())

    rng = np.random.default_rng(0)
    random_gaps = [gap(list(rng.choice(len(x), 4, replace=False))) for _ in range(50)]
    assert gap(a) > np.median(random_gaps)


def test_maximin_design_picks_what_one_subset_at_a_time_picks() -> None:
    """The design draws every subset first and scores them in one array operation: the pick is
    the one the plain loop (draw, score, keep the first strictly farther) makes, every seed."""
    from labreplay.sdk import make_rng
    from labreplay.suites.configsearch.search import MAXIMIN_TRIES

    space = ConfigSpace()
    x = space.encode(space.points())
    for seed in range(12):
        for size in (3, 4):
            rng = make_rng(seed, "configsearch", "initial-design", "closest")
            best: list[int] = []
            best_gap = -1.0
            for _ in range(MAXIMIN_TRIES):
                pick = rng.choice(len(x), size=size, replace=False)
                d = np.linalg.norm(x[pick][:, None] - x[pick][None], axis=-1)
                gap = float(d[np.triu_indices(size, 1)].min())
                if gap > best_gap:
                    best, best_gap = [int(i) for i in pick], gap
            assert maximin_design(x, size, seed, "closest") == best


def test_landscape_caches_give_the_values_it_computes() -> None:
    values = (0.5, 0.1, 0.3, 0.9, 0.2) * 8
    land = Landscape("min", values, "x", se_floor=0.15, se_known=True)
    assert land.threshold == land.threshold == max(sorted(values)[1], 0.1 + 0.15)
    assert land.on_target == sum(1 for v in values if v <= 0.25 + 1e-12)
    assert land.median == float(np.median(values)) and land.top_threshold == 0.1
    high = Landscape("max", values, "x")
    assert high.threshold == sorted(values, reverse=True)[1] and high.optimum == 0.9


def test_paper_claims_read_the_marginals() -> None:
    from labreplay.suites.configsearch.targets import paper_claims

    payloads = [
        {"config": {"r": r, "n": n, "s": s}, "mae": 0.1 * s + (0.5 if n > 24 else 0.0) + 0.01 * r}
        for r in (0.0, 0.5)
        for n in (4, 24, 48)
        for s in (1, 2, 9)
    ]
    claims = paper_claims(payloads, "band_gap")
    assert claims["best_s"] == 1 and claims["s_le_8_optimal"] and claims["band_gap_s_is_1"]
    assert claims["n_le_24_enough"] and claims["r_negligible"] is True
    assert claims["r_values"] == [0.0, 0.5]


def test_sweep_summary_flags_a_needle_optimum_on_a_tiny_degenerate_test_set() -> None:
    def payload(r: float, n: int, s: int, mae: float, degenerate: int) -> dict[str, object]:
        return {
            "config": {"r": r, "n": n, "s": s},
            "mae": mae,
            "mae_nondegenerate": None if degenerate == n else mae,
            "degenerate_folds": degenerate,
            "n_test": n * s,
            "fold_test_sizes": [s] * n,
        }

    # one lucky configuration: 4 test points, every fold on the zero-gap point mass
    payloads = [payload(0.7, 4, 1, 0.0003, 4)]
    payloads += [payload(0.0, 48, s, 0.2 + 0.01 * s, 0) for s in range(1, 10)]
    summary = sweep_summary(payloads)
    assert summary["argmin_test_points"] == 4 and summary["argmin_degenerate_folds"] == 4
    assert summary["configs_on_target"] == 1  # only the optimum clears 0.95 of the gap
    assert summary["all_degenerate_configs"] == 1 and summary["short_folds"] == 0
