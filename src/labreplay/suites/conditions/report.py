"""Write a compiled question set (questions + a sidecar spec/QC file) and count its questions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, TypedDict

from labreplay.sdk import atomic_write_text, canonical_json, writable_file
from labreplay.suites.conditions.compiler import AnswerShares, CompiledSet, CompileSpec
from labreplay.suites.conditions.independence import (
    RankerRow,
    option_set_lines,
    ranker_reference,
    share_lines,
)
from labreplay.suites.conditions.precedent_audit import (
    Lift,
    precedent_reference_lines,
    reference_lifts,
)
from labreplay.suites.conditions.questions import Question, write_questions
from labreplay.suites.conditions.scoring import answer_key
from labreplay.suites.conditions.summary import GoldPosition, gold_position_audit
from labreplay.suites.conditions.tables import DatasetQc, TableSummary


def spec_path(questions_path: Path) -> Path:
    return questions_path.with_name(questions_path.name + ".spec.json")


def question_counts(questions: Sequence[Question]) -> dict[str, dict[str, int]]:
    """dataset -> question type (+ '_with_precedents') -> count."""
    counts: dict[str, Counter[str]] = {}
    for q in questions:
        meta = q["meta"]
        name = q["question_type"] + (
            "_with_precedents" if meta.get("variant") == "with_precedents" else ""
        )
        counts.setdefault(str(meta.get("dataset", "")), Counter())[name] += 1
    return {ds: dict(sorted(c.items())) for ds, c in sorted(counts.items())}


# The RxnOptBench composition the profile is read against (paper, appendix C and section 3.4).
PAPER_MEDIAN_ROWS, PAPER_MEDIAN_AXES, PAPER_MC_ALL_FLOOR = 7, 3, (0.54, 0.67)


class PaperReference(TypedDict):
    median_rows_per_table: int
    median_axes_per_table: int
    mc_all_floor_score: list[float]


PAPER_REFERENCE: PaperReference = {
    "median_rows_per_table": PAPER_MEDIAN_ROWS,
    "median_axes_per_table": PAPER_MEDIAN_AXES,
    "mc_all_floor_score": list(PAPER_MC_ALL_FLOOR),
}

FloorKey = Literal[
    "floor_score", "floor_accuracy", "floor_hit", "floor_strict", "floor_score_given_hit"
]
# a random floor the compiler records with each question -> its key in the profile
FLOORS: tuple[tuple[str, FloorKey], ...] = (
    ("score", "floor_score"),
    ("accuracy", "floor_accuracy"),
    ("hit", "floor_hit"),
    ("strict", "floor_strict"),
    ("score_given_hit", "floor_score_given_hit"),
)


class TypeProfile(TypedDict, total=False):
    """One question type of a dataset: count, options per question, mean random floors (only
    the floors its questions record)."""

    n: int
    median_options: float | None
    min_options: int | None
    max_options: int | None
    floor_score: float
    floor_accuracy: float
    floor_hit: float
    floor_strict: float
    floor_score_given_hit: float


class DatasetProfile(TypedDict):
    tables: int
    median_rows_per_table: float | None
    median_axes_per_table: float | None
    axes_varied: dict[str, int]  # axis -> tables varying it, most first
    reference: PaperReference
    mc_single: TypeProfile
    mc_all: TypeProfile
    fib_all: TypeProfile


class CompileInfo(TypedDict, total=False):
    """What `write_compiled` writes beside the questions (`out.spec.json`); it returns the same
    without ``spec`` and ``tables``."""

    spec: CompileSpec
    spec_hash: str
    n_questions: int
    counts: dict[str, dict[str, int]]
    skipped: dict[str, int]
    skipped_by_dataset: dict[str, dict[str, int]]
    qc: dict[str, DatasetQc]
    gold_position_audit: dict[str, GoldPosition]
    precedent_references: dict[str, dict[str, dict[str, Lift]]]
    answer_shares: AnswerShares
    ranker_reference: dict[str, dict[str, RankerRow]]
    profile: dict[str, DatasetProfile]
    sources: dict[str, str]
    tables: list[TableSummary]
    unverified_data: list[str]


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _type_profile(qs: Sequence[Question]) -> TypeProfile:
    options = [len(q["options"]) for q in qs]
    floors = [q["meta"].get("random_floor", {}) for q in qs]  # the compiler's floats
    row: TypeProfile = {
        "n": len(qs),
        "median_options": _median([float(n) for n in options]),
        "min_options": min(options, default=None),
        "max_options": max(options, default=None),
    }
    for metric, key in FLOORS:
        vals = [
            float(v)
            for f in floors
            if isinstance(f, Mapping) and isinstance(v := f.get(metric), int | float)
        ]
        if vals:
            row[key] = round(sum(vals) / len(vals), 4)
    return row


def difficulty_profile(
    questions: Sequence[Question], tables: Sequence[TableSummary]
) -> dict[str, DatasetProfile]:
    """Per dataset: tables, observed rows and axes varied per table, and per question type the
    count, options per question and mean random floors -- beside the paper's reference values."""
    counts: dict[str, int] = Counter()
    rows: dict[str, list[float]] = {}
    axes: dict[str, list[float]] = {}
    varied: dict[str, Counter[str]] = {}
    for t in tables:
        ds = str(t["dataset"])
        counts[ds] += 1
        rows.setdefault(ds, []).append(t["rows"])
        axes.setdefault(ds, []).append(len(t["varying_keys"]))
        varied.setdefault(ds, Counter()).update(t["varying_keys"])
    per_type: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        if q["meta"].get("variant") == "with_precedents":
            continue
        per_type.setdefault((str(q["meta"].get("dataset", "")), q["question_type"]), []).append(q)
    profile: dict[str, DatasetProfile] = {}
    for name in sorted(set(counts) | {ds for ds, _ in per_type}):
        profile[name] = {
            "tables": counts[name],
            "median_rows_per_table": _median(rows.get(name, [])),
            "median_axes_per_table": _median(axes.get(name, [])),
            "axes_varied": dict(varied.get(name, Counter[str]()).most_common()),
            "reference": PAPER_REFERENCE,
            "mc_single": _type_profile(per_type.get((name, "mc_single"), [])),
            "mc_all": _type_profile(per_type.get((name, "mc_all"), [])),
            "fib_all": _type_profile(per_type.get((name, "fib_all"), [])),
        }
    return profile


