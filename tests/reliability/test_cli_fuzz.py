"""CLI fuzz test: hostile file contents and odd option values across commands.

Promises checked on every example: no traceback (no exception escapes the CLI's boundary), an
exit code in {0, 1, 2}, every line on stderr starts with `labreplay:`, and no input file is
modified. The CLI runs in-process (`labreplay.cli.main.run`) so that a bounded number of
examples fits in CI time; the subprocess path is covered by the other reliability tests.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import make_foreign_sqlite, run_cli_in_process


def _cli(*argv: str) -> tuple[int, str]:
    done = run_cli_in_process(*argv)
    return done.returncode, done.stderr


@pytest.fixture(scope="module")
def seeds(fuzz_seeds: dict[str, Path]) -> dict[str, Path]:
    """Real inputs to mutate: compiled specs and a store holding one real campaign."""
    return fuzz_seeds


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


# ------------------------------------------------------------ every numeric option, every command
# The options are read from the CLI itself, so a new numeric option is fuzzed without editing
# this file; comma lists of numbers (typed as text) are named here.
NUMBER_LISTS = ("--r-values", "--n-values", "--s-values", "--seeds", "--price-per-mtok")
# Always wrong for a number: refused (exit 2) in one line naming the option, nothing created.
# Huge finite values are past every option's declared maximum (a duration, a count, a seed).
NEVER_A_NUMBER = ["nan", "inf", "-inf", "abc", "1e309", "1e23", "99999999999999999999999"]
# Wrong for most options; where one is accepted the run must still end in {0, 1, 2}.
HOSTILE = [*NEVER_A_NUMBER, "-1", "-5", "0", "-0", "99999999999999999999999", "", "0x10", "1.5"]

# Per command: arguments that pass every check and then end cheaply, after all validation (a
# missing input, a foreign store), so an accepted value costs milliseconds, not a run.
BASES: dict[tuple[str, ...], list[str]] = {
    ("data", "fetch"): ["nosuch-source", "--data-dir", "{w}/data"],
    ("campaign", "compile"): ["--out", "{w}/o", "--record", "nosuch-record"],
    ("campaign", "run"): ["--specs", "{w}/nospecs", "--store", "{w}/s.sqlite"],
    ("campaign", "leaderboard"): ["--store", "{w}/foreign.sqlite"],
    ("campaign", "serve"): ["--specs", "{w}/nospecs", "--store", "{w}/s.sqlite"],
    ("campaign", "live", "emulate"): ["--specs", "{w}/nospecs", "--store", "{w}/s.sqlite"],
    ("campaign", "live", "serve"): ["--specs", "{w}/nospecs", "--store", "{w}/s.sqlite"],
    ("conditions", "compile"): ["--out", "{w}/q.jsonl", "--dataset", "nosuch-dataset"],
    ("conditions", "run"): [
        *("--questions", "{w}/none.jsonl", "--store", "{w}/s.sqlite", "--agent", "random"),
    ],
    ("conditions", "serve"): ["--questions", "{w}/none.jsonl", "--store", "{w}/s.sqlite"],
    ("configsearch", "sweep"): ["--task", "band_gap", "--store", "{w}/foreign.sqlite"],
    ("configsearch", "references"): ["--tasks", "band_gap", "--store", "{w}/foreign.sqlite"],
    ("configsearch", "replay"): ["--references", "{w}/norefs"],
    ("configsearch", "reference-report"): ["--references", "{w}/norefs", "--out", "{w}/o"],
    ("configsearch", "run"): ["--task", "band_gap", "--store", "{w}/foreign.sqlite"],
    # a missing data directory ends it after every check, before anything is served
    ("configsearch", "serve"): [
        *("--task", "band_gap", "--store", "{w}/foreign.sqlite", "--data-dir", "{w}/nodata"),
    ],
}


def numeric_options() -> dict[tuple[str, ...], list[str]]:
    """Every command's options typed int or float (and the number lists), from the CLI."""
    import typing

    import typer

    from labreplay.cli.main import _add_suite_groups, app

    _add_suite_groups()
    found: dict[tuple[str, ...], list[str]] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            walk(sub, (*path, name))
        options = []
        for param in getattr(command, "params", []):
            kinds = typing.get_args(param.type_descriptor.annotation) or (
                param.type_descriptor.annotation,
            )
            numeric = any(k in (int, float) for k in kinds) and not param.is_flag
            if numeric or param.opts[0] in NUMBER_LISTS:
                options.append(param.opts[0])
        if options:
            found[path] = options

    walk(typer.main.get_command(app), ())
    return found


NUMERIC = numeric_options()
CASES = [(cmd, opt) for cmd, opts in sorted(NUMERIC.items()) for opt in opts]


