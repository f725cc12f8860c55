"""A built-in task's data file that differs from the manifest is refused before any store, or
with --allow-modified-data runs with the modified paths in its spec (so its hash differs) and
the output says UNVERIFIED DATA (campaign and conditions do the same)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from tests.reliability.conftest import assert_one_line_error, run_cli_in_process

from labreplay.store.sqlite import Store
from labreplay.suites.configsearch.data import JARVIS_STRUCTURES, task_files
from labreplay.suites.configsearch.pipeline import PipelineSettings
from labreplay.suites.configsearch.runner import ConfigSearch
from labreplay.suites.configsearch.space import ConfigSpace

ELASTICITY = "matbench/structures/elasticity.jsonl.gz"
PROTOCOL = ["--n-total", "60", "--n-ood", "24", "--r-values", "0", "--n-values", "4"]
PROTOCOL += ["--s-values", "1"]


def _copy_with_one_target_edited(data_dir: Path, copy: Path) -> None:
    """Only the two files shear_modulus reads; the first material's target changed."""
    assert task_files("shear_modulus") == (ELASTICITY, JARVIS_STRUCTURES)
    (copy / JARVIS_STRUCTURES).parent.mkdir(parents=True)
    shutil.copyfile(data_dir / JARVIS_STRUCTURES, copy / JARVIS_STRUCTURES)
    with gzip.open(data_dir / ELASTICITY, "rt", encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    first = json.loads(lines[0])
    first["target"] = float(first["target"]) + 0.25
    lines[0] = json.dumps(first)
    (copy / ELASTICITY).parent.mkdir(parents=True)
    with gzip.open(copy / ELASTICITY, "wt", encoding="utf-8", compresslevel=1) as handle:
        handle.write("\n".join(lines) + "\n")


def test_modified_task_file_is_refused_or_marked_unverified(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "data"
    _copy_with_one_target_edited(data_dir, copy)
    store = tmp_path / "cs.sqlite"
    for command in ("sweep", "run", "references"):
        if command == "references":  # (its space is the paper's n and s)
            argv = [command, "--tasks", "shear_modulus", *PROTOCOL[:6]]
        else:
            argv = [command, "--task", "shear_modulus", *PROTOCOL]
            argv += ["--min-test-points", "1"] if command == "run" else []
        proc = run_cli_in_process(
            "configsearch", *argv, "--data-dir", str(copy), "--store", str(store)
        )
        message = assert_one_line_error(proc)
        assert ELASTICITY in message and "sha256 differs" in message, message
        assert not store.exists(), command  # refused before any store is created

    argv = ["configsearch", "sweep", "--task", "shear_modulus", *PROTOCOL]
    argv += ["--data-dir", str(copy), "--store", str(store), "--allow-modified-data"]
    proc = run_cli_in_process(*argv)
    assert proc.returncode == 0, proc.stderr
    assert f"UNVERIFIED DATA (--allow-modified-data): {ELASTICITY}" in proc.stdout
    marked = json.loads(run_cli_in_process(*argv, "--json").stdout)  # resumed: same run
    assert marked["unverified_data"] == [ELASTICITY]
    with Store(store, readonly=True) as db:
        run = db.run(marked["run_id"])
        spec = json.loads(db.get_spec(run.spec_hash))
    assert spec["body"]["pipeline"]["unverified_data"] == [ELASTICITY]
    real = ConfigSearch(
        data_dir,
        "shear_modulus",
        None,
        settings=PipelineSettings(n_total=60, n_ood=24),
        space=ConfigSpace(r_values=(0.0,), n_values=(4,), s_values=(1,), s_cap=()),
    )
    assert "unverified_data" not in real.spec["pipeline"]
    assert run.spec_hash != real.spec_hash


def test_store_verify_recomputes_sweep_scores_from_the_events(
    data_dir: Path, cache_dir: Path, tmp_path: Path
) -> None:
    """Was: a forged configsearch score row passed `store verify` (only campaign rescored)."""
    import sqlite3

    store = tmp_path / "sweep.sqlite"
    argv = ["configsearch", "sweep", "--task", "shear_modulus", *PROTOCOL, "--json"]
    proc = run_cli_in_process(*argv, "--data-dir", str(data_dir), "--store", str(store))
    assert proc.returncode == 0, proc.stderr
    run_id = json.loads(proc.stdout)["run_id"]
    clean = run_cli_in_process("store", "verify", "--store", str(store))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE scores SET value=0.001 WHERE run_id=? AND metric='min_mae'", (run_id,))
    forged = run_cli_in_process("store", "verify", "--store", str(store))
    assert forged.returncode == 1, forged.stdout + forged.stderr
    said = forged.stdout + forged.stderr
    assert run_id in said and "table scores, field min_mae: stored 0.001" in said, said
