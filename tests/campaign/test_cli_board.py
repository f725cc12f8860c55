"""CLI: several partition seeds, pooled boards, refusals that name the bad value (exit 2).

The CLI runs in this process (exit code, stdout and stderr as a user sees them): the subprocess
smoke test of the campaign CLI is `test_alab_and_cli.test_cli_compile_run_leaderboard_export`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.reliability.conftest import run_cli_in_process as _cli

from labreplay.store.sqlite import Store
from labreplay.suites.campaign.compiler import write_specs


def _run(specs: Path, store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _cli(
        "campaign", "run", "--specs", str(specs), "--agent", "bayes", "--store", str(store),
        "--json", *extra,
    )  # fmt: skip


def test_seeds_pool_on_one_board_and_bad_values_exit_2(compiled_campaign, tmp_path: Path):
    specs, store = tmp_path / "specs", tmp_path / "runs.sqlite"
    proc = _cli("campaign", "compile", "--seeds", "0-1", "--out", str(specs))
    assert proc.returncode == 0, proc.stderr
    assert (specs / "seed0" / "index.json").is_file() and (specs / "seed1" / "index.json").is_file()
    for bad, value in (("--only", "long-1,long-99"), ("--controls", "random,placebo")):
        proc = _run(specs, store, bad, value)
        assert proc.returncode == 2
        assert value.split(",")[1] in proc.stderr and "Traceback" not in proc.stderr
        assert not store.exists()  # nothing was run or written
    proc = _run(
        specs, store, "--only", "long-1", "--controls", "random", "--random-replicates", "3"
    )
    assert proc.returncode == 0, proc.stderr
    with Store(store) as db:  # three random branches per assignment
        branches = sorted(r.branch for r in db.runs(suite="campaign"))
    assert branches == sorted(["adaptive", "random", "random-2", "random-3"] * 2)
    assert [r["spec_id"] for r in json.loads(proc.stdout)] == [
        "precursor-genome/sdl1/seed0/long-1",
        "precursor-genome/sdl1/seed1/long-1",
    ]
    board = _cli("campaign", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0, board.stderr
    data = json.loads(board.stdout)
    long = data["tables"]["long"]
    assert long["seeds"] == [0, 1] and len(long["assignments"]) == 2
    assert data["tables"]["short"]["rows"] == []
    (row,) = long["rows"]
    assert set(row["seed_means"]) == {"0", "1"} and row["between_seed_sd"] is not None
    assert "selection_value" in row and "headroom_captured" in row
    assert long["power"]["min_detectable"] is not None
    text = _cli("campaign", "leaderboard", "--store", str(store))
    assert text.returncode == 0
    assert "smallest separable AUC difference" in " ".join(text.stdout.split())
    # A second protocol under the same spec ids: refused by name, unless one is selected.
    # (the session's compile of it, written as `campaign compile --context-detail rows` writes)
    rows = tmp_path / "rows"
    _, rows_specs, rows_index = compiled_campaign(
        record="precursor-genome", seed=0, context_detail="rows"
    )
    write_specs(rows, rows_index, rows_specs)
    assert _run(rows, store, "--only", "long-1", "--controls", "random").returncode == 0
    mixed = _cli("campaign", "leaderboard", "--store", str(store))
    assert mixed.returncode == 2 and "precursor-genome/sdl1/seed0/long-1" in mixed.stderr
    picked = _cli("campaign", "leaderboard", "--store", str(store), "--specs", str(rows), "--json")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)["tables"]["long"]["assignments"] == [
        "precursor-genome/sdl1/seed0/long-1"
    ]


def test_compile_from_modified_data_exits_2_naming_the_file(modified_data_dir: Path, tmp_path):
    root = modified_data_dir
    out = tmp_path / "specs"
    proc = _cli("campaign", "compile", "--out", str(out), "--data-dir", str(root))
    assert proc.returncode == 2 and "precursor_genome/pg_samples.jsonl" in proc.stderr
    assert not out.exists()
    proc = _cli(
        "campaign", "compile", "--out", str(out), "--data-dir", str(root), "--allow-modified-data"
    )
    assert proc.returncode == 0, proc.stderr
    assert "UNVERIFIED DATA" in proc.stdout
    index = json.loads((out / "index.json").read_text())
    assert index["data_verified"] is False
