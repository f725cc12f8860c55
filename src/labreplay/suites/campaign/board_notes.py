"""Lines a reader of a campaign board must not miss (issue 37, "names that promise bounds"):
where a ranked system beats the oracle (a labelled reference, not an upper bound), where a
ranked system scores below a reference row (beyond a tolerance, with a paired interval), and
where the reference model's ceiling (a greedy best-T gain of the context-trained model, not a
bound on other learners) is exceeded by a system's held-out gain or is negative; and where the
specs declare that the recorded outcome is computed from evidence an agent can buy
(`outcome_from_evidence`, the A-Lab record): buying it on a candidate reveals that candidate's
outcome. Assignments are labelled `seed<k>/<id>`: short ids repeat when partition seeds are
pooled."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

from labreplay.suites.campaign.board_rows import ci
from labreplay.suites.campaign.json_values import json_number
from labreplay.suites.campaign.views import SpecBody

if TYPE_CHECKING:
    from labreplay.suites.campaign.board_rows import AssignmentRow, SystemRow

ORACLE = "oracle"


class OracleBeaten(TypedDict):
    oracle: str
    system: str
    assignments: list[str]  # labels of the assignments where the system scores above
    n: int
    of: int  # assignments both cover


class BelowReference(TypedDict):
    system: str
    reference: str
    system_auc: float
    reference_auc: float
    assignments: int
    lo: NotRequired[float]  # the paired 95% interval of system minus reference AUC
    hi: NotRequired[float]


class CeilingNotes(TypedDict):
    exceeded: list[dict[str, str]]  # {"system", "by", "assignment"}
    negative: list[str]  # labels of the assignments where the ceiling is negative


class OutcomeDeclaration(TypedDict):
    rule: str
    fields: dict[str, list[str]]  # outcome field -> the evidence kinds it is computed from
    specs: NotRequired[int]  # how many of the board's specs declare it
    of: NotRequired[int]  # the board's specs


class BoardNotes(TypedDict, total=False):
    oracle_beaten: list[OracleBeaten]
    below_reference: list[BelowReference]
    reference_ceiling: CeilingNotes
    outcome_from_evidence: list[OutcomeDeclaration]


def label(p: AssignmentRow) -> str:
    """`seed0/long-1` for a per-assignment entry (partition seed + assignment id)."""
    return f"seed{p['partition_seed']}/{p['assignment_id']}"


def _per(row: SystemRow) -> dict[str, tuple[str, float]]:
    """A row's adaptive AUC per assignment (spec id), with the assignment's label."""
    return {p["assignment"]: (label(p), p["adaptive_auc"]) for p in row["per_assignment"]}


def oracle_beaten(rows: Sequence[SystemRow], references: Sequence[SystemRow]) -> list[OracleBeaten]:
    """Per ranked system (and the context-trained model), the assignments on which it scores
    above the oracle's AUC (every oracle row: one per parameter variant)."""
    out: list[OracleBeaten] = []
    oracles = [r for r in references if str(r["system"]).split("#")[0] == ORACLE]
    context = [r for r in references if r["system"] == "context-trained model"]
    for oracle in oracles:
        theirs = _per(oracle)
        for row in [*rows, *context]:
            mine = _per(row)
            shared = [s for s in mine if s in theirs]
            above = [mine[s][0] for s in shared if mine[s][1] > theirs[s][1]]
            out.append(
                {
                    "oracle": str(oracle["system"]),
                    "system": str(row["system"]),
                    "assignments": above,
                    "n": len(above),
                    "of": len(shared),
                }
            )
    return out


BELOW_TOLERANCE = 1e-3  # AUC: a gap below this (the board's third decimal) is not "below"


def below_references(
    rows: Sequence[SystemRow], references: Sequence[SystemRow], seed: int = 0
) -> list[BelowReference]:
    """Every (ranked system, reference row) where the system's mean AUC is below the
    reference's on the assignments both cover by more than `BELOW_TOLERANCE`, and the paired
    bootstrap 95% interval of the difference (over those assignments, two or more) excludes 0
    (issue 49: the note fired on a gap of 2.3e-08)."""
    out: list[BelowReference] = []
    for row in rows:
        mine = _per(row)
        for ref in references:
            theirs = _per(ref)
            d = [mine[s][1] - theirs[s][1] for s in mine if s in theirs]
            if len(d) < 2 or sum(d) / len(d) >= -BELOW_TOLERANCE:
                continue
            a = sum(mine[s][1] for s in mine if s in theirs) / len(d)
            gap = ci(d, seed, "below-reference", f"{row['system']}:{ref['system']}")
            if gap is not None and gap["hi"] < 0:
                out.append(
                    {
                        "system": str(row["system"]),
                        "reference": str(ref["system"]),
                        "system_auc": a,
                        "reference_auc": a - gap["mean"],
                        "assignments": len(d),
                        "lo": gap["lo"],
                        "hi": gap["hi"],
                    }
                )
    return out


