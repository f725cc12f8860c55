"""Scoring for suite authors: campaign curves, proper scoring rules and paired statistics.

    from labreplay.sdk.scoring import adaptive_auc, joint_log_loss, paired_bootstrap_ci

Names are imported from the core on first use (PEP 562), so importing this module is cheap
and a name costs what importing it from its core module did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes

if TYPE_CHECKING:
    from labreplay.scoring.curves import (
        acceleration_factor,
        adaptive_auc,
        carry_forward,
        first_passage,
        held_out_gain,
        sustained_passage,
    )
    from labreplay.scoring.proper import CATEGORIES, binary_log_loss, joint_log_loss
    from labreplay.scoring.stats import BOOTSTRAP_SEED, paired_bootstrap_ci, sign_test

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.scoring.curves": (
        "acceleration_factor",
        "adaptive_auc",
        "carry_forward",
        "first_passage",
        "held_out_gain",
        "sustained_passage",
    ),
    "labreplay.scoring.proper": (
        "CATEGORIES",
        "binary_log_loss",
        "joint_log_loss",
    ),
    "labreplay.scoring.stats": (
        "BOOTSTRAP_SEED",
        "paired_bootstrap_ci",
        "sign_test",
    ),
}

__all__ = [
    "BOOTSTRAP_SEED",
    "CATEGORIES",
    "acceleration_factor",
    "adaptive_auc",
    "binary_log_loss",
    "carry_forward",
    "first_passage",
    "held_out_gain",
    "joint_log_loss",
    "paired_bootstrap_ci",
    "sign_test",
    "sustained_passage",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
