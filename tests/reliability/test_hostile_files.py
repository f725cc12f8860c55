"""Every file reader, fed hostile files: truncated, the wrong JSON type, binary garbage, a huge
line, deep nesting, UTF-16 text, an empty file, a directory, a missing file. Each is refused
in one line on stderr with exit 2: no traceback, the input byte-identical, nothing created
(no store, no output file or directory).

One case per (reader, kind); the CLI runs in-process, so the matrix stays within seconds.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import assert_one_line_error, run_cli_in_process

pytestmark = pytest.mark.usefixtures("data_env")

# A real line of each kind of file, so that "truncated" cuts a genuine record.
_TABLE = b"substrate,ligand,base,yield\nA,L1,B1,50\nA,L2,B1,20\nA,L3,B1,70\nA,L1,B2,10\n"
_DATASET = json.dumps({"cif": "data_x\n_cell_length_a 3.0\n", "y": 1.5}).encode() + b"\n"
_REFERENCE = json.dumps({"schema": "labreplay.configsearch.reference/1", "task": "band_gap"})
_INSPECT = json.dumps({"version": 2, "status": "success", "eval": {"task": "x"}, "samples": []})


def hostile_kinds(real: bytes) -> dict[str, bytes | None]:
    """Kind -> file bytes (None: the path is a directory)."""
    return {
        "truncated": real[: max(1, len(real) // 2)],
        "wrong type": b'{"not": "what was asked"}\n[1, 2, 3]\n42\n',
        "binary garbage": bytes(range(256)) * 8,
        "huge line": b'{"id": "' + b"a" * (8 * 1024 * 1024) + b'"}\n',
        "deep json": b"[" * 200_000 + b"]" * 200_000 + b"\n",
        "utf-16": real.decode("utf-8", "replace").encode("utf-16"),
        "empty": b"",
        "nul bytes": b"\x00" * 4096,
        "directory": None,
    }


def _questions_text(seeds: dict[str, Path]) -> bytes:
    return b"".join(seeds["questions"].read_bytes().splitlines(keepends=True)[:3])


# reader -> (name of the file it reads, real bytes of such a file, argv for the file at F in W)
Argv = Callable[[Path, Path, dict[str, Path]], list[str]]
READERS: dict[str, tuple[str, Callable[[dict[str, Path]], bytes], Argv]] = {
    "conditions run --questions": (
        "q.jsonl",
        _questions_text,
        lambda f, w, s: [
            *("conditions", "run", "--questions", str(f)),
            *("--store", str(w / "s.sqlite"), "--agent", "random"),
        ],
    ),
    "conditions serve --questions": (
        "q.jsonl",
        _questions_text,
        lambda f, w, s: ["conditions", "serve", "--questions", str(f), "--store", str(w / "s.db")],
    ),
    "conditions score --questions": (
        "q.jsonl",
        _questions_text,
        lambda f, w, s: [
            *("conditions", "score", "--questions", str(f)),
            *("--predictions", str(s["predictions"])),
        ],
    ),
    "conditions score --predictions": (
        "p.jsonl",
        lambda s: s["predictions"].read_bytes(),
        lambda f, w, s: [
            *("conditions", "score", "--questions", str(s["questions"])),
            *("--predictions", str(f)),
        ],
    ),
    "conditions compile --table": (
        "table.csv",
        lambda s: _TABLE,
        lambda f, w, s: [
            *("conditions", "compile", "--table", str(f), "--out", str(w / "out.jsonl")),
            *("--reaction-cols", "substrate", "--condition-cols", "ligand,base"),
            *("--yield-col", "yield"),
        ],
    ),
    "configsearch sweep --dataset": (
        "materials.jsonl",
        lambda s: _DATASET,
        lambda f, w, s: [
            *("configsearch", "sweep", "--dataset", str(f), "--target", "y"),
            *("--store", str(w / "s.sqlite")),
        ],
    ),
    "configsearch replay --references": (
        "refs.json",
        lambda s: _REFERENCE.encode(),
        lambda f, w, s: ["configsearch", "replay", "--references", str(f), "--seeds", "1"],
    ),
    "configsearch reference-report --references": (
        "refs.json",
        lambda s: _REFERENCE.encode(),
        lambda f, w, s: [
            *("configsearch", "reference-report", "--references", str(f)),
            *("--out", str(w / "report")),
        ],
    ),
    "import inspect-log": (
        "log.json",
        lambda s: _INSPECT.encode(),
        lambda f, w, s: ["import", "inspect-log", str(f), "--store", str(w / "s.sqlite")],
    ),
}


@pytest.fixture(scope="module")
def file_seeds(fuzz_seeds: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The session's question file, and a valid predictions file for its first questions."""
    root = tmp_path_factory.mktemp("file-seeds")
    lines = fuzz_seeds["questions"].read_text(encoding="utf-8").splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    predictions = root / "p.jsonl"
    predictions.write_text(
        "".join(json.dumps({"id": i, "text": "option 1"}) + "\n" for i in ids), encoding="utf-8"
    )
    return {**fuzz_seeds, "predictions": predictions}


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in sorted(root.rglob("*"))
    }


CASES = [(reader, kind) for reader in READERS for kind in hostile_kinds(b"x")]


@pytest.mark.parametrize(("reader", "kind"), CASES, ids=[f"{r}-{k}" for r, k in CASES])
def test_a_hostile_file_is_one_line_and_exit_2(
    file_seeds: dict[str, Path], tmp_path: Path, reader: str, kind: str
) -> None:
    name, real, argv = READERS[reader]
    path = tmp_path / name
    content = hostile_kinds(real(file_seeds))[kind]
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    before = _snapshot(tmp_path)
    done = run_cli_in_process(*argv(path, tmp_path, file_seeds))
    if reader == "conditions score --predictions":  # one line per malformed prediction, then
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr  # the error
        assert all(line.startswith("labreplay: ") for line in done.stderr.splitlines())
        assert done.stderr.splitlines()[-1].startswith("labreplay: error: "), done.stderr
    else:
        assert_one_line_error(done)
    assert _snapshot(tmp_path) == before  # the input unchanged, nothing created beside it


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_missing_file_is_one_line_and_exit_2(
    file_seeds: dict[str, Path], tmp_path: Path, reader: str
) -> None:
    name, _, argv = READERS[reader]
    assert_one_line_error(run_cli_in_process(*argv(tmp_path / name, tmp_path, file_seeds)))
    assert list(tmp_path.iterdir()) == []
