"""The A-Lab pipeline outcome rule (used by `records_alab`).

Outcome rule (the pipeline records no reaction category, so both fields are derived from
recorded fields only; anything undecidable stays Missing with the reason):

* `valid` (physically valid and characterizable):
  - Missing when the recovered mass is not recorded, or is negative (a recording error: the
    crucible weight was not subtracted);
  - False when no powder was recovered (0 mg) or no XRD pattern was recorded: nothing to
    characterise;
  - True otherwise (powder recovered and measured by XRD).
  `xrd_met_target_mass` is kept in the execution record but not used: on the 191 runs of
  Precursor Genome samples, 54 with the flag False are valid in the ledger.
* `category`, only when `valid` is True and the DARA refinement succeeded: each refined phase's
  formula (the text before the first `_` of its name) is matched to the target and to each
  precursor by atomic fractions (every element within 0.01); weight fractions are normalised
  to their sum and a phase counts as present at >= 0.03:
  - no precursor phase, target present -> completely_reacted;
  - no precursor phase, target absent -> transformed;
  - precursor phase(s) plus target or other phases -> partially_reacted;
  - only precursor phases -> unreacted.
  Otherwise Missing: invalid run, failed refinement (its error), or undecidable validity.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labreplay.sdk import Missing
from labreplay.suites.campaign import evidence as ev

RULE_NAME = "alab-pipeline-outcome/1"
PRESENCE_THRESHOLD = 0.03


def _anhydrous(formula: str) -> str:
    import re

    return re.sub(r"\(H2O\)[0-9.]*", "", formula)


def derive_outcome(run: Mapping[str, Any]) -> dict[str, Any]:
    """The documented rule of this module's docstring."""
    facts = run["facts"]
    collected = facts["weight_collected_mg"]
    valid: bool | Missing
    if collected is None:
        valid = Missing("recovered mass not recorded")
    elif collected < 0:
        valid = Missing(f"negative recovered mass {float(collected):g} mg (recording error)")
    else:
        valid = collected > 0 and bool(facts["xrd_recorded"])
    if valid is not True:
        reason = "run not valid" if valid is False else f"validity undecidable: {valid.reason}"
        return {"valid": valid, "category": Missing(reason)}
    refinement = run["evidence"]["automated_refinement"]
    if isinstance(refinement, Missing):
        return {"valid": valid, "category": Missing(refinement.reason)}
    content = refinement[0]["content"]
    if not content["success"]:
        return {
            "valid": valid,
            "category": Missing(f"automated refinement failed: {content['error']}"),
        }
    return {"valid": valid, "category": _category(content["phases"], run)}


def _category(phases: list[dict[str, Any]], run: Mapping[str, Any]) -> str | Missing:
    weights = [(p["name"].split("_", 1)[0], p["weight_fraction"] or 0.0) for p in phases]
    total = sum(w for _, w in weights)
    if total <= 0:
        return Missing("automated refinement reports no phase weight")
    target = str(run["target_formula"])
    precursors = [f for p in run["precursors"] for f in {p, _anhydrous(p)}]
    has_target = has_precursor = has_other = False
    for formula, weight in weights:
        if weight / total < PRESENCE_THRESHOLD:
            continue
        if any(ev.same_composition(formula, p) for p in precursors):
            has_precursor = True
        elif ev.same_composition(formula, target):
            has_target = True
        else:
            has_other = True
    if not has_precursor:
        return "completely_reacted" if has_target else "transformed"
    return "partially_reacted" if (has_target or has_other) else "unreacted"
