"""A user's own dataset through `configsearch sweep|run --dataset FILE --target FIELD`, built in
tmp_path from real Matbench structures (dielectric task, matbench layout: mbid, cif, target).

Reduced, declared protocol so the test runs in about a minute: 60 materials, 24 OOD candidates,
n in {4, 6}, s in {1, 2, 3}; one source, so r is fixed to 0."""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from labreplay.errors import DataError
from labreplay.suites.configsearch.cli import app

PROTOCOL = ["--n-total", "60", "--n-ood", "24", "--n-values", "4,6", "--s-values", "1,2,3"]


def _rows(data_dir: Path, count: int) -> list[dict[str, Any]]:
    rows = []
    path = data_dir / "matbench/structures/dielectric.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows.append({"mbid": row["mbid"], "cif": row["cif"], "target": row["target"]})
            if len(rows) == count:
                break
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def test_user_jsonl_sweeps_and_runs_with_the_normalised_score(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    dataset = _write(tmp_path / "my_dielectric.jsonl.gz", _rows(data_dir, 60))
    store = tmp_path / "user.sqlite"
    common = ["--dataset", str(dataset), "--target", "target", "--store", str(store), *PROTOCOL]
    sweep = CliRunner().invoke(app, ["sweep", *common, "--json"])
    assert sweep.exit_code == 0, sweep.output
    body = json.loads(sweep.output)
    assert body["evaluated"] == 6 and body["short_folds"] == 0
    result = CliRunner().invoke(
        app,
        [
            "run",
            *common,
            "--method",
            "bo",
            "--budget",
            "3",
            "--init",
            "2",
            "--json",
            "--min-test-points",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.output)
    assert run["task"].startswith("user_my_dielectric_")
    assert run["final_normalised"] is not None and run["final_normalised"] <= 1.0 + 1e-9
    assert len(run["normalised_trace"]) == 3 and run["used_evaluations"] == 3
    # the reduced protocol states its C_min, how many configurations are on target, the chance
    # of T uniform draws, and warns: 6 candidates make the top-5% target a needle
    from labreplay.suites.configsearch.targets import chance_of_target

    on = run["configs_on_target"]
    assert run["min_test_points"] == 1 and 1 <= on <= 6
    assert run["chance_uniform"] == pytest.approx(chance_of_target(on, 6, 3))
    assert (on <= 3) == any(w.startswith("needle") for w in run["target_warnings"])
    # one source: the space was collapsed to r = 0 (declared), so every step sits at r = 0
    assert {step["r"] for step in [run["answer"]["best_pair"]["config"]]} == {0.0}


def _refused(args: list[str]) -> DataError:
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert isinstance(result.exception, DataError), result.output
    return result.exception


def test_bad_user_files_are_refused_naming_record_and_field(data_dir: Path, tmp_path: Path) -> None:
    rows = _rows(data_dir, 30)
    bad_cif = [dict(r) for r in rows]
    bad_cif[7]["cif"] = "data_broken\n_cell_length_a   nonsense\n"
    no_target = [dict(r) for r in rows]
    del no_target[3]["target"]
    cases = {
        "bad_cif.jsonl.gz": (bad_cif, ["cif", rows[7]["mbid"]]),
        "no_target.jsonl.gz": (no_target, ["'target'", rows[3]["mbid"]]),
        "few.jsonl.gz": (rows, ["n_total=60", "30 materials"]),
    }
    for name, (content, needles) in cases.items():
        path = _write(tmp_path / name, content)
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        error = _refused(
            ["sweep", "--dataset", str(path), "--target", "target", "--store",
             str(tmp_path / f"{name}.sqlite"), *PROTOCOL]
        )  # fmt: skip
        for needle in needles:
            assert needle in str(error), (name, str(error))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # left untouched


@pytest.mark.parametrize("field", ["target"])
def test_cli_refusal_is_one_line_exit_2(data_dir: Path, tmp_path: Path, field: str) -> None:
    rows = _rows(data_dir, 3)
    rows[1][field] = "high"
    path = _write(tmp_path / "text_target.jsonl.gz", rows)
    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", "run", "--dataset",
         str(path), "--target", field, "--store", str(tmp_path / "x.sqlite")],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert rows[1]["mbid"] in lines[0] and "'target'" in lines[0] and "'high'" in lines[0]


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_dask_with_own_dataset_is_refused_up_front(
    data_dir: Path, tmp_path: Path, command: str
) -> None:
    # Dask workers look tasks up by name; a user dataset exists only in the driver process.
    path = _write(tmp_path / "own.jsonl.gz", _rows(data_dir, 3))
    store = tmp_path / "x.sqlite"
    done = subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", "configsearch", command, "--dataset",
         str(path), "--target", "target", "--store", str(store), "--executor", "dask"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--executor dask" in lines[0] and "Traceback" not in done.stderr
    assert not store.exists()
