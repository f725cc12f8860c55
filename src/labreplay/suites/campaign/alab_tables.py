"""Reading the A-Lab pipeline tables (lauren-walters/alab-pipeline @ 86c4cc2).

Each parquet table is read with its required columns checked (a missing column names file and
field); scalars become plain Python values; the execution record of a run is summarised from its
experiment row, powder doses, recorded elements and workflow tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from labreplay.errors import DataError
from labreplay.sdk.data import data_file
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign import evidence as ev

if TYPE_CHECKING:
    import pandas as pd

FOLDER = "alab_pipeline"

TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "experiments": (
        "experiment_id", "name", "experiment_type", "target_formula", "status",
        "heating_method", "heating_temperature", "heating_time", "heating_atmosphere",
        "recovery_total_dosed_mass_mg", "recovery_weight_collected_mg",
        "recovery_yield_percent", "xrd_total_mass_dispensed_mg", "xrd_met_target_mass",
        "dosing_end_reason",
    ),
    "powder_doses": (
        "experiment_id", "powder_name", "target_mass", "actual_mass", "dose_sequence",
        "head_position", "dose_timestamp",
    ),
    "experiment_elements": ("experiment_id", "element_symbol"),
    "temperature_logs": ("experiment_id", "sequence_number", "time_minutes", "temperature_celsius"),
    "workflow_tasks": ("experiment_id", "task_type", "status", "started_at", "completed_at"),
}  # fmt: skip


class DoseSummary(TypedDict):
    powder: str
    target_mass_g: float | None
    actual_mass_g: float | None
    accuracy_percent: float | None
    dose_count: int


class TaskSummary(TypedDict):
    task: str
    status: str
    duration_min: float | None


class Dosing(TypedDict):
    powders: list[DoseSummary]
    max_abs_deviation_percent: float | None
    duplicate_rows_dropped: int
    end_reason: JsonValue


class Recovery(TypedDict):
    total_dosed_mass_mg: float | None
    weight_collected_mg: float | None
    yield_percent: float | None


class Heating(TypedDict):
    method: JsonValue
    temperature_c: float | None
    time_min: float | None
    atmosphere: JsonValue


class ExecutionContent(TypedDict):
    """The content of a run's `execution_record` evidence item."""

    status: JsonValue
    dosing: Dosing
    recovery: Recovery
    xrd_total_mass_dispensed_mg: float | None
    xrd_met_target_mass: bool | None
    recorded_elements: list[str]
    heating: Heating
    workflow_tasks: list[TaskSummary]


def read_table(data_dir: Path, name: str) -> pd.DataFrame:
    import pandas as pd

    path = data_file(data_dir, f"{FOLDER}/parquet/{name}.parquet")
    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a corrupt file
        raise DataError(f"unreadable parquet table ({exc})", file=str(path)) from exc
    for column in TABLE_COLUMNS[name]:
        if column not in frame.columns:
            raise DataError("required column missing", file=str(path), field=column)
    frame = frame[list(TABLE_COLUMNS[name])].copy()
    frame["experiment_id"] = frame["experiment_id"].astype(str)
    return frame


def value_of(raw: Any) -> Any:
    """pandas/numpy scalar -> plain Python; NaN/None/NaT -> None."""
    if raw is None:
        return None
    if isinstance(raw, float | np.floating):
        return None if not np.isfinite(raw) else float(raw)
    if isinstance(raw, bool | np.bool_):
        return bool(raw)
    if isinstance(raw, int | np.integer):
        return int(raw)
    try:
        import pandas as pd

        if pd.isna(raw):
            return None
    except (TypeError, ValueError):
        pass
    return raw


def flag_of(raw: object) -> bool | None:
    value = value_of(raw)
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(str(value).strip().lower())


def precursor_formula(powder_name: str) -> str:
    """Pipeline powder names carry a stock tag (`HfO2_PG`); formulas never contain `_`."""
    return powder_name.split("_", 1)[0]