def test_every_numeric_option_has_a_cheap_base() -> None:
    """A command with numeric options but no base here would go unfuzzed."""
    assert sorted(NUMERIC) == sorted(BASES), sorted(set(NUMERIC) ^ set(BASES))


@contextlib.contextmanager
def numeric_workspace(root: Path) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir=root) as raw:
        work = Path(raw)
        make_foreign_sqlite(work / "foreign.sqlite")
        yield work


def _try_value(work: Path, command: tuple[str, ...], option: str, value: str) -> tuple[int, str]:
    argv = [*command, *(a.replace("{w}", str(work)) for a in BASES[command]), option, value]
    inputs = [work / "foreign.sqlite"]
    before_digests, before_names = _digests(inputs), sorted(p.name for p in work.iterdir())
    code, err = _cli(*argv)
    assert code in (0, 1, 2), (argv, code, err)
    assert all(line.startswith("labreplay:") for line in err.splitlines() if line.strip()), err
    assert _digests(inputs) == before_digests, argv
    lines = [line for line in err.splitlines() if line.strip()]
    if code == 2 and lines and option in lines[-1]:  # refused for this value: nothing created
        assert sorted(p.name for p in work.iterdir()) == before_names, (argv, err)
    return code, err


@pytest.mark.parametrize("command", sorted(NUMERIC), ids=" ".join)
def test_numeric_options_refuse_what_is_never_a_number(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    """NaN, +/-inf, overflow and text: for every numeric option of every command, one line
    naming the option, exit 2, nothing created (a traceback fails here: `run` re-raises bugs)."""
    for option in NUMERIC[command]:
        for value in NEVER_A_NUMBER:
            with numeric_workspace(tmp_path) as work:
                code, err = _try_value(work, command, option, value)
            assert code == 2 and option in err, (command, option, value, code, err)


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    derandomize=_EXAMPLES == 45,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    case=st.sampled_from(CASES),
    values=st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=2),
)
def test_numeric_options_never_traceback(
    case: tuple[tuple[str, ...], str], values: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Negative, zero, huge, empty, hex and fractional values (and NaN/inf) on a random option:
    an exit in {0, 1, 2}, no traceback, inputs unchanged, nothing created on refusal."""
    command, option = case
    root = tmp_path_factory.getbasetemp()
    for value in values:
        with numeric_workspace(root) as work:
            _try_value(work, command, option, value)


# ------------------------------------------------------------ values no command may take
# (command, arguments before the value, option, value): each refused in one line naming the
# option, exit 2, before anything is created.
REFUSED: list[tuple[tuple[str, ...], str, str]] = [
    (("campaign", "run"), "--controls", ""),
    (("campaign", "run"), "--controls", " "),
    (("campaign", "run"), "--scheduler", "tcp://127.0.0.1:1"),  # with the in-process executor
    (("conditions", "run"), "--scheduler", "tcp://127.0.0.1:1"),
    (("configsearch", "sweep"), "--scheduler", "tcp://127.0.0.1:1"),
    (("configsearch", "run"), "--scheduler", "tcp://127.0.0.1:1"),
    (("campaign", "serve"), "--agent-name", ""),
    (("campaign", "serve"), "--agent-name", "two\nlines"),
    (("conditions", "serve"), "--agent-name", " "),
    (("campaign", "serve"), "--controls", ""),
    (("configsearch", "run"), "--n-total", "100000000000000000000000"),
    (("data", "fetch"), "--timeout", "1e23"),
]


@pytest.mark.parametrize(("command", "option", "value"), REFUSED)
def test_values_no_command_takes(
    command: tuple[str, ...], option: str, value: str, tmp_path: Path, seeds: dict[str, Path]
) -> None:
    with numeric_workspace(tmp_path) as work:
        # real inputs, so that the value is what is refused, not a missing file
        real = {"{w}/nospecs": str(seeds["specs"]), "{w}/none.jsonl": str(seeds["questions"])}
        base = [real.get(a, a).replace("{w}", str(work)) for a in BASES[command]]
        if command == ("data", "fetch"):
            base = ["precursor-genome", "--data-dir", str(work / "data")]
        before = sorted(p.name for p in work.iterdir())
        code, err = _cli(*command, *base, option, value)
        assert code == 2 and option in err, (command, option, value, code, err)
        assert len(err.strip().splitlines()) == 1, err
        assert sorted(p.name for p in work.iterdir()) == before


# ------------------------------------------------------------ every text option, every command
# Arguments ending cheaply for the commands without numeric options (see BASES).
TEXT_BASES: dict[tuple[str, ...], list[str]] = {
    **BASES,
    ("campaign", "live", "board"): ["--store", "{w}/foreign.sqlite"],
    ("conditions", "leaderboard"): ["--store", "{w}/foreign.sqlite"],
    ("conditions", "score"): ["--questions", "{w}/none.jsonl", "--predictions", "{w}/none.jsonl"],
    ("configsearch", "export-references"): ["--store", "{w}/foreign.sqlite", "--out", "{w}/o"],
    ("configsearch", "report"): ["--store", "{w}/foreign.sqlite", "--out", "{w}/o"],
    ("cite",): [],  # --store is its only text option: the drawn value is the store
    ("data", "verify"): ["nosuch-source", "--data-dir", "{w}/data"],
    ("export",): ["--store", "{w}/foreign.sqlite", "--out", "{w}/o"],
    ("import", "inspect-log"): ["{w}/nolog.json", "--store", "{w}/s.sqlite"],
    ("report",): ["--store", "{w}/foreign.sqlite", "--out", "{w}/o"],
    ("store", "keygen"): ["--out", "{w}/key"],
    ("store", "remove"): ["--store", "{w}/foreign.sqlite", "--reason", "hostile"],
    ("store", "sign"): ["--store", "{w}/foreign.sqlite", "--key", "{w}/nokey"],
    ("store", "verify"): ["--store", "{w}/foreign.sqlite"],
    # a missing data directory ends these even where the drawn value makes --store usable
    ("configsearch", "references"): [
        *("--tasks", "band_gap", "--store", "{w}/foreign.sqlite", "--data-dir", "{w}/nodata"),
    ],
    ("configsearch", "sweep"): [
        *("--task", "band_gap", "--store", "{w}/foreign.sqlite", "--data-dir", "{w}/nodata"),
    ],
    ("configsearch", "run"): [
        *("--task", "band_gap", "--store", "{w}/foreign.sqlite", "--data-dir", "{w}/nodata"),
    ],
}
# Values no text option expects. Paths stay inside the workspace (the CLI runs with the
# workspace as its working directory), so no case can write outside it.
HOSTILE_TEXT = [
    "",
    " ",
    "\x00",
    "a\nb",
    "\t",
    "-",
    ",",
    "a,,b",
    "=",
    "k=v=w",
    "x" * 5000,
    "\udcff",  # an undecodable byte from argv (surrogateescape)
    "\u202e",
    "💥",
    "%s%n",
    "' OR 1=1 --",
    "{w}",  # a directory
    "{w}/foreign.sqlite",  # someone else's file
    "nosuch:attr",
    "http://",
    "tcp://",
]


def text_options() -> list[tuple[tuple[str, ...], str]]:
    """(command, option) for every option that takes text or a path, from the CLI itself."""
    import typing

    import typer

    from labreplay.cli.main import _add_suite_groups, app

    _add_suite_groups()
    found: list[tuple[tuple[str, ...], str]] = []

    def walk(command: Any, path: tuple[str, ...]) -> None:
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            walk(sub, (*path, name))
        for param in getattr(command, "params", []):
            kinds = typing.get_args(param.type_descriptor.annotation) or (
                param.type_descriptor.annotation,
            )
            numeric = any(k in (int, float) for k in kinds)
            if param.opts[0].startswith("--") and not numeric and not param.is_flag:
                found.append((path, param.opts[0]))

    walk(typer.main.get_command(app), ())
    return sorted(found)


TEXT_CASES = text_options()


def test_every_text_option_has_a_cheap_base() -> None:
    assert sorted({c for c, _ in TEXT_CASES} - set(TEXT_BASES)) == []


@settings(
    max_examples=2 * _EXAMPLES,
    deadline=None,
    derandomize=_EXAMPLES == 45,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    case=st.sampled_from(TEXT_CASES),
    value=st.one_of(
        st.sampled_from(HOSTILE_TEXT),
        st.text(max_size=12).filter(lambda t: "/" not in t and ".." not in t),
    ),
)
def test_text_options_never_traceback(
    case: tuple[tuple[str, ...], str], value: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A hostile text on any text option of any command: an exit in {0, 1, 2}, no traceback,
    every stderr line from labreplay, the foreign store unchanged, nothing created on a
    refusal naming the option."""
    command, option = case
    with numeric_workspace(tmp_path_factory.getbasetemp()) as work:
        here = Path.cwd()
        os.chdir(work)
        try:
            argv = [*command, *(a.replace("{w}", str(work)) for a in TEXT_BASES[command])]
            argv += [option, value.replace("{w}", str(work))]
            before_digests = _digests([work / "foreign.sqlite"])
            before_names = sorted(p.name for p in work.iterdir())
            code, err = _cli(*argv)
        finally:
            os.chdir(here)
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert all(line.startswith("labreplay:") for line in lines), (argv, err)
        assert _digests([work / "foreign.sqlite"]) == before_digests, argv
        if code == 2 and lines and option in lines[-1]:
            assert sorted(p.name for p in work.iterdir()) == before_names, (argv, err)
