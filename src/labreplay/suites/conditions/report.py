"""Write a compiled question set (questions + a sidecar spec/QC file) and count its questions."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from labreplay.sdk import atomic_write_text, canonical_json
from labreplay.suites.conditions.compiler import CompiledSet
from labreplay.suites.conditions.questions import write_questions
from labreplay.suites.conditions.scoring import answer_key
from labreplay.suites.conditions.summary import gold_position_audit


def spec_path(questions_path: Path) -> Path:
    return questions_path.with_name(questions_path.name + ".spec.json")


def question_counts(questions: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """dataset -> question type (+ '_with_precedents') -> count."""
    counts: dict[str, Counter[str]] = {}
    for q in questions:
        meta = q["meta"]
        name = q["question_type"] + (
            "_with_precedents" if meta.get("variant") == "with_precedents" else ""
        )
        counts.setdefault(str(meta.get("dataset", "")), Counter())[name] += 1
    return {ds: dict(sorted(c.items())) for ds, c in sorted(counts.items())}


def write_compiled(compiled: CompiledSet, out: Path) -> dict[str, Any]:
    """Questions to `out` (release layout), spec + QC + audit to `out.spec.json`. Both atomic."""
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
        "tables": compiled.tables,
    }
    atomic_write_text(spec_path(out), canonical_json(info) + "\n")
    return {k: v for k, v in info.items() if k not in {"tables", "spec"}}


def qc_lines(info: dict[str, Any]) -> list[str]:
    """The compile QC summary, one line per dataset: rows read, excluded and why, clipped,
    out of range, replicates merged, rows outside tables; then what questions were dropped."""
    lines = []
    for ds, qc in info.get("qc", {}).items():
        excluded = qc.get("rows_excluded", {})
        why = "; ".join(f"{n} {reason}" for reason, n in excluded.items())
        lines.append(
            f"QC {ds}: {qc['rows_read']} rows read, {sum(excluded.values())} excluded"
            + (f" ({why})" if why else "")
            + f", {qc['clipped_negative']} negative values clipped to 0"
            + f", {qc['out_of_range_flagged']} out-of-range rows flagged"
            + f", {qc['replicate_rows_merged']} replicate rows merged"
            + f", {qc['rows_outside_tables']} rows outside every table (1-row contexts or capped)"
            + f", {qc['tables']} tables ({qc['tables_capped']} more left out by the cap)"
        )
    for ds, skipped in info.get("skipped_by_dataset", {}).items():
        dropped = ", ".join(f"{n} {reason}" for reason, n in skipped.items() if n)
        lines.append(f"dropped {ds}: {dropped or 'nothing'}")
    return lines