def doses_of(rows: list[dict[str, Any]]) -> tuple[list[str], list[DoseSummary], int]:
    """Precursors in dosing order and per-powder dosing accuracy.

    The export repeats every dose row 2-10 times (a join artefact: identical timestamps and
    masses), so exact duplicates are dropped; repeated doses of one powder (dose_sequence 0, 1,
    ...) are real top-ups and their actual masses add up against one target mass.
    """
    unique = {tuple(sorted((k, str(v)) for k, v in row.items())): row for row in rows}
    ordered = sorted(
        unique.values(),
        key=lambda r: (str(r["dose_timestamp"]), int(r["dose_sequence"]), str(r["powder_name"])),
    )
    per: dict[str, tuple[float, float, int]] = {}  # powder -> (target, actual, doses)
    for row in ordered:
        name = str(row["powder_name"])
        target, actual, n = per.get(name, (float(row["target_mass"]), 0.0, 0))
        per[name] = (target, actual + float(row["actual_mass"]), n + 1)
    doses: list[DoseSummary] = []
    for name, (target, actual, n) in per.items():
        accuracy = 100.0 * actual / target if target else None
        doses.append(
            {
                "powder": name,
                "target_mass_g": ev.rounded(target, 5),
                "actual_mass_g": ev.rounded(actual, 5),
                "accuracy_percent": ev.rounded(accuracy, 2),
                "dose_count": n,
            }
        )
    return [precursor_formula(n) for n in per], doses, len(rows) - len(unique)


def tasks_of(rows: list[dict[str, Any]]) -> list[TaskSummary]:
    out: list[TaskSummary] = []
    for row in sorted(rows, key=lambda r: (r["started_at"], str(r["task_type"]))):
        minutes = (row["completed_at"] - row["started_at"]).total_seconds() / 60.0
        out.append(
            {
                "task": str(row["task_type"]),
                "status": str(row["status"]),
                "duration_min": ev.rounded(minutes, 1),
            }
        )
    return out


def execution_content(exp: Mapping[str, Any], doses: list[DoseSummary], duplicates: int,
                       elements: list[str], tasks: list[TaskSummary]) -> ExecutionContent:  # fmt: skip
    deviations = [
        abs(d["accuracy_percent"] - 100.0) for d in doses if d["accuracy_percent"] is not None
    ]
    return {
        "status": exp["status"],
        "dosing": {
            "powders": doses,
            "max_abs_deviation_percent": ev.rounded(max(deviations), 2) if deviations else None,
            "duplicate_rows_dropped": duplicates,
            "end_reason": exp["dosing_end_reason"],
        },
        "recovery": {
            "total_dosed_mass_mg": ev.rounded(exp["recovery_total_dosed_mass_mg"], 1),
            "weight_collected_mg": ev.rounded(exp["recovery_weight_collected_mg"], 1),
            "yield_percent": ev.rounded(exp["recovery_yield_percent"], 2),
        },
        "xrd_total_mass_dispensed_mg": ev.rounded(exp["xrd_total_mass_dispensed_mg"], 1),
        "xrd_met_target_mass": exp["xrd_met_target_mass"],
        "recorded_elements": elements,
        "heating": {
            "method": exp["heating_method"],
            "temperature_c": ev.rounded(exp["heating_temperature"], 1),
            "time_min": ev.rounded(exp["heating_time"], 1),
            "atmosphere": exp["heating_atmosphere"],
        },
        "workflow_tasks": tasks,
    }


def execution_line(name: str, c: ExecutionContent) -> str:
    rec = c["recovery"]
    return (
        f"Run {name}: {len(c['dosing']['powders'])} powders dosed (max deviation "
        f"{c['dosing']['max_abs_deviation_percent']}%), heated {c['heating']['temperature_c']} C / "
        f"{c['heating']['time_min']} min, recovered {rec['weight_collected_mg']} mg "
        f"(yield {rec['yield_percent']}%), XRD target mass met: {c['xrd_met_target_mass']}, "
        f"elements {'-'.join(c['recorded_elements'])}"
    )


def input_paths(data_dir: Path) -> list[Path]:
    """Every file the pipeline loader reads: the five tables and the XRD folder's patterns and
    automated refinements."""
    paths = [data_file(data_dir, f"{FOLDER}/parquet/{name}.parquet") for name in TABLE_COLUMNS]
    xrd_dir = data_dir / FOLDER / "xrd"
    if xrd_dir.is_dir():
        paths += sorted(p for p in xrd_dir.iterdir() if p.name.endswith((".xy.gz", "_result.json")))
    return paths
