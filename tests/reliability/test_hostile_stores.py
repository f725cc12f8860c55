"""Hostile stores: a damaged store is refused by every run command without a byte changed,
every reader leaves no side file beside a genuine store, and a full disk or a read-only
directory ends in one line.

Each case copies the one session store (`fuzz_seeds`) and runs the CLI in-process.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import assert_one_line_error, digest, run_cli_in_process

pytestmark = pytest.mark.usefixtures("data_env")

DAMAGE = {
    "scores dropped": "DROP TABLE scores",
    "events dropped": "DROP TABLE events",
    "llm_calls dropped": "DROP TABLE llm_calls",
    "summary": "UPDATE runs SET summary='{bad' WHERE rowid=1",
    "agent_params": "UPDATE runs SET agent_params='[' WHERE rowid=1",
    "event payload": "UPDATE events SET payload='{\"a\": NaN}' WHERE rowid=3",
    "score detail": "UPDATE scores SET detail='{' WHERE rowid=1",
    "cached response": "INSERT INTO response_cache VALUES ('k', 'm', 'not json', 'now')",
}


def damaged_copy(seed: Path, target: Path, sql: str) -> Path:
    target.mkdir()
    store = Path(shutil.copy(seed, target / "store.sqlite"))
    conn = sqlite3.connect(store)
    conn.execute(sql)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return store


def run_commands(seeds: dict[str, Path], store: Path) -> dict[str, list[str]]:
    """Every command that writes runs to a store (a seed not yet stored: it would write)."""
    return {
        "campaign run": [
            *("campaign", "run", "--specs", str(seeds["specs"]), "--store", str(store)),
            *("--agent", "random", "--controls", "random", "--seed", "7"),
        ],
        "conditions run": [
            *("conditions", "run", "--questions", str(seeds["questions"])),
            *("--store", str(store), "--seed", "7"),
            *("--agent", "random", "--limit", "2"),
        ],
    }


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("command", ["campaign run", "conditions run"])
def test_run_commands_refuse_a_damaged_store_byte_identical(
    fuzz_seeds: dict[str, Path], tmp_path: Path, damage: str, command: str
) -> None:
    store = damaged_copy(fuzz_seeds["store"], tmp_path / "d", DAMAGE[damage])
    before = digest(store)
    argv = run_commands(fuzz_seeds, store)[command]
    line = assert_one_line_error(run_cli_in_process(*argv))
    assert "damaged" in line, line
    assert digest(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["store.sqlite"]


def reader_commands(store: Path, out: Path) -> dict[str, list[str]]:
    return {
        "campaign leaderboard": ["campaign", "leaderboard", "--store", str(store), "--json"],
        "conditions leaderboard": ["conditions", "leaderboard", "--store", str(store)],
        "configsearch report": ["configsearch", "report", "--store", str(store), "--out", str(out)],
        "store verify": ["store", "verify", "--store", str(store)],
        "report": ["report", "--store", str(store), "--out", str(out)],
        "export": ["export", "--store", str(store), "--out", str(out)],
        "cite": ["cite", "--store", str(store)],
    }


@pytest.mark.parametrize("reader", sorted(reader_commands(Path(), Path())))
def test_readers_leave_no_side_files_beside_a_genuine_store(
    fuzz_seeds: dict[str, Path], tmp_path: Path, reader: str
) -> None:
    """A reader opens the store immutable: no -wal/-shm appears and no byte changes."""
    home = tmp_path / "home"
    home.mkdir()
    store = Path(shutil.copy(fuzz_seeds["store"], home / "store.sqlite"))
    before = digest(store)
    done = run_cli_in_process(*reader_commands(store, tmp_path / "out")[reader])
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in home.iterdir()) == ["store.sqlite"]
    assert digest(store) == before


def test_a_store_with_a_missing_table_is_refused_by_readers(
    fuzz_seeds: dict[str, Path], tmp_path: Path
) -> None:
    store = damaged_copy(fuzz_seeds["store"], tmp_path / "d", DAMAGE["scores dropped"])
    before = digest(store)
    line = assert_one_line_error(
        run_cli_in_process("campaign", "leaderboard", "--store", str(store))
    )
    assert "scores" in line
    assert digest(store) == before


# ------------------------------------------------------------------ full disk, read-only dir
_WRITE_UNDER_A_FILE_SIZE_LIMIT = """
import resource, sys
from labreplay.cli.main import run
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
sys.exit(run(sys.argv[2:]))
"""


@pytest.mark.parametrize("limit", [0, 100_000])
def test_a_full_disk_ends_in_one_line(
    fuzz_seeds: dict[str, Path], tmp_path: Path, limit: int
) -> None:
    """Writes past RLIMIT_FSIZE fail with EFBIG (Python ignores SIGXFSZ), as on a full disk:
    a new store, an export and a compile then fail in one line, exit 1 or 2, no traceback."""
    commands = [
        ["campaign", "compile", "--out", str(tmp_path / "specs")],
        ["export", "--store", str(fuzz_seeds["store"]), "--out", str(tmp_path / "export")],
        [
            *("campaign", "run", "--specs", str(fuzz_seeds["specs"])),
            *("--store", str(tmp_path / "new.sqlite"), "--agent", "random"),
            *("--only", "long-1", "--controls", "random"),
        ],
    ]
    before = digest(fuzz_seeds["store"])
    for argv in commands:
        proc = subprocess.run(
            [sys.executable, "-c", _WRITE_UNDER_A_FILE_SIZE_LIMIT, str(limit), *argv],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert "Traceback" not in proc.stderr, (argv, proc.stderr[-2000:])
        assert proc.returncode in (0, 1, 2), (argv, proc.returncode, proc.stderr[-500:])
        if proc.returncode:
            assert_one_line_error(proc, proc.returncode)
    assert digest(fuzz_seeds["store"]) == before


def _read_only_directory(path: Path) -> None:
    """`path` made read-only for this process: a read-only tmpfs mount as root (root ignores
    permission bits), mode 0555 otherwise."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        return
    done = subprocess.run(
        ["mount", "-o", "remount,ro,bind", str(path)], capture_output=True, check=False
    )
    if done.returncode:
        pytest.skip("root without a way to mount a read-only directory")


@pytest.fixture
def read_only_home(fuzz_seeds: dict[str, Path], tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "ro"
    home.mkdir()
    bind = ["mount", "--bind", str(home), str(home)]
    if os.geteuid() == 0 and subprocess.run(bind, capture_output=True, check=False).returncode:
        pytest.skip("root without a way to mount a read-only directory")
    shutil.copy(fuzz_seeds["store"], home / "store.sqlite")
    _read_only_directory(home)
    yield home
    if os.geteuid() == 0:
        subprocess.run(["umount", str(home)], check=False)
    else:
        home.chmod(0o755)


def test_a_read_only_store_directory(fuzz_seeds: dict[str, Path], read_only_home: Path) -> None:
    """Readers work; a writer is refused in one line naming the directory; nothing changes."""
    store = read_only_home / "store.sqlite"
    before = digest(store)
    done = run_cli_in_process("campaign", "leaderboard", "--store", str(store), "--json")
    assert done.returncode == 0, done.stderr
    argv = run_commands(fuzz_seeds, store)["campaign run"]
    line = assert_one_line_error(run_cli_in_process(*argv))
    assert "read-only" in line, line
    out = read_only_home / "export"
    assert_one_line_error(run_cli_in_process("export", "--store", str(store), "--out", str(out)))
    assert digest(store) == before
    assert sorted(p.name for p in read_only_home.iterdir()) == ["store.sqlite"]
