"""Write a compiled question set (questions + a sidecar spec/QC file) and count its questions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from labreplay.sdk import atomic_write_text, canonical_json, writable_file
from labreplay.suites.conditions.compiler import CompiledSet
from labreplay.suites.conditions.independence import (
    option_set_lines,
    ranker_reference,
    share_lines,
)
from labreplay.suites.conditions.precedent_audit import precedent_reference_lines, reference_lifts
from labreplay.suites.conditions.questions import Question, write_questions
from labreplay.suites.conditions.scoring import answer_key
from labreplay.suites.conditions.summary import gold_position_audit
from labreplay.suites.conditions.tables import TableSummary


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
PAPER_REFERENCE: dict[str, Any] = {
    "median_rows_per_table": PAPER_MEDIAN_ROWS,
    "median_axes_per_table": PAPER_MEDIAN_AXES,
    "mc_all_floor_score": list(PAPER_MC_ALL_FLOOR),
}


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def difficulty_profile(
    questions: Sequence[Question], tables: Sequence[TableSummary]
) -> dict[str, dict[str, Any]]:
    """Per dataset: tables, observed rows and axes varied per table, and per question type the
    count, options per question and mean random floors -- beside the paper's reference values."""
    out: dict[str, dict[str, Any]] = {}
    for t in tables:
        ds = out.setdefault(
            str(t["dataset"]), {"tables": 0, "rows": [], "axes": [], "axes_varied": Counter()}
        )
        ds["tables"] += 1
        ds["rows"].append(t["rows"])
        ds["axes"].append(len(t["varying_keys"]))
        ds["axes_varied"].update(t["varying_keys"])
    per_type: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        if q["meta"].get("variant") == "with_precedents":
            continue
        per_type.setdefault((str(q["meta"].get("dataset", "")), q["question_type"]), []).append(q)
    profile: dict[str, dict[str, Any]] = {}
    for name in sorted(set(out) | {ds for ds, _ in per_type}):
        ds = out.get(name, {"tables": 0, "rows": [], "axes": [], "axes_varied": Counter()})
        entry: dict[str, Any] = {
            "tables": ds["tables"],
            "median_rows_per_table": _median(ds["rows"]),
            "median_axes_per_table": _median(ds["axes"]),
            "axes_varied": dict(ds["axes_varied"].most_common()),
            "reference": PAPER_REFERENCE,
        }
        for qtype in ("mc_single", "mc_all", "fib_all"):
            qs = per_type.get((name, qtype), [])
            options = [len(q["options"]) for q in qs]
            floors = [q["meta"].get("random_floor", {}) for q in qs]  # the compiler's floats
            row: dict[str, Any] = {
                "n": len(qs),
                "median_options": _median([float(n) for n in options]),
                "min_options": min(options, default=None),
                "max_options": max(options, default=None),
            }
            for metric in ("score", "accuracy", "hit", "strict", "score_given_hit"):
                vals = [
                    float(v)
                    for f in floors
                    if isinstance(f, Mapping) and isinstance(v := f.get(metric), int | float)
                ]
                if vals:
                    row[f"floor_{metric}"] = round(sum(vals) / len(vals), 4)
            entry[qtype] = row
        profile[name] = entry
    return profile


def profile_lines(profile: dict[str, dict[str, Any]]) -> list[str]:
    """One line per dataset: the difficulty profile against the paper's reference values."""
    lines = []
    for name, p in profile.items():
        ref = p["reference"]
        axes = ", ".join(f"{k} x{n}" for k, n in list(p["axes_varied"].items())[:4])
        parts = []
        for qtype, label, metric in (
            ("mc_single", "MC_single", "score"),
            ("mc_all", "MC_all", "score"),
            ("fib_all", "FIB", "hit"),
        ):
            row = p[qtype]
            if row["n"]:
                parts.append(
                    f"{label} {row['n']} (options {row['median_options']:g}, "
                    f"floor {metric} {row[f'floor_{metric}']:.3f})"
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


def write_compiled(compiled: CompiledSet, out: Path) -> dict[str, Any]:
    """Questions to `out` (release layout), spec + QC + audit to `out.spec.json`. Both atomic,
    and both paths checked first (regular files only), so a refusal writes neither."""
    for path in (out, spec_path(out)):
        writable_file(path)
    write_questions(out, compiled.questions)
    keys = [answer_key(q) for q in compiled.questions]
    info = {
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
    return {k: v for k, v in info.items() if k not in {"tables", "spec"}}


def qc_lines(info: dict[str, Any]) -> list[str]:
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
        lines.extend(precedent_reference_lines(info["precedent_references"]))
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
