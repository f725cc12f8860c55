"""Run the performance benchmarks and report their figures.

Discovers `benchmarks/bench_*.py` (sorted), calls each module's `run(quick) -> list[dict]`, prints
one table of figures (name, median, unit, ratio, target) and writes them as JSON to
`bench-out/figures.json`. A module that raises is reported as failed and the others still run;
the exit code is 0 whatever happens, because benchmarks inform and never gate CI.

    python benchmarks/run.py [--quick] [--only NAME ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
FIGURE_KEYS = ("name", "median", "unit", "ratio", "target")
UNWRAPPED_WIDTH = 10_000  # wider than any row: a table as wide as its longest cells


def discover(only: Sequence[str] = (), bench_dir: Path = BENCH_DIR) -> list[Path]:
    """`bench_*.py` files, sorted; `only` keeps the named ones (`foundation` or `bench_foundation`)."""
    found = sorted(bench_dir.glob("bench_*.py"))
    if not only:
        return found
    wanted = {name.removeprefix("bench_").removesuffix(".py") for name in only}
    return [path for path in found if path.stem.removeprefix("bench_") in wanted]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"labreplay_bench_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checked(figures: object, module: str) -> list[dict[str, Any]]:
    """The module's figures in a fixed shape; anything malformed fails the module, loudly."""
    if not isinstance(figures, list):
        raise TypeError(f"run() returned {type(figures).__name__}, expected a list of dicts")
    out = []
    for i, figure in enumerate(figures):
        if not isinstance(figure, dict) or not {"name", "median", "unit"} <= set(figure):
            raise TypeError(f"figure {i} lacks name/median/unit: {figure!r}")
        ratio = figure.get("ratio")
        out.append(
            {
                "module": module,
                "name": str(figure["name"]),
                "median": float(figure["median"]),
                "unit": str(figure["unit"]),
                "ratio": None if ratio is None else float(ratio),
                "target": None if figure.get("target") is None else str(figure["target"]),
                **{k: v for k, v in figure.items() if k not in FIGURE_KEYS},
            }
        )
    return out


def make_console() -> Console:
    """A terminal gets rich's own width; a pipe or a file gets lines as long as their content
    (rich would otherwise wrap every cell and message at 80 columns, splitting figure names)."""
    console = Console()
    if console.is_terminal:
        return console
    return Console(width=UNWRAPPED_WIDTH)


def run_all(paths: Sequence[Path], quick: bool, console: Console) -> dict[str, Any]:
    modules: list[dict[str, Any]] = []
    figures: list[dict[str, Any]] = []
    for path in paths:
        name = path.stem
        console.print(f"[bold]{name}[/bold] ...", highlight=False)
        started = time.perf_counter()
        try:
            got = _checked(_load(path).run(quick), name)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            modules.append(
                {
                    "module": name,
                    "status": "failed",
                    "error": error,
                    "traceback": traceback.format_exc(),
                    "seconds": time.perf_counter() - started,
                }
            )
            console.print(f"  [red]failed[/red]: {escape(error)}", highlight=False)
            continue
        figures.extend(got)
        modules.append({"module": name, "status": "ok", "seconds": time.perf_counter() - started})
    return {
        "quick": quick,
        "python": sys.version.split()[0],
        "modules": modules,
        "figures": figures,
    }


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}"


def print_table(result: dict[str, Any], console: Console) -> None:
    table = Table(title="labreplay benchmarks" + (" (quick)" if result["quick"] else ""))
    for column in ("module", "name", "median", "unit", "ratio", "target"):
        table.add_column(column, justify="right" if column in ("median", "ratio") else "left")
    for f in result["figures"]:
        table.add_row(
            f["module"].removeprefix("bench_"),
            f["name"],
            _fmt(f["median"]),
            f["unit"],
            _fmt(f["ratio"]),
            f["target"] or "-",
        )
    for m in result["modules"]:
        if m["status"] != "ok":
            table.add_row(
                m["module"].removeprefix("bench_"), "[red]FAILED[/red]", "-", "-", "-", "-"
            )
    console.print(table)


def write_json(result: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "figures.json"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # a reader never sees half a file
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller inputs")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run only bench_NAME.py"
    )
    parser.add_argument(
        "--out", type=Path, default=BENCH_DIR.parent / "bench-out", help="output directory"
    )
    parser.add_argument(
        "--dir", type=Path, default=BENCH_DIR, help="where to look for bench_*.py (default: here)"
    )
    args = parser.parse_args(argv)
    console = make_console()
    paths = discover(args.only, args.dir)
    if not paths:
        known = [p.stem for p in discover(bench_dir=args.dir)]
        console.print(f"no benchmark matches {args.only}; known: {known}", highlight=False)
    result = run_all(paths, args.quick, console)
    print_table(result, console)
    written = write_json(result, args.out)
    failed = [m["module"] for m in result["modules"] if m["status"] != "ok"]
    console.print(
        f"{len(result['figures'])} figures from {len(paths) - len(failed)} of {len(paths)} "
        f"modules -> {written}" + (f"; failed: {', '.join(failed)}" if failed else ""),
        highlight=False,
    )
    return 0  # benchmarks never gate CI


if __name__ == "__main__":
    sys.exit(main())