def reference_ceiling_notes(rows: Sequence[SystemRow]) -> CeilingNotes:
    """Where a ranked system's held-out gain, or its selection value (the same model told the
    outcomes of the system's own choices), exceeds the reference model's ceiling, and the
    assignments where that ceiling is negative."""
    exceeded: list[dict[str, str]] = []
    negative: dict[str, str] = {}
    for row in rows:
        for p in row["per_assignment"]:
            ceiling_value = p.get("reference_ceiling")
            if ceiling_value is None:
                continue
            ceiling = json_number(ceiling_value)
            if ceiling < 0:
                negative[str(p["assignment"])] = label(p)
            compared: tuple[tuple[Literal["held_out_gain", "selection_value"], str], ...] = (
                ("held_out_gain", "held-out gain"),
                ("selection_value", "selection value"),
            )
            for key, what in compared:
                value = p.get(key)
                if value is not None and json_number(value) > ceiling:
                    exceeded.append(
                        {"system": str(row["system"]), "by": what, "assignment": label(p)}
                    )
    return {"exceeded": exceeded, "negative": sorted(negative.values())}


def outcome_from_evidence(bodies: Sequence[SpecBody]) -> list[OutcomeDeclaration]:
    """The specs' declarations that the outcome is computed from purchasable evidence, one per
    rule, with how many of the board's specs carry it."""
    out: dict[str, OutcomeDeclaration] = {}
    for body in bodies:
        declared = body.get("record", {}).get("outcome_from_evidence")
        if not isinstance(declared, Mapping):
            continue
        entry = out.setdefault(
            str(declared.get("rule")),
            {"rule": str(declared.get("rule")), "fields": dict(declared.get("fields") or {})},
        )
        entry["specs"] = entry.get("specs", 0) + 1
    return [{**entry, "of": len(bodies)} for entry in out.values()]


def board_notes(
    rows: Sequence[SystemRow],
    references: Sequence[SystemRow],
    bodies: Sequence[SpecBody] = (),
    seed: int = 0,
) -> BoardNotes:
    """`bodies`: the spec bodies of the board's assignments (for their declarations); `seed`:
    the board's bootstrap seed."""
    return {
        "oracle_beaten": oracle_beaten(rows, references),
        "below_reference": below_references(rows, references, seed),
        "reference_ceiling": reference_ceiling_notes(rows),
        "outcome_from_evidence": outcome_from_evidence(bodies),
    }


def _list(items: Sequence[str], at_most: int = 8) -> str:
    shown = ", ".join(items[:at_most])
    return shown + (f", ... ({len(items) - at_most} more)" if len(items) > at_most else "")


def notes_text(notes: BoardNotes) -> list[str]:
    """The board's one-line notes (empty parts are said too, so a reader knows they were
    checked)."""
    lines = []
    beaten = notes.get("oracle_beaten") or []
    if beaten:
        parts = [
            f"{b['system']} above {b['oracle']} on {b['n']}/{b['of']}"
            + (f" ({_list(b['assignments'])})" if b["assignments"] else "")
            for b in beaten
        ]
        lines.append(
            "oracle (a labelled reference that reads outcomes, not an upper bound): "
            + "; ".join(parts)
        )
    below = notes.get("below_reference") or []
    lines.append(
        "ranked systems below a reference row (mean AUC on the assignments both cover, by more "
        f"than {BELOW_TOLERANCE:g}, paired 95% interval of the difference below 0): "
        + (
            "; ".join(
                f"{b['system']} {b['system_auc']:.3f} < {b['reference']} {b['reference_auc']:.3f} "
                f"(by {b['reference_auc'] - b['system_auc']:.2g}"
                + (f" [{-b['hi']:.2g}, {-b['lo']:.2g}]" if "lo" in b and "hi" in b else "")
                + f", {b['assignments']} assignments)"
                for b in below
            )
            if below
            else "none"
        )
    )
    ceiling = notes.get("reference_ceiling")
    exceeded = [
        f"{e['system']}'s {e['by']} on {e['assignment']}"
        for e in (ceiling.get("exceeded", []) if ceiling else [])
    ]
    negative = list(ceiling.get("negative", [])) if ceiling else []
    lines.append(
        "reference model's ceiling (greedy best T for the context-trained model, not an upper "
        "bound on other learners): exceeded by a ranked system "
        + (f"{len(exceeded)} time(s) ({_list(exceeded)})" if exceeded else "nowhere")
        + "; negative on "
        + (f"{len(negative)} assignment(s) ({_list(negative)})" if negative else "none")
    )
    for d in notes.get("outcome_from_evidence") or []:  # said only where a spec declares it
        fields = "; ".join(f"{k} from {' + '.join(v)}" for k, v in d["fields"].items())
        lines.append(
            f"outcome computed from purchasable evidence (rule {d['rule']}, {d['specs']} of "
            f"{d['of']} assignments): {fields}; buying it on a candidate reveals its outcome"
        )
    return lines
