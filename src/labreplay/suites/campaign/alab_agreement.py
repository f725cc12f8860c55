"""How far the A-Lab pipeline outcome rule agrees with the Precursor Genome's expert labels.

191 pipeline runs (`PG_xxxx-1`) are runs of Precursor Genome samples, whose ledger holds an
expert-validated outcome (a reaction category, or an unclassified physical failure). On those
samples the pipeline's rule (`alab_outcome`) and the experts can be compared label by label:
`physical_failure`, one of the four categories, or `undecided` (the rule's typed Missing).
`labreplay campaign compile --record alab-pipeline` prints these figures; `ledger_agreement`
returns them to Python.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from labreplay.sdk import Missing, Record
from labreplay.sdk.events import JsonValue

if TYPE_CHECKING:
    from labreplay.suites.campaign.records_pg import Outcome

UNDECIDED = "undecided"
PHYSICAL_FAILURE = "physical_failure"


class AgreementReport(TypedDict):
    rule: str
    overlap: int  # Precursor Genome samples the pipeline also ran
    decided_by_rule: int
    decided_by_experts: int
    decided_by_both: int
    agreeing: int  # decided by both, same label
    confusion: dict[str, dict[str, int]]  # rule label -> expert label -> samples
    undecided_reasons: dict[str, int]  # the rule's Missing reasons (text before any ':')


def outcome_label(outcome: Outcome | Mapping[str, JsonValue | Missing]) -> str:
    """`physical_failure`, the category, or `undecided` (validity or category Missing)."""
    valid = outcome.get("valid")
    if valid is False:
        return PHYSICAL_FAILURE
    category = outcome.get("category")
    if valid is True and isinstance(category, str):
        return category
    return UNDECIDED


def _undecided_reason(outcome: Outcome | Mapping[str, JsonValue | Missing]) -> str:
    valid, category = outcome.get("valid"), outcome.get("category")
    missing = valid if isinstance(valid, Missing) else category
    reason = missing.reason if isinstance(missing, Missing) else "no outcome"
    return reason.split(":", 1)[0].strip()


def outcome_agreement(
    rule: str, run_outcomes: Mapping[str, Outcome], samples: Sequence[Record]
) -> AgreementReport:
    """`run_outcomes`: pipeline run name -> the rule's outcome; `samples`: ledger records.

    A sample `PG_xxxx` overlaps when the pipeline holds the run `PG_xxxx-1`."""
    confusion: dict[str, Counter[str]] = {}
    reasons: Counter[str] = Counter()
    overlap = by_rule = by_experts = by_both = agreeing = 0
    for sample in samples:
        outcome = run_outcomes.get(f"{sample.record_id}-1")
        if outcome is None:
            continue
        overlap += 1
        mine, theirs = outcome_label(outcome), outcome_label(sample.outcome)
        confusion.setdefault(mine, Counter())[theirs] += 1
        by_rule += mine != UNDECIDED
        by_experts += theirs != UNDECIDED
        if mine == UNDECIDED:
            reasons[_undecided_reason(outcome)] += 1
        elif theirs != UNDECIDED:
            by_both += 1
            agreeing += mine == theirs
    return {
        "rule": rule,
        "overlap": overlap,
        "decided_by_rule": by_rule,
        "decided_by_experts": by_experts,
        "decided_by_both": by_both,
        "agreeing": agreeing,
        "confusion": {m: dict(sorted(c.items())) for m, c in sorted(confusion.items())},
        "undecided_reasons": dict(reasons.most_common()),
    }


def ledger_agreement(data_dir: str | Path | None = None) -> AgreementReport:
    """The agreement on the real records of a data directory (the pipeline runs and the
    Precursor Genome samples), with the rule the A-Lab record compiles with."""
    from labreplay.sdk.data import resolve_data_dir
    from labreplay.suites.campaign.alab_outcome import RULE_NAME, derive_outcome
    from labreplay.suites.campaign.records_alab import load_pipeline_runs
    from labreplay.suites.campaign.records_pg import load_precursor_genome

    root = resolve_data_dir(data_dir)
    runs = load_pipeline_runs(root)
    outcomes = {name: derive_outcome(run) for name, run in runs.items()}
    return outcome_agreement(RULE_NAME, outcomes, load_precursor_genome(root, with_pipeline=False))


def agreement_lines(report: AgreementReport) -> list[str]:
    """The compile printout: counts, the confusion by category, why the rule left samples
    undecided."""
    both = report["decided_by_both"]
    share = f"{100 * report['agreeing'] / both:.0f}%" if both else "-"
    cells = [
        f"{mine}->{theirs} {n}"
        for mine, row in report["confusion"].items()
        for theirs, n in row.items()
        if mine != UNDECIDED
    ]
    undecided = ", ".join(f"{reason} {n}" for reason, n in report["undecided_reasons"].items())
    return [
        f"outcome rule {report['rule']} vs the ledger's expert labels on the "
        f"{report['overlap']} Precursor Genome samples the pipeline also ran: decided by the "
        f"rule {report['decided_by_rule']}, by the experts {report['decided_by_experts']}, by "
        f"both {both}; agreeing {report['agreeing']} ({share} of those decided by both)",
        "confusion (rule->experts): " + (", ".join(cells) or "none"),
        "undecided by the rule: " + (undecided or "none"),
    ]
