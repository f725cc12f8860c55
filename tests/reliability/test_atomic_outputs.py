"""Atomic outputs: all or nothing, in the destination's own directory, with the umask's mode."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from labreplay._atomic import atomic_directory, atomic_write_text
from labreplay.errors import LabreplayError
from labreplay.store.export import export_store
from labreplay.store.sqlite import Store


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_respect_the_umask(tmp_path: Path) -> None:
    from labreplay.suites.conditions.questions import write_questions

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        write_questions(tmp_path / "q.jsonl", [{"id": "q1", "question_type": "MC_single"}])
        with atomic_directory(tmp_path / "d") as tmp:
            (tmp / "f.txt").write_text("y", encoding="utf-8")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "q.jsonl") == 0o644  # was 0600 (mkstemp's mode)
    assert _mode(tmp_path / "d") == 0o755
    assert _mode(tmp_path / "d" / "f.txt") == 0o644


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old", encoding="utf-8")

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        from labreplay._atomic import atomic_open

        with atomic_open(target) as handle:
            handle.write("half")
            raise Boom
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def _store_with_rows(path: Path) -> Store:
    store = Store(path)
    store.put_spec("campaign", "sdl1", "x", "h" * 64, "{}")
    return store


def test_export_failing_midway_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk on the third file: no export directory, no partial or temporary file."""
    import pandas as pd

    calls = {"n": 0}
    real = pd.DataFrame.to_csv

    def full_disk(self: pd.DataFrame, path: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(self, path, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(pd.DataFrame, "to_csv", full_disk)
    out = tmp_path / "export"
    with (
        _store_with_rows(tmp_path / "s.sqlite") as store,
        pytest.raises(LabreplayError, match="No space left"),
    ):
        export_store(store, out, ("jsonl", "csv"))
    assert not out.exists()
    assert not any(p.name.startswith(".export") for p in tmp_path.iterdir())


def test_export_into_existing_dir_replaces_only_its_files(tmp_path: Path) -> None:
    out = tmp_path / "export"
    out.mkdir()
    (out / "mine.txt").write_text("keep", encoding="utf-8")
    with _store_with_rows(tmp_path / "s.sqlite") as store:
        written = export_store(store, str(out), ("jsonl",))
    assert {p.name for p in written} <= {p.name for p in out.iterdir()}
    assert (out / "mine.txt").read_text(encoding="utf-8") == "keep"
    assert not any(p.name.startswith(".export") for p in tmp_path.iterdir())


def test_export_onto_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "file.txt"
    out.write_text("mine", encoding="utf-8")
    with _store_with_rows(tmp_path / "s.sqlite") as store, pytest.raises(LabreplayError):
        export_store(store, out, ("jsonl",))
    assert out.read_text(encoding="utf-8") == "mine"


def test_one_atomic_helper() -> None:
    """No module keeps its own temp-file-and-rename copy (the ~8 copies became _atomic)."""
    root = Path(__file__).resolve().parents[2] / "src" / "labreplay"
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "_atomic.py":
            continue
        text = path.read_text(encoding="utf-8")
        if "mkstemp(" in text or '.tmp"' in text or "mkdtemp(" in text:
            offenders.append(str(path.relative_to(root)))
    assert offenders == []


def test_report_on_a_full_disk_leaves_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was: an empty --out directory left behind by `report` on ENOSPC."""
    from labreplay.report import build_report

    def full_disk(fd: int) -> None:  # the data reaches the disk at fsync: there it is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    _store_with_rows(tmp_path / "s.sqlite").close()
    out = tmp_path / "deep" / "report"
    (tmp_path / "deep").mkdir()
    with pytest.raises(LabreplayError, match="No space left"):
        build_report(tmp_path / "s.sqlite", out)
    assert sorted(p.name for p in (tmp_path / "deep").iterdir()) == []
    monkeypatch.undo()
    build_report(tmp_path / "s.sqlite", out)  # and without the fault it is written
    assert (out / "index.html").is_file()


def test_refused_export_references_and_unknown_fetch_create_no_directory(
    tmp_path: Path,
) -> None:
    """Was: `export-references` on a refused store and `data fetch nosuch-source` left an
    empty directory."""
    from tests.reliability.conftest import assert_one_line_error, make_foreign_sqlite, run_cli

    foreign = make_foreign_sqlite(tmp_path / "foreign.sqlite")
    empty = tmp_path / "empty.sqlite"
    _store_with_rows(empty).close()
    for store in (foreign, empty):
        out = tmp_path / f"refs-{store.stem}"
        proc = run_cli(
            "configsearch", "export-references", "--store", str(store), "--out", str(out)
        )
        assert_one_line_error(proc)
        assert not out.exists()
    data = tmp_path / "newdata"
    assert_one_line_error(run_cli("data", "fetch", "nosuch-source", "--data-dir", str(data)))
    assert not data.exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
