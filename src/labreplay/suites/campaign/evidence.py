"""Evidence items: compact, JSON-serialisable summaries of recorded raw evidence.

An evidence item is `{"item_id", "kind", "summary", "content"}`. `content` stays small enough to
show an agent after a paid reveal: raw arrays (an XRD pattern of ~8,000 points, a thermal log of
~1,000 points) are reduced to the quantities a chemist reads off them, and no list is longer than
about 60 entries. Nothing is invented: a quantity the raw data does not hold is null.

Per-experiment summaries of the A-Lab pipeline are expensive to rebuild (576 XRD patterns, 500k
temperature points), so `EvidenceCache` stores them as one JSON file keyed by the sha256 of the
input files, written atomically (temp file + os.replace).
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from numpy.typing import NDArray

from labreplay.errors import DataError, LabreplayError
from labreplay.sdk import atomic_write_text, canonical_json, sha256_file, sha256_json
from labreplay.sdk.data import ENV_CACHE_DIR
from labreplay.suites.campaign.json_values import json_list, json_object

# Bump when the content of any summary changes, so stale cache files are never reused.
SUMMARY_SCHEMA_VERSION = "campaign-evidence-1"

MAX_PEAKS = 20
MAX_PROFILE_POINTS = 40
DWELL_BAND_C = 10.0  # a log point belongs to the dwell when within this of the maximum
SETPOINT_MARGIN_C = 50.0  # "time above (setpoint - 50 C)"


def make_item(
    kind: str, owner: str, index: int, summary: str, content: Mapping[str, object]
) -> dict[str, object]:
    """One evidence item with a stable id `<kind>:<owner>:<index>`."""
    return {
        "item_id": f"{kind}:{owner}:{index}",
        "kind": kind,
        "summary": summary,
        "content": content,
    }


def rounded(value: float | None, digits: int) -> float | None:
    """Round for display; non-finite and absent values become None (JSON null)."""
    if value is None:
        return None
    as_float = float(value)
    if not np.isfinite(as_float):
        return None
    return round(as_float, digits)


# --------------------------------------------------------------------------- XRD


def read_xy_gz(path: Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two-column (2theta, counts) pattern from a gzip'd .xy file."""
    try:
        with gzip.open(path, "rb") as handle:
            raw = handle.read()
        values = np.array(raw.split(), dtype=np.float64)
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise DataError(f"unreadable XRD pattern ({exc})", file=str(path)) from exc
    if values.size == 0 or values.size % 2 != 0:
        raise DataError(
            "XRD pattern must hold (2theta, counts) pairs",
            file=str(path),
            field="values",
            value=int(values.size),
        )
    pairs = values.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


class XrdPeak(TypedDict):
    two_theta: float | None
    counts: float | None
    relative_intensity: float | None  # of the strongest peak


class XrdSummary(TypedDict):
    two_theta_min: float | None
    two_theta_max: float | None
    point_count: int
    step_deg: float | None
    max_counts: float | None
    median_counts: float | None
    peaks: list[XrdPeak]  # the most prominent, by angle


def summarise_xrd(two_theta: NDArray[np.float64], counts: NDArray[np.float64]) -> XrdSummary:
    """2theta range, point count, background, and the strongest peaks (scipy find_peaks).

    A peak must rise above its surroundings by at least 5% of the pattern's dynamic range
    (prominence) and be at least 0.15 degrees from a stronger neighbour; the 20 most prominent
    are kept and listed by angle, with intensity relative to the strongest peak.
    """
    from scipy.signal import find_peaks

    n = int(two_theta.size)
    step = float(np.median(np.diff(two_theta))) if n > 1 else 0.0
    background = float(np.median(counts))
    span = float(counts.max() - counts.min())
    peaks: list[XrdPeak] = []
    if n > 2 and span > 0:
        distance = max(1, round(0.15 / step)) if step > 0 else 1
        index, props = find_peaks(counts, prominence=0.05 * span, distance=distance)
        order = np.argsort(-props["prominences"])[:MAX_PEAKS]
        chosen = sorted(order.tolist(), key=lambda k: float(two_theta[index[k]]))
        top = float(counts[index[order[0]]]) if order.size else 1.0
        for k in chosen:
            i = int(index[k])
            peaks.append(
                {
                    "two_theta": rounded(two_theta[i], 3),
                    "counts": rounded(counts[i], 1),
                    "relative_intensity": rounded(counts[i] / top if top else 0.0, 3),
                }
            )
    return {
        "two_theta_min": rounded(two_theta.min(), 3),
        "two_theta_max": rounded(two_theta.max(), 3),
        "point_count": n,
        "step_deg": rounded(step, 5),
        "max_counts": rounded(counts.max(), 1),
        "median_counts": rounded(background, 1),
        "peaks": peaks,
    }