# per question type: its label and the random floor a profile line shows
_SHOWN_FLOORS: tuple[tuple[Literal["mc_single", "mc_all", "fib_all"], str, str, FloorKey], ...] = (
    ("mc_single", "MC_single", "score", "floor_score"),
    ("mc_all", "MC_all", "score", "floor_score"),
    ("fib_all", "FIB", "hit", "floor_hit"),
)


def profile_lines(profile: Mapping[str, DatasetProfile]) -> list[str]:
    """One line per dataset: the difficulty profile against the paper's reference values."""
    lines = []
    for name, p in profile.items():
        ref = p["reference"]
        axes = ", ".join(f"{k} x{n}" for k, n in list(p["axes_varied"].items())[:4])
        parts = []
        for qtype, label, metric, key in _SHOWN_FLOORS:
            row = p[qtype]
            if row["n"]:
                parts.append(
                    f"{label} {row['n']} (options {row['median_options']:g}, "
                    f"floor {metric} {row[key]:.3f})"
                )
            else:
                parts.append(f"{label} 0")
        lo, hi = ref["mc_all_floor_score"]
        lines.append(
            f"profile {name}: {p['tables']} tables, rows/table {p['median_rows_per_table']} "
            f"(paper {ref['median_rows_per_table']}), axes/table {p['median_axes_per_table']} "
            f"(paper {ref['median_axes_per_table']}); varied {axes or '-'}; "
            + "; ".join(parts)
            + f" (paper MC_all floor {lo}-{hi})"
        )
    return lines


def write_compiled(compiled: CompiledSet, out: Path) -> CompileInfo:
    """Questions to `out` (release layout), spec + QC + audit to `out.spec.json`. Both atomic,
    and both paths checked first (regular files only), so a refusal writes neither."""
    for path in (out, spec_path(out)):
        writable_file(path)
    write_questions(out, compiled.questions)
    keys = [answer_key(q) for q in compiled.questions]
    info: CompileInfo = {
        "spec": compiled.spec,
        "spec_hash": compiled.spec_hash,
        "n_questions": len(compiled.questions),
        "counts": question_counts(compiled.questions),
        "skipped": compiled.skipped,
        "skipped_by_dataset": compiled.skipped_by_dataset,
        "qc": compiled.qc,
        "gold_position_audit": gold_position_audit(keys, int(compiled.spec["seed"])),
        "precedent_references": reference_lifts(compiled.questions, int(compiled.spec["seed"])),
        "answer_shares": compiled.answer_shares,
        "ranker_reference": ranker_reference(compiled.questions, int(compiled.spec["seed"])),
        "profile": difficulty_profile(compiled.questions, compiled.tables),
        "sources": compiled.sources,
        "tables": compiled.tables,
    }
    if compiled.spec.get("unverified_data"):
        info["unverified_data"] = compiled.spec["unverified_data"]
    atomic_write_text(spec_path(out), canonical_json(info) + "\n")
    shown = info.copy()
    del shown["tables"], shown["spec"]
    return shown


