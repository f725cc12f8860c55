"""Metric definitions of METRICS.md on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from labreplay.scoring.curves import (
    acceleration_factor,
    adaptive_auc,
    carry_forward,
    first_passage,
    held_out_gain,
    sustained_passage,
)
from labreplay.scoring.proper import joint_log_loss
from labreplay.scoring.stats import paired_bootstrap_ci, sign_test
from labreplay.suites.campaign.metrics import claim_targets

Q = {"completely_reacted": 0.1, "transformed": 0.2, "partially_reacted": 0.3, "unreacted": 0.4}


def test_joint_log_loss():
    assert joint_log_loss(0.9, Q, True, "unreacted", 1e-6) == pytest.approx(
        -math.log(0.9) - math.log(0.4)
    )
    assert joint_log_loss(0.9, Q, False, None, 1e-6) == pytest.approx(-math.log(0.1))
    assert joint_log_loss(1.0, Q, False, None, None) == math.inf
    assert joint_log_loss(1.0, Q, False, None, 1e-6) == pytest.approx(-math.log(1e-6))
    zero = {**Q, "unreacted": 0.0}
    clipped = joint_log_loss(0.5, zero, True, "unreacted", 1e-6)
    assert 13 < clipped < 15  # clipped to eps, renormalised


def test_curve_measures():
    s = carry_forward([-2.0, -1.5, -1.0], 4)
    assert s == [-2.0, -1.5, -1.0, -1.0, -1.0]
    assert adaptive_auc([-2.0, -1.0]) == pytest.approx(-1.5)
    assert adaptive_auc(s) == pytest.approx((-1.75 - 1.25 - 1.0 - 1.0) / 4)
    assert held_out_gain([2.0, 1.2]) == pytest.approx(0.8)
    curve = [-2.0, -1.1, -1.3, -1.0, -0.9]
    assert first_passage(curve, -1.2) == 1
    assert sustained_passage(curve, -1.2) == 3
    assert first_passage(curve, 0.0) is None
    assert acceleration_factor(4, 2) == 2.0
    assert acceleration_factor(None, 2) is None


def test_claim_support_rule():
    refinement = {"kind": "refinement", "content": {"selected": True}}
    tier1 = {"content": {"accepted": True, "final_quality_tier": 1}}
    tier2 = {"content": {"accepted": True, "final_quality_tier": 2}}
    assert claim_targets({"revealed": [refinement], "review": tier1}) == {
        "reaction_category": 1,
        "target_presence": 1,
        "phase_identity": 1,
        "phase_quantification": 1,
    }
    t2 = claim_targets({"revealed": [refinement], "review": tier2})
    assert t2["phase_identity"] == 1 and t2["phase_quantification"] == 0
    assert set(claim_targets({"revealed": [refinement], "review": None}).values()) == {0}
    unselected = {"kind": "refinement", "content": {"selected": None}}
    assert set(claim_targets({"revealed": [unselected], "review": tier1}).values()) == {0}


def test_paired_statistics_are_seeded():
    d = [0.1, -0.05, 0.2, 0.07, 0.0, 0.12]
    a = paired_bootstrap_ci(d, 1)
    assert a == paired_bootstrap_ci(d, 1)
    assert a[1] <= a[0] <= a[2]
    assert sign_test(d)[:2] == (4, 1)
