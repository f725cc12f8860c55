"""The A-Lab pipeline outcome rule `alab-pipeline-outcome/2` (used by `records_alab`).

The pipeline records neither a validity nor a reaction category: both are derived from recorded
fields, and whatever a chemist could not decide from those fields stays a typed Missing with its
reason (the reason's text before any ':' names the kind, so undecided runs can be counted).

Validity (`valid`: the run gave a powder that could be characterised):

* Missing when the export holds no XRD pattern file for the run: a missing file says what the
  export lacks, not what happened in the furnace (the first rule read it as a physical failure;
  the ledger's experts classified all 7 such Precursor Genome runs);
* Missing when the recovered mass is not recorded, negative (the crucible was not tared), or 0 mg
  while an XRD pattern was measured (a contradiction: a pattern needs powder);
* False when no powder was recovered (0 mg) and no pattern exists;
* True otherwise. `xrd_met_target_mass` is shown in the execution record but not used: 54 runs
  with the flag False are valid in the Precursor Genome ledger.

Category (only for a valid run), read from the automated (DARA) refinement the way the ledger's
experts define their categories. Applied to the experts' own selected refinements (the 995
classified ledger samples with a phase list), `category_of` decides 982 and gives the experts'
category for 951 (97%): the reading is theirs; what differs on the A-Lab runs is the automated
phase identification, not the rule.

* a phase is present when the refinement lists it with a positive weight. The export's weight
  fractions are not normalised (a one-phase refinement reports 0.0745), so they are read as
  present/absent only, never against a threshold;
* a formula's characteristic elements are those other than O, H, C and N (the anion and
  volatile framework of oxide, hydroxide, carbonate, oxalate and ammonium precursors);
* a phase *is* a precursor when their atomic fractions agree within 0.02 per element (hydrate
  water ignored): below the smallest gap between two oxides of one metal (Fe3O4/Fe2O3,
  Mn3O4/Mn2O3: 0.029), so a reduced or oxidised precursor never passes for itself, while a
  refined structure's non-stoichiometry (Ni0.96O for NiO) does;
* a *product* is any other phase whose characteristic elements no single precursor holds (a
  reaction between precursors made it); a precursor *remains* when a phase is that precursor or
  holds only its characteristic elements (left over, or transformed on its own);
* every precursor's characteristic elements must appear in some present phase, else Missing:
  what became of the missing one (amorphous, unindexed, volatilised, or inside an unidentified
  product) cannot be read from the refinement; a phase without a characteristic element
  (water, carbon) says nothing about the precursors and is skipped;
* product, two or more precursors remain -> partially_reacted; product, at most one remains
  (the limiting precursor consumed; the other may be stoichiometric excess) ->
  completely_reacted; no product but a phase that is not a precursor -> transformed; only
  precursor phases -> unreacted.

Missing as well: an invalid or undecidable run, no refinement, a failed refinement (its error),
no recorded precursors, a precursor without a characteristic element, an unparseable formula.

The outcome is therefore a function of evidence an agent can buy (the execution record, whether
an XRD scan exists, the automated refinement): `OUTCOME_FROM_EVIDENCE` declares it, every A-Lab
spec carries the declaration and the campaign board prints it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from labreplay.sdk import Missing
from labreplay.suites.campaign import evidence as ev
from labreplay.suites.campaign.chem import parse_formula, phase_formula
from labreplay.suites.campaign.json_values import json_list, json_number, json_object

if TYPE_CHECKING:
    from labreplay.suites.campaign.records_alab import PipelineRun, RunFacts
    from labreplay.suites.campaign.records_pg import Outcome

RULE_NAME = "alab-pipeline-outcome/2"
FRAMEWORK_ELEMENTS = frozenset({"O", "H", "C", "N"})
SAME_PHASE_TOLERANCE = 0.02  # atomic fraction per element; see the module docstring


class EvidenceRule(TypedDict):
    """Which purchasable evidence kinds each outcome field is computed from (declared in a
    spec's `record.outcome_from_evidence`)."""

    rule: str
    fields: dict[str, list[str]]  # outcome field -> evidence kinds
    note: str


OUTCOME_FROM_EVIDENCE: EvidenceRule = {
    "rule": RULE_NAME,
    "fields": {
        "valid": ["execution_record", "xrd_scan"],
        "category": ["automated_refinement"],
    },
    "note": "the outcome is computed from these purchasable evidence kinds by a declared rule: "
    "buying them on a candidate reveals its recorded outcome",
}


def derive_outcome(run: PipelineRun) -> Outcome:
    """The documented rule of this module's docstring."""
    valid = _validity(run["facts"])
    if valid is not True:
        reason = "run not valid" if valid is False else f"validity undecidable: {valid.reason}"
        return {"valid": valid, "category": Missing(reason)}
    refinement = run["evidence"]["automated_refinement"]
    if isinstance(refinement, Missing):
        return {"valid": valid, "category": Missing(refinement.reason)}
    content = json_object(refinement[0]["content"], "automated refinement")
    if not content["success"]:
        return {
            "valid": valid,
            "category": Missing(f"automated refinement failed: {content['error']}"),
        }
    phases = [json_object(p, "phase") for p in json_list(content["phases"], "phases")]
    return {"valid": valid, "category": category_of(phases, run["precursors"])}


def _validity(facts: RunFacts) -> bool | Missing:
    collected, scanned = facts["weight_collected_mg"], bool(facts["xrd_recorded"])
    if collected is None:
        return Missing("recovered mass not recorded")
    if collected < 0:
        return Missing(f"negative recovered mass: {float(collected):g} mg (recording error)")
    if collected == 0:
        if scanned:
            return Missing("recovered mass 0 mg with an XRD pattern recorded: contradictory")
        return False
    if not scanned:
        return Missing("no XRD pattern file recorded in the export")
    return True


def _characteristic(formula: str) -> frozenset[str] | None:
    try:
        return frozenset(parse_formula(formula)) - FRAMEWORK_ELEMENTS
    except ValueError:
        return None


def _is_precursor(formula: str, precursor: str) -> bool:
    anhydrous = re.sub(r"\(H2O\)[0-9.]*", "", precursor)
    return any(
        ev.same_composition(formula, p, SAME_PHASE_TOLERANCE) for p in {precursor, anhydrous}
    )


def category_of(phases: Sequence[Mapping[str, object]], precursors: Sequence[str]) -> str | Missing:
    """The reaction category of one refinement's phases (see the module docstring)."""
    if not precursors:
        return Missing("no precursors recorded")
    owned: list[frozenset[str]] = []
    for precursor in precursors:
        elements = _characteristic(precursor)
        if not elements:
            return Missing(f"precursor without a characteristic element: {precursor}")
        owned.append(elements)
    present = [
        phase_formula(str(p["name"])) for p in phases if json_number(p["weight_fraction"] or 0) > 0
    ]
    if not present:
        return Missing("automated refinement reports no phase weight")
    found: set[str] = set()
    remaining: set[int] = set()
    product = changed = False
    for formula in present:
        elements = _characteristic(formula)
        if elements is None:
            return Missing(f"unparseable phase formula: {formula}")
        if not elements:  # water, carbon: says nothing about any precursor
            continue
        found |= elements
        same = [i for i, p in enumerate(precursors) if _is_precursor(formula, p)]
        if same:
            remaining.update(same)
            continue
        changed = True
        sources = [i for i, e in enumerate(owned) if elements <= e]
        if sources:
            remaining.update(sources)
        else:
            product = True
    unaccounted = [p for p, e in zip(precursors, owned, strict=True) if not e & found]
    if unaccounted:
        return Missing(f"no phase of a precursor in the refinement: {', '.join(unaccounted)}")
    if product:
        return "partially_reacted" if len(remaining) >= 2 else "completely_reacted"
    return "transformed" if changed else "unreacted"