def qc_lines(info: CompileInfo) -> list[str]:
    """The compile QC summary, one line per dataset: rows read, excluded and why, clipped,
    out of range, replicates merged, rows outside tables; then what questions were dropped."""
    lines = []
    for ds, qc in info.get("qc", {}).items():
        excluded = qc.get("rows_excluded", {})
        why = "; ".join(f"{n} {reason}" for reason, n in excluded.items())
        outside = qc.get("rows_outside_by_reason", {})
        where = "; ".join(f"{n} {reason}" for reason, n in outside.items() if n)
        merged = qc.get("options_merged_by_structure", 0)
        lines.append(
            f"QC {ds}: {qc['rows_read']} rows read, {sum(excluded.values())} excluded"
            + (f" ({why})" if why else "")
            + f", {qc['clipped_negative']} negative values clipped to 0"
            + f", {qc['out_of_range_flagged']} out-of-range rows flagged"
            + f", {qc['replicate_rows_merged']} replicate rows merged"
            + (f", {merged} options named more than one way merged by structure" if merged else "")
            + f", {qc['rows_outside_tables']} rows outside every table"
            + (f" ({where})" if where else "")
            + f", {qc['tables']} tables ({qc['tables_capped']} more left out by the cap)"
        )
        for rule_line in qc.get("axis_rule", []):  # a user's table: what it varies and why
            lines.append(f"axis rule {ds}: {rule_line}")
        for warning in qc.get("warnings", []):
            lines.append(f"QC warning {ds}: {warning}")
    for ds, skipped in info.get("skipped_by_dataset", {}).items():
        dropped = ", ".join(f"{n} {reason}" for reason, n in skipped.items() if n)
        lines.append(f"dropped {ds}: {dropped or 'nothing'}")
    if info.get("answer_shares"):
        shares = info["answer_shares"]
        lines.extend(option_set_lines(shares.get("option_set_repeats", {})))
        lines.extend(
            share_lines(
                shares["before"],
                shares["after"],
                info.get("ranker_reference"),
                shares.get("withheld", ()),
            )
        )
    if info.get("precedent_references"):
        withheld = {
            ds: n
            for ds, skipped in info.get("skipped_by_dataset", {}).items()
            if (n := skipped.get("precedents_leak_by_exclusion", 0))
        }
        lines.extend(precedent_reference_lines(info["precedent_references"], withheld))
    return lines


PER_TABLE_LINES = 20  # a dataset with more tables gets one summary line of its axes


def varied_lines(tables: Sequence[TableSummary]) -> list[str]:
    """Which axes each table varies (one line per table; one summary line per dataset with
    more than PER_TABLE_LINES tables)."""
    by_dataset: dict[str, list[TableSummary]] = {}
    for t in tables:
        by_dataset.setdefault(str(t["dataset"]), []).append(t)
    lines = []
    for ds, group in by_dataset.items():
        if len(group) <= PER_TABLE_LINES:
            for t in group:
                fixed = ", ".join(f"{k}={v}" for k, v in t.get("fixed", {}).items())
                subset = t["qc"].get("option_subset")
                part = (
                    f", {subset['axis']} part {subset['part'] + 1}/{subset['of']}" if subset else ""
                )
                lines.append(
                    f"table {t['table_id']}: varies {', '.join(t['varying_keys']) or '-'} "
                    f"over {t['rows']} rows; fixed {fixed or '(nothing)'}{part}"
                )
            continue
        counter = Counter(", ".join(t["varying_keys"]) or "-" for t in group)
        shown = "; ".join(f"{axes} in {n}" for axes, n in counter.most_common(4))
        more = f"; {len(counter) - 4} other axis sets" if len(counter) > 4 else ""
        lines.append(f"axes {ds}: {len(group)} tables vary {shown}{more}")
    return lines
