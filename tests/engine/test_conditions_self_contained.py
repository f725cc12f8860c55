"""A conditions spec is enough to run: `labreplay.run` without questions=PATH takes the question
file `compile` attached to the spec, else the copy a results store keeps under its sha256."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import labreplay
from labreplay.compile.spec import load_spec, write_spec
from labreplay.errors import SpecError
from labreplay.store.sqlite import Store


def _runs_and_scores(path: Path) -> dict[str, tuple[str, dict[str, float | None]]]:
    with Store(path, readonly=True) as store:
        return {r.run_id: (r.status, store.scores(r.run_id)) for r in store.runs()}


@pytest.fixture(scope="module")
def compiled(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(question file, spec file) compiled from the real edbo_mitsunobu table."""
    root = tmp_path_factory.mktemp("self-contained")
    questions = root / "q.jsonl"
    (spec,) = labreplay.compile("conditions", data_dir, datasets=["edbo_mitsunobu"], out=questions)
    assert spec.attached_files == {spec.body["sha256"]: str(questions.resolve())}
    spec_file = root / "spec.json"
    write_spec(spec, spec_file)
    return questions, spec_file


def test_a_compiled_spec_runs_without_questions(
    compiled: tuple[Path, Path], data_dir: Path, tmp_path: Path
) -> None:
    questions, _ = compiled
    (spec,) = labreplay.compile("conditions", data_dir, datasets=["edbo_mitsunobu"], out=questions)
    for agent in ("ranker", "random"):
        with_path = tmp_path / f"{agent}-with.sqlite"
        without = tmp_path / f"{agent}-without.sqlite"
        labreplay.run("conditions", [spec], agent, with_path, questions=questions)
        labreplay.run("conditions", [spec], agent, without)
        runs = _runs_and_scores(without)
        assert len(runs) == 1 and next(iter(runs.values()))[0] == "complete"
        assert runs == _runs_and_scores(with_path)


def test_a_spec_loaded_from_file_takes_its_questions_from_the_store(
    compiled: tuple[Path, Path], tmp_path: Path
) -> None:
    questions, spec_file = compiled
    loaded = load_spec(spec_file)
    assert loaded.attached_files == {}  # the file form holds no machine path
    kept = tmp_path / "kept.sqlite"
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copyfile(questions, copy)
    labreplay.run("conditions", [loaded], "ranker", kept, questions=copy)  # stores the file
    fresh = tmp_path / "fresh.sqlite"
    shutil.copyfile(kept, fresh)
    with Store(fresh) as store:
        for run in store.runs():
            store.remove_runs([run.run_id], "test: rerun from the stored question file")
    labreplay.run("conditions", [loaded], "ranker", fresh)
    assert _runs_and_scores(fresh) == _runs_and_scores(kept)


def test_a_spec_whose_questions_are_nowhere_is_refused_in_one_line(
    compiled: tuple[Path, Path], tmp_path: Path
) -> None:
    _, spec_file = compiled
    loaded = load_spec(spec_file)
    store = tmp_path / "empty.sqlite"
    Store(store).close()
    with pytest.raises(SpecError, match="neither attached to the spec nor kept in store") as err:
        labreplay.run("conditions", [loaded], "random", store)
    assert "\n" not in str(err.value) and loaded.body["sha256"][:16] in str(err.value)
    with Store(store, readonly=True) as db:
        assert db.runs() == []


def test_a_refused_run_leaves_no_store_it_created(
    compiled: tuple[Path, Path], tmp_path: Path
) -> None:
    _, spec_file = compiled
    store = tmp_path / "new.sqlite"
    with pytest.raises(SpecError, match="neither attached"):
        labreplay.run("conditions", [load_spec(spec_file)], "random", store)
    assert list(tmp_path.iterdir()) == []  # no store, no -wal/-shm beside it