def xrd_summary_line(content: XrdSummary) -> str:
    peaks = content["peaks"]
    strongest = sorted(peaks, key=lambda p: -float(p["relative_intensity"] or 0))[:3]
    listed = ", ".join(f"{p['two_theta']}" for p in strongest) or "none"
    return (
        f"XRD scan {content['two_theta_min']}-{content['two_theta_max']} deg 2theta, "
        f"{content['point_count']} points, {len(peaks)} peaks (strongest at {listed} deg)"
    )


# --------------------------------------------------------------------------- thermal


class ThermalSummary(TypedDict):
    point_count: int
    duration_min: float | None
    max_temperature_c: float | None
    reference_temperature_c: float | None
    reference: str  # "recorded setpoint" or "max logged temperature"
    time_above_reference_minus_50c_min: float | None
    ramp_rate_c_per_min: float | None
    dwell_within_10c_of_max_min: float | None
    profile_min_c: list[list[float | None]]  # <= 40 (minutes, celsius) points


def summarise_thermal(
    minutes: NDArray[np.float64], celsius: NDArray[np.float64], setpoint_c: float | None
) -> ThermalSummary:
    """Max temperature, time above (setpoint - 50 C), ramp rate, dwell, <= 40-point profile.

    The reference for "time above" is the recorded setpoint; without one it is the maximum
    logged temperature (`reference` says which). Ramp rate: mean heating rate from the first
    point to the first point at or above the threshold. Dwell: time from the first to the last
    point within 10 C of the maximum.
    """
    n = int(minutes.size)
    t_max = float(celsius.max())
    reference = float(setpoint_c) if setpoint_c is not None else t_max
    threshold = reference - SETPOINT_MARGIN_C
    dt = np.diff(minutes)
    above = celsius[:-1] >= threshold
    time_above = float(dt[above].sum()) if n > 1 else 0.0
    reached = np.nonzero(celsius >= threshold)[0]
    ramp: float | None = None
    if reached.size and reached[0] > 0:
        first = int(reached[0])
        elapsed = float(minutes[first] - minutes[0])
        if elapsed > 0:
            ramp = (float(celsius[first]) - float(celsius[0])) / elapsed
    near_max = np.nonzero(celsius >= t_max - DWELL_BAND_C)[0]
    dwell = float(minutes[near_max[-1]] - minutes[near_max[0]]) if near_max.size else 0.0
    picks = np.unique(np.linspace(0, n - 1, num=min(n, MAX_PROFILE_POINTS)).round().astype(int))
    profile = [[rounded(minutes[i], 1), rounded(celsius[i], 1)] for i in picks.tolist()]
    return {
        "point_count": n,
        "duration_min": rounded(minutes[-1] - minutes[0], 1),
        "max_temperature_c": rounded(t_max, 1),
        "reference_temperature_c": rounded(reference, 1),
        "reference": "recorded setpoint" if setpoint_c is not None else "max logged temperature",
        "time_above_reference_minus_50c_min": rounded(time_above, 1),
        "ramp_rate_c_per_min": rounded(ramp, 2),
        "dwell_within_10c_of_max_min": rounded(dwell, 1),
        "profile_min_c": profile,
    }


def thermal_summary_line(content: ThermalSummary) -> str:
    return (
        f"Furnace log: max {content['max_temperature_c']} C, "
        f"{content['time_above_reference_minus_50c_min']} min above "
        f"{content['reference_temperature_c']} - 50 C, {content['point_count']} points"
    )


# --------------------------------------------------------------------------- DARA


