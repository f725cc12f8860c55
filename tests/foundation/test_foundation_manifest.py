"""The manifest against the real data, and `labreplay data verify` as a user runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from labreplay.records import manifest
from labreplay.records.sources import verify

from .conftest import CliRunner, copy_source

SMALL_SOURCE = "reactions-summit"


def _sha256sums(data_dir: Path) -> dict[str, str]:
    listed: dict[str, str] = {}
    for line in (data_dir / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        digest, path = line.split(None, 1)
        listed[path.strip().removeprefix("./")] = digest
    return listed


def test_every_listed_file_is_in_exactly_one_source_with_its_sha256(data_dir: Path) -> None:
    listed = _sha256sums(data_dir)
    owners: dict[str, list[str]] = {}
    digests: dict[str, str] = {}
    for source in manifest.sources():
        for entry in source.files:
            owners.setdefault(entry.path, []).append(source.name)
            digests[entry.path] = entry.sha256
            # a file belongs to the folder its source declares
            assert entry.path == source.folder or entry.path.startswith(source.folder + "/")
    assert len(listed) == 1560
    assert set(listed) == set(owners), "manifest and SHA256SUMS list different files"
    shared = {path: names for path, names in owners.items() if len(names) != 1}
    assert not shared, f"files claimed by several sources: {shared}"
    wrong = {p: (digests[p], d) for p, d in listed.items() if digests[p] != d}
    assert not wrong


def test_manifest_sizes_match_the_files_on_disk(data_dir: Path) -> None:
    for source in manifest.sources():
        for entry in source.files:
            assert (data_dir / entry.path).stat().st_size == entry.size, entry.path


def test_every_source_is_described() -> None:
    names = manifest.source_names()
    assert len(names) == len(set(names)) == 12
    for source in manifest.sources():
        assert source.files, f"{source.name} has no files"
        assert source.license and source.citation and source.canonical_url and source.loader


def test_unknown_source_is_a_data_error() -> None:
    from labreplay.errors import DataError

    with pytest.raises(DataError, match="value 'no-such-source': unknown dataset name"):
        manifest.get_source("no-such-source")


def test_verify_api_finds_every_file_ok(data_dir: Path) -> None:
    results = verify(data_dir)
    assert len(results) == 1560
    assert [r for r in results if r.status != "ok"] == []


def test_cli_verify_exits_0_on_the_real_data(cli: CliRunner, data_dir: Path) -> None:
    done = cli("data", "verify", "--json", env={"LABREPLAY_DATA_DIR": str(data_dir)})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["files"] == 1560
    assert report["bad"] == []
    assert set(report["per_source"]) == set(manifest.source_names())


def test_cli_verify_table_output_on_the_real_data(cli: CliRunner, data_dir: Path) -> None:
    done = cli("data", "verify", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert "1560 of 1560 files ok" in done.stdout


def _damage(path: Path, how: str) -> None:
    if how == "byte-changed":
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x01  # same size: only the checksum can tell
        path.write_bytes(bytes(raw))
    elif how == "truncated":
        with path.open("r+b") as handle:
            handle.truncate(path.stat().st_size - 10)
    elif how == "removed":
        path.unlink()
    else:  # pragma: no cover - test parameter typo
        raise AssertionError(how)


@pytest.mark.parametrize(
    ("how", "status"),
    [("byte-changed", "sha256-mismatch"), ("truncated", "size-mismatch"), ("removed", "missing")],
)
def test_cli_verify_exits_1_and_names_the_damaged_file(
    cli: CliRunner, data_dir: Path, tmp_path: Path, how: str, status: str
) -> None:
    copies = copy_source(SMALL_SOURCE, data_dir, tmp_path)
    clean = cli("data", "verify", SMALL_SOURCE, "--data-dir", str(tmp_path))
    assert clean.returncode == 0, clean.stdout + clean.stderr

    victim = copies[2]
    _damage(victim, how)
    relative = victim.relative_to(tmp_path).as_posix()

    table = cli("data", "verify", SMALL_SOURCE, "--data-dir", str(tmp_path))
    assert table.returncode == 1
    assert f"{status} {relative}" in table.stdout
    assert f"{len(copies) - 1} of {len(copies)} files ok" in table.stdout

    as_json = cli("data", "verify", SMALL_SOURCE, "--json", "--data-dir", str(tmp_path))
    assert as_json.returncode == 1
    bad = json.loads(as_json.stdout)["bad"]
    assert [(b["path"], b["status"]) for b in bad] == [(relative, status)]


def test_cli_verify_unknown_source_exits_2_with_one_line(cli: CliRunner, data_dir: Path) -> None:
    done = cli("data", "verify", "no-such-source", "--data-dir", str(data_dir))
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("labreplay: error:")
    assert "'no-such-source'" in lines[0] and "reactions-summit" in lines[0]


def test_cli_verify_missing_data_dir_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "not-there"
    for args, env in [
        (["--data-dir", str(missing)], {}),
        ([], {"LABREPLAY_DATA_DIR": str(missing)}),
    ]:
        done = cli("data", "verify", *args, env=env)
        assert done.returncode == 2, done.stdout
        assert str(missing) in done.stderr and "does not exist" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


def test_cli_verify_data_dir_that_is_a_file_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    a_file = tmp_path / "data.txt"
    a_file.write_text("not a directory\n")
    done = cli("data", "verify", "--data-dir", str(a_file))
    assert done.returncode == 2
    assert "not a directory" in done.stderr and str(a_file) in done.stderr


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root reads a mode-000 directory anyway, so it cannot be made unreadable",
)
def test_cli_verify_unreadable_data_dir_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        done = cli("data", "verify", "--data-dir", str(locked))
    finally:
        locked.chmod(0o700)
    assert done.returncode == 2
    assert "not readable" in done.stderr and str(locked) in done.stderr


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0,
    reason="root reads a mode-000 file anyway, so it cannot be made unreadable",
)
def test_cli_verify_unreadable_file_is_reported_not_a_crash(
    cli: CliRunner, data_dir: Path, tmp_path: Path
) -> None:
    copies = copy_source(SMALL_SOURCE, data_dir, tmp_path)
    copies[0].chmod(0)
    try:
        done = cli("data", "verify", SMALL_SOURCE, "--json", "--data-dir", str(tmp_path))
    finally:
        copies[0].chmod(0o600)
    assert done.returncode == 1, done.stderr
    assert [b["status"] for b in json.loads(done.stdout)["bad"]] == ["unreadable"]
