"""`labreplay data fetch` against a real HTTP server on 127.0.0.1 serving the real files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from labreplay.errors import DownloadError
from labreplay.records import manifest
from labreplay.records.sources import fetch

from ._http_mirror import HttpMirror, closed_port_url
from .conftest import CliRunner

SMALL = "reactions-summit"  # 6 files, ~22 kB
WITH_BIG_FILE = "precursor-genome"  # pg_samples.jsonl is ~2.2 MB: room to cut mid-file
BIG_FILE = "precursor_genome/pg_samples.jsonl"


@pytest.fixture
def mirror(data_dir: Path) -> Iterator[HttpMirror]:
    with HttpMirror(data_dir) as server:
        yield server


def _parts(root: Path) -> list[Path]:
    return sorted(root.rglob("*.part"))


def test_full_fetch_then_verify(
    cli: CliRunner, mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    target = tmp_path / "fresh-data-dir"  # does not exist yet: fetch creates it
    done = cli("data", "fetch", WITH_BIG_FILE, "--mirror", mirror.url, "--data-dir", str(target))
    assert done.returncode == 0, done.stderr
    report = json.loads(
        cli(
            "data", "fetch", WITH_BIG_FILE, "--json", "--mirror", mirror.url,
            "--data-dir", str(target),
        ).stdout
    )  # fmt: skip
    assert report == {
        "source": WITH_BIG_FILE,
        "data_dir": str(target),
        "files": 3,
        "downloaded": 0,  # second run: everything already verified, nothing fetched again
    }
    entries = manifest.get_source(WITH_BIG_FILE).files
    assert len(mirror.state.seen) == len(entries)
    assert all(r.status == 200 and r.range_header is None for r in mirror.state.seen)
    for entry in entries:
        assert (target / entry.path).read_bytes() == (data_dir / entry.path).read_bytes()
    assert _parts(target) == []
    verified = cli("data", "verify", WITH_BIG_FILE, "--data-dir", str(target))
    assert verified.returncode == 0, verified.stdout


def test_checksum_mismatch_leaves_neither_file_nor_part(
    cli: CliRunner, mirror: HttpMirror, tmp_path: Path
) -> None:
    entries = manifest.get_source(SMALL).files
    bad = entries[3].path
    mirror.state.corrupt.add(bad)
    done = cli("data", "fetch", SMALL, "--mirror", mirror.url, "--data-dir", str(tmp_path))
    assert done.returncode == 2
    message = done.stderr.strip()
    assert len(message.splitlines()) == 1
    assert f"{mirror.url}{bad}" in message and "sha256 mismatch" in message
    assert not (tmp_path / bad).exists()
    assert _parts(tmp_path) == []
    # files before the bad one were verified and kept; none after it was touched
    assert [(tmp_path / e.path).is_file() for e in entries] == [True] * 3 + [False] * 3


def test_interrupted_download_keeps_part_and_resumes_with_range(
    cli: CliRunner, mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    full_size = (data_dir / BIG_FILE).stat().st_size
    mirror.state.drop_after[BIG_FILE] = 1_000_000
    args = ("data", "fetch", WITH_BIG_FILE, "--mirror", mirror.url, "--data-dir", str(tmp_path))

    first = cli(*args)
    assert first.returncode == 2
    assert f"{mirror.url}{BIG_FILE}" in first.stderr
    assert "incomplete download" in first.stderr or "download failed" in first.stderr
    part = tmp_path / (BIG_FILE + ".part")
    assert not (tmp_path / BIG_FILE).exists()
    assert part.is_file()
    kept = part.stat().st_size
    assert 0 < kept < full_size

    second = cli(*args)
    assert second.returncode == 0, second.stderr
    resumed = mirror.state.requests_for(BIG_FILE)[-1]
    assert resumed.range_header == f"bytes={kept}-"
    assert resumed.status == 206
    assert not part.exists()
    assert (tmp_path / BIG_FILE).read_bytes() == (data_dir / BIG_FILE).read_bytes()
    assert cli("data", "verify", WITH_BIG_FILE, "--data-dir", str(tmp_path)).returncode == 0


def test_resume_against_a_server_that_ignores_range(
    mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    mirror.state.honour_range = False
    part = tmp_path / (BIG_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((data_dir / BIG_FILE).read_bytes()[:12345])
    results = fetch(WITH_BIG_FILE, tmp_path, mirror=mirror.url, timeout=30)
    assert all(r.status == "ok" for r in results)
    request = mirror.state.requests_for(BIG_FILE)[-1]
    assert (request.range_header, request.status) == ("bytes=12345-", 200)
    assert (tmp_path / BIG_FILE).read_bytes() == (data_dir / BIG_FILE).read_bytes()


def test_a_resume_answered_from_the_wrong_offset_is_discarded(
    mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    mirror.state.misplaced_range = True
    part = tmp_path / (BIG_FILE + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((data_dir / BIG_FILE).read_bytes()[:5000])
    with pytest.raises(DownloadError, match="Content-Range 'bytes 0-"):
        fetch(WITH_BIG_FILE, tmp_path, mirror=mirror.url, timeout=30)
    assert not part.exists()  # spliced bytes would never verify: start over
    mirror.state.misplaced_range = False
    fetch(WITH_BIG_FILE, tmp_path, mirror=mirror.url, timeout=30)
    assert (tmp_path / BIG_FILE).read_bytes() == (data_dir / BIG_FILE).read_bytes()


def test_a_complete_part_is_finished_without_a_request(
    mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    # killed after the last byte, before the rename: asking for more would get HTTP 416
    part = tmp_path / (BIG_FILE + ".part")
    part.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / BIG_FILE, part)
    fetch(WITH_BIG_FILE, tmp_path, mirror=mirror.url, timeout=30)
    assert mirror.state.requests_for(BIG_FILE) == []
    assert not part.exists()
    assert (tmp_path / BIG_FILE).read_bytes() == (data_dir / BIG_FILE).read_bytes()


def test_a_file_with_wrong_bytes_on_disk_is_replaced(
    mirror: HttpMirror, tmp_path: Path, data_dir: Path
) -> None:
    entry = manifest.get_source(SMALL).files[0]
    stale = tmp_path / entry.path
    stale.parent.mkdir(parents=True)
    stale.write_text("stale copy\n")
    results = fetch(SMALL, tmp_path, mirror=mirror.url, timeout=30)
    assert [r.detail for r in results] == ["downloaded"] * len(results)
    assert stale.read_bytes() == (data_dir / entry.path).read_bytes()


def test_offline_error_names_the_url(cli: CliRunner, tmp_path: Path) -> None:
    dead = closed_port_url()
    done = cli("data", "fetch", SMALL, "--mirror", dead, "--data-dir", str(tmp_path))
    assert done.returncode == 2
    first = manifest.get_source(SMALL).files[0].path
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"{dead}{first}" in line and "download failed" in line
    assert "--mirror" in line  # tells the user what to do
    assert _parts(tmp_path) == [] and not (tmp_path / first).exists()


def test_offline_api_raises_download_error(tmp_path: Path) -> None:
    dead = closed_port_url()
    with pytest.raises(DownloadError, match=dead.replace(".", r"\.")):
        fetch(SMALL, tmp_path, mirror=dead, timeout=5)


def test_fetch_without_a_mirror_explains_why(cli: CliRunner, tmp_path: Path) -> None:
    done = cli("data", "fetch", SMALL, "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "no public copy" in done.stderr and "--mirror" in done.stderr


def test_fetch_of_an_unknown_source_exits_2(cli: CliRunner, tmp_path: Path) -> None:
    done = cli("data", "fetch", "no-such-source", "--data-dir", str(tmp_path))
    assert done.returncode == 2
    assert "'no-such-source'" in done.stderr