def summarise_dara(result: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Success flag, error text, fit statistics and phases of one automated refinement."""
    if "success" not in result:
        raise DataError("automated refinement has no success flag", file=str(path), field="success")
    success = bool(result["success"])
    error = result.get("error")
    phases_raw = result.get("phases") or []
    if not isinstance(phases_raw, list):
        raise DataError("phases must be a list", file=str(path), field="phases", value=phases_raw)
    phases = [
        {
            "name": str(p.get("phase_name")),
            "spacegroup": p.get("spacegroup"),
            "weight_fraction": rounded(p.get("weight_fraction"), 4),
            "weight_fraction_error": rounded(p.get("weight_fraction_error"), 4),
        }
        for p in phases_raw
    ]
    return {
        "success": success,
        # error texts carry ANSI colour codes and multi-line tracebacks: keep the first line
        "error": _first_line(error) if error else None,
        "rwp": rounded(result.get("rwp"), 2),
        "rp": rounded(result.get("rp"), 2),
        "rexp": rounded(result.get("rexp"), 2),
        "phases": phases,
        "chemical_system": result.get("chemical_system"),
        "mode": result.get("mode"),
    }


def _first_line(text: object) -> str:
    cleaned = str(text)
    for code in ("\x1b[36m", "\x1b[39m", "\x1b[0m", "\x1b[31m", "\x1b[1m"):
        cleaned = cleaned.replace(code, "")
    line = cleaned.strip().splitlines()[0] if cleaned.strip() else ""
    return line[:200]


def dara_summary_line(content: Mapping[str, object]) -> str:
    if not content["success"]:
        return f"Automated refinement failed: {content['error']}"
    phases = [json_object(p, "phase") for p in json_list(content["phases"], "phases")]
    names = ", ".join(f"{str(p['name']).split('_')[0]} {p['weight_fraction']}" for p in phases)
    return f"Automated refinement Rwp {content['rwp']}%: {names}"


# --------------------------------------------------------------------------- cache


def cache_dir() -> Path:
    """$LABREPLAY_CACHE_DIR or the platform user cache directory."""
    chosen = os.environ.get(ENV_CACHE_DIR)
    if chosen:
        return Path(chosen)
    from platformdirs import user_cache_path

    return Path(user_cache_path("labreplay")) / "evidence"


def input_fingerprint(data_dir: Path, paths: Sequence[Path]) -> str:
    """sha256 over manifest-style entries (relative path, sha256, size) of every input file."""
    entries = []
    for path in sorted(paths):
        relative = path.relative_to(data_dir).as_posix()
        entries.append([relative, sha256_file(path), path.stat().st_size])
    return sha256_json({"schema": SUMMARY_SCHEMA_VERSION, "files": entries})


class EvidenceCache:
    """One JSON file per fingerprint; a corrupt or foreign file is ignored and rebuilt."""

    def __init__(self, name: str, fingerprint: str, directory: Path | None = None) -> None:
        self.name = name
        self.path = (directory or cache_dir()) / f"{name}-{fingerprint[:24]}.json"
        self.fingerprint = fingerprint

    def load(self) -> dict[str, Any] | None:
        try:
            with self.path.open("r", encoding="utf-8") as handle:
                payload = json.load(handle)
        except (OSError, ValueError):
            return None
        if not isinstance(payload, dict) or payload.get("fingerprint") != self.fingerprint:
            return None
        data = payload.get("data")
        return data if isinstance(data, dict) else None

    def store(self, data: Mapping[str, object]) -> None:
        """Atomic write; a read-only or full cache directory only costs the speed-up."""
        text = canonical_json({"fingerprint": self.fingerprint, "data": data})
        try:
            atomic_write_text(self.path, text)
            # a new fingerprint (changed data or code) makes older files of this name dead weight
            for stale in self.path.parent.glob(f"{self.name}-*.json"):
                if stale != self.path:
                    stale.unlink(missing_ok=True)
        except (OSError, LabreplayError):
            return


# --------------------------------------------------------------------------- chemistry


@cache
def _fractions(formula: str) -> dict[str, float] | None:
    """Atomic fractions of a formula; None when pymatgen cannot parse it."""
    from pymatgen.core.composition import Composition

    try:
        composition = Composition(formula)
    except Exception:  # pymatgen raises ValueError, KeyError or its own errors
        return None
    if composition.num_atoms <= 0:
        return None
    return {str(el): float(amount) for el, amount in composition.fractional_composition.items()}


def element_symbols(formulas: Sequence[str], *, file: str, record: str) -> list[str]:
    """Sorted element symbols of all formulas (pymatgen Composition)."""
    symbols: set[str] = set()
    for formula in formulas:
        fractions = _fractions(formula)
        if fractions is None:
            raise DataError("unparseable chemical formula", file=file, record=record,
                            field="precursors", value=formula)  # fmt: skip
        symbols.update(fractions)
    return sorted(symbols)


def same_composition(a: str, b: str, tolerance: float = 0.01) -> bool:
    """Equal atomic fractions within `tolerance` per element (tolerates refined CIF
    non-stoichiometry such as V3.8366O9.74788 for V2O5)."""
    fa, fb = _fractions(a), _fractions(b)
    if fa is None or fb is None or set(fa) != set(fb):
        return False
    return all(abs(fa[el] - fb[el]) <= tolerance for el in fa)
