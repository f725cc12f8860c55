"""CLI fuzz test: hostile file contents and odd option values across commands.

Promises checked on every example: no traceback (no exception escapes the CLI's boundary), an
exit code in {0, 1, 2}, every line on stderr starts with `labreplay:`, and no input file is
modified. The CLI runs in-process (`labreplay.cli.main.run`) so that a bounded number of
examples fits in CI time; the subprocess path is covered by the other reliability tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labreplay.cli.main import run

from .conftest import make_foreign_sqlite


def _cli(*argv: str) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = run(list(argv))
    return code, err.getvalue()


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real inputs to mutate: compiled specs and a store holding one real campaign."""
    root = tmp_path_factory.mktemp("fuzz-seeds")
    specs = root / "specs"
    code, err = _cli("campaign", "compile", "--out", str(specs))
    assert code == 0, err
    index = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    first = index["assignments"][0]["id"]
    store = root / "store.sqlite"
    code, err = _cli(
        "campaign",
        "run",
        "--specs",
        str(specs),
        "--store",
        str(store),
        "--agent",
        "random",
        "--only",
        first,
        "--controls",
        "random",
    )
    assert code == 0, err
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the whole store in one file
    conn.close()
    return {"specs": specs, "store": store, "root": root}


def _json_shapes() -> st.SearchStrategy[bytes]:
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
    )
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=8,
    )
    return values.map(lambda v: json.dumps(v).encode("utf-8"))


ODD_NUMBERS = [
    "-1",
    "-0",
    "1e309",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "1.5",
    "",
    "0x10",
    "99999999999999999999999",
    "١",
]


def contents(real: bytes) -> st.SearchStrategy[bytes]:
    """Hostile variants of a real file: truncated, invalid UTF-8, wrong JSON shapes, noise."""
    n = len(real)
    return st.one_of(
        st.integers(0, max(0, n - 1)).map(lambda k: real[:k]),
        st.integers(0, max(0, n - 1)).map(lambda k: real[:k] + b"\xff\xfe" + real[k:]),
        _json_shapes(),
        st.binary(max_size=64),
        st.sampled_from(
            [b"", b"null", b"5", b"[]", b"{}", b'{"a": NaN}', b"\xef\xbb\xbf{}", b"1e999"]
        ),
    )


@contextlib.contextmanager
def workspace(seeds: dict[str, Path]) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=seeds["root"]) as raw:
        tmp = Path(raw)
        shutil.copytree(seeds["specs"], tmp / "specs")
        shutil.copy(seeds["store"], tmp / "store.sqlite")
        yield tmp


def _digests(paths: list[Path]) -> dict[str, str]:
    out = {}
    for path in paths:
        for f in [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()):
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


COMMANDS = ["run-spec", "run-index", "leaderboard", "export", "report", "score", "compile", "fetch"]


# CI: 45 fixed examples (< 60 s). A longer hunt: LABREPLAY_FUZZ_EXAMPLES=500 (random examples).
_EXAMPLES = int(os.environ.get("LABREPLAY_FUZZ_EXAMPLES", "0")) or 45


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    derandomize=_EXAMPLES == 45,  # the same examples on every CI run: a failure is reproducible
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_cli_never_tracebacks_and_never_modifies_inputs(
    data: st.DataObject, seeds: dict[str, Path]
) -> None:
    command = data.draw(st.sampled_from(COMMANDS), label="command")
    with workspace(seeds) as tmp:
        specs, store = tmp / "specs", tmp / "store.sqlite"
        index = json.loads((specs / "index.json").read_text(encoding="utf-8"))
        spec_file = specs / index["assignments"][0]["file"]
        out = tmp / "out"
        if command == "run-spec":
            spec_file.write_bytes(data.draw(contents(spec_file.read_bytes()), label="spec"))
            argv = [
                "campaign",
                "run",
                "--specs",
                str(specs),
                "--store",
                str(tmp / "new.sqlite"),
                "--agent",
                "random",
                "--only",
                index["assignments"][0]["id"],
                "--controls",
                "random",
            ]
            inputs = [specs]
        elif command == "run-index":
            index_path = specs / "index.json"
            index_path.write_bytes(data.draw(contents(index_path.read_bytes()), label="index"))
            argv = [
                "campaign",
                "run",
                "--specs",
                str(specs),
                "--store",
                str(tmp / "new.sqlite"),
                "--seed",
                data.draw(st.sampled_from(["0", *ODD_NUMBERS]), label="seed"),
            ]
            inputs = [specs]
        elif command in ("leaderboard", "export", "report"):
            kind = data.draw(st.sampled_from(["mutated", "foreign", "real"]), label="store")
            if kind == "mutated":
                store.write_bytes(data.draw(contents(store.read_bytes()), label="bytes"))
            elif kind == "foreign":
                store.unlink()
                make_foreign_sqlite(store)
            argv = {
                "leaderboard": ["campaign", "leaderboard", "--store", str(store), "--json"],
                "export": [
                    "export",
                    "--store",
                    str(store),
                    "--out",
                    str(out),
                    "--formats",
                    data.draw(st.sampled_from(["jsonl", "csv", "jsonl,csv", "xml", ",", ""])),
                ],
                "report": ["report", "--store", str(store), "--out", str(out)],
            }[command]
            inputs = [store]
        elif command == "score":
            q, p = tmp / "q.jsonl", tmp / "p.jsonl"
            line = b'{"id": "q1", "answer": 0}\n'
            q.write_bytes(data.draw(contents(line * 2), label="questions"))
            p.write_bytes(data.draw(contents(line), label="predictions"))
            argv = ["conditions", "score", "--questions", str(q), "--predictions", str(p)]
            inputs = [q, p]
        elif command == "compile":
            argv = [
                "campaign",
                "compile",
                "--out",
                str(out),
                "--seed",
                data.draw(st.sampled_from(ODD_NUMBERS), label="seed"),
            ]
            inputs = []
        else:
            argv = [
                "data",
                "fetch",
                "precursor-genome",
                "--data-dir",
                str(tmp / "data"),
                "--timeout",
                data.draw(st.sampled_from(ODD_NUMBERS), label="timeout"),
                "--mirror",
                data.draw(st.sampled_from(["not a url", "ftp://x", "http://", "http://h:99999/"])),
            ]
            inputs = []
        before = _digests(inputs)
        code, err = _cli(*argv)
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, err
        assert all(line.startswith("labreplay:") for line in err.splitlines() if line.strip()), err
        assert _digests(inputs) == before, argv
