"""Option values refused before any work or file, by the validators every command and the
Python API share (`labreplay.validate`); each case below was a traceback, a silently wrong
run or a store created before the refusal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import labreplay
from labreplay.errors import LabreplayError
from labreplay.store.export import export_store
from labreplay.store.sqlite import Store
from labreplay.validate import finite_float, name_list, seed_range

from .conftest import assert_one_line_error, run_cli_in_process


@pytest.fixture(scope="module")
def specs_dir(
    tmp_path_factory: pytest.TempPathFactory, copy_campaign_specs: Callable[[Path], Path]
) -> Path:
    return copy_campaign_specs(tmp_path_factory.mktemp("validators") / "specs")


@pytest.mark.parametrize(
    "extra",
    [
        ("--temperature", "nan"),
        ("--temperature", "inf"),
        ("--only", ""),
        ("--controls", "bogus"),
        ("--executor", "dask", "--scheduler", "garbage"),
        ("--seed", "99999999999999999999999"),
    ],
    ids=lambda e: "-".join(e),
)
def test_campaign_run_refuses_before_creating_a_store(
    extra: tuple[str, ...], specs_dir: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.sqlite"
    argv = ["campaign", "run", "--specs", str(specs_dir), "--store", str(store), *extra]
    line = assert_one_line_error(run_cli_in_process(*argv))
    assert extra[-2] in line or extra[0] in line, line
    assert not store.exists() and sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("seeds", ["0-99999", "99999999999999999999999", "5-1", ""])
def test_compile_seeds_are_bounded(seeds: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = assert_one_line_error(
        run_cli_in_process("campaign", "compile", "--seeds", seeds, "--out", str(out))
    )
    assert "--seeds" in line
    assert not out.exists()


@pytest.mark.parametrize("controls", ["bogus", ("bogus",), ["random", ""], 5])
def test_python_api_controls_are_validated(
    controls: object, compiled_campaign: Callable[..., Any], tmp_path: Path
) -> None:
    """Defect: `labreplay.run(..., controls=("bogus",))` ran the adaptive branch only."""
    specs = compiled_campaign(record="precursor-genome", seed=0)[1][:1]
    store = tmp_path / "s.sqlite"
    with pytest.raises(LabreplayError, match="controls"):
        labreplay.run("campaign", specs, "random", store, controls=controls)
    assert not store.exists()


def test_python_api_string_controls_mean_what_the_cli_means(
    compiled_campaign: Callable[..., Any], tmp_path: Path
) -> None:
    """Defect: `controls="random"` was read as the letters r, a, n, ... (adaptive only)."""
    specs = compiled_campaign(record="precursor-genome", seed=0)[1][:1]
    store = tmp_path / "s.sqlite"
    labreplay.run("campaign", specs, "random", store, controls="random")
    with Store(store, readonly=True) as db:
        # the CLI's default of 3 schedule-matched random replicates, the same through the API
        assert sorted(r.branch for r in db.runs()) == ["adaptive", "random", "random-2", "random-3"]
    with pytest.raises(LabreplayError, match="seed"):
        labreplay.run("campaign", specs, "random", tmp_path / "t.sqlite", seed=-1)
    assert not (tmp_path / "t.sqlite").exists()


def test_export_over_a_directory_namesake_changes_nothing(
    compiled_campaign: Callable[..., Any], tmp_path: Path
) -> None:
    """Defect: export into a directory where one target name was an existing directory
    replaced 10 of 12 files before failing. A directory where a file is written is refused
    (issue 46: regular files only), before any file is replaced."""
    store = tmp_path / "s.sqlite"
    specs = compiled_campaign(record="precursor-genome", seed=0)[1][:1]
    labreplay.run("campaign", specs, "random", store, controls=())
    out = tmp_path / "out"
    with Store(store, readonly=True) as db:
        written = export_store(db, out, ("jsonl",))
    names = sorted(p.name for p in written)
    (out / names[-1]).unlink()
    (out / names[-1]).mkdir()  # a namesake of another kind
    (out / names[-1] / "keep.txt").write_text("mine", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    (out / names[0]).write_text("old", encoding="utf-8")
    before[names[0]] = b"old"
    with Store(store, readonly=True) as db, pytest.raises(LabreplayError, match="a directory"):
        export_store(db, out, ("jsonl",))
    assert (out / names[-1] / "keep.txt").read_text(encoding="utf-8") == "mine"
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "s.sqlite"]


def test_validator_units() -> None:
    for bad in ("nan", "inf", "-inf", "abc", None, True):
        with pytest.raises(LabreplayError):
            finite_float("--x", bad)
    assert finite_float("--x", "0.5", lo=0, hi=1) == 0.5
    with pytest.raises(LabreplayError, match="out of range"):
        finite_float("--x", 0, lo=0, lo_open=True)
    assert name_list("--c", "random", ("random",)) == ("random",)
    with pytest.raises(LabreplayError, match="empty"):
        name_list("--only", "")
    assert seed_range("--seeds", "0-2,7") == [0, 1, 2, 7]
    with pytest.raises(LabreplayError, match="more than 1000"):
        seed_range("--seeds", "0-1000")
