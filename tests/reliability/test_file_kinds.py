"""Regular files only (issue 46): what labreplay writes and what it reads at a user-named path.

An output path holding a device, a FIFO or a directory (a derived sibling such as
`<out>.spec.json` included) is refused in one line, exit 2, and left as it was: the atomic
writer used to rename its temporary file over it, so `conditions compile --out /dev/null` run
as root replaced the machine's /dev/null with a regular file. An input path holding one is
named for what it is (not "not found"), never read: a FIFO blocked the reader for ever,
/dev/zero filled the memory. The devices here are made in tmp_path (never the real ones).
"""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from labreplay._atomic import atomic_directory, atomic_write_text
from labreplay.errors import LabreplayError

from .conftest import assert_one_line_error, run_cli_in_process

KIND_WORDS = {"fifo": "a FIFO", "device": "a character device", "directory": "a directory"}


def _make(path: Path, kind: str) -> Path:
    """A FIFO, a character device (the null device's numbers, as root only) or a directory."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        path.mkdir()
    return path


def _kind(path: Path) -> str:
    mode = os.lstat(path).st_mode
    return next(k for k, test in _TESTS.items() if test(mode))


_TESTS: dict[str, Callable[[int], bool]] = {
    "fifo": stat.S_ISFIFO,
    "device": stat.S_ISCHR,
    "directory": stat.S_ISDIR,
    "file": stat.S_ISREG,
}


class Blocked(BaseException):
    """Raised by the watchdog: a BaseException, so no error boundary turns it into a line."""


@pytest.fixture(autouse=True)
def _watchdog() -> Iterator[None]:
    """A reader that waits on a FIFO fails the test instead of hanging the run."""

    def expire(signum: int, frame: object) -> None:
        raise Blocked("the command blocked for 30 s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- outputs
def _commands_with_out() -> dict[str, list[str]]:
    """Every CLI command that has an `--out` option, with its other required options, read
    from the typer app itself (so a new command is covered without editing this test)."""
    import typer

    from labreplay.cli.main import _add_suite_groups, app

    _add_suite_groups()

    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[str, list[str]]]:
        subcommands = getattr(command, "commands", None)
        params = getattr(command, "params", ())
        if subcommands is not None:
            for name, sub in sorted(subcommands.items()):
                yield from walk(sub, (*path, name))
        elif any("--out" in getattr(p, "opts", ()) for p in params):
            required = [p.opts[0] for p in params if p.required and "--out" not in p.opts]
            yield " ".join(path), required

    return dict(walk(typer.main.get_command(app), ()))


OUT_COMMANDS = _commands_with_out()


def test_the_out_commands_are_found() -> None:
    assert {"conditions compile", "campaign compile", "export", "report"} <= set(OUT_COMMANDS)


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("command", sorted(OUT_COMMANDS))
def test_every_out_option_refuses_a_device_or_fifo_and_leaves_it(
    command: str, kind: str, tmp_path: Path
) -> None:
    target = _make(tmp_path / "target", kind)
    # the other required options (`--store`) name a path that is not there: nothing is read
    # before the options are checked
    others = [word for name in OUT_COMMANDS[command] for word in (name, str(tmp_path / "x"))]
    argv = [*command.split(), *others, "--out", str(target)]
    line = assert_one_line_error(run_cli_in_process(*argv))
    assert str(target) in line and KIND_WORDS[kind] in line, line
    assert _kind(target) == kind
    assert [p.name for p in tmp_path.iterdir()] == ["target"]  # nothing written beside it


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_conditions_compile_onto_a_device_or_beside_one_writes_nothing(
    kind: str, tmp_path: Path
) -> None:
    """The reported case: a real compile onto a device node, then with its spec sibling one."""
    import labreplay

    device = _make(tmp_path / "null", kind)
    argv = ["conditions", "compile", "--dataset", "summit_reizman"]
    line = assert_one_line_error(run_cli_in_process(*argv, "--out", str(device)))
    assert KIND_WORDS[kind] in line
    assert _kind(device) == kind

    out = tmp_path / "q.jsonl"
    sibling = _make(tmp_path / "q.jsonl.spec.json", kind)
    line = assert_one_line_error(run_cli_in_process(*argv, "--out", str(out)))
    assert str(sibling) in line and KIND_WORDS[kind] in line
    with pytest.raises(LabreplayError, match=KIND_WORDS[kind]):  # the Python API: the same
        labreplay.compile("conditions", datasets=["summit_reizman"], out=out)
    assert _kind(sibling) == kind and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "q.jsonl.spec.json"]


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_the_atomic_writer_refuses_anything_but_a_regular_file(kind: str, tmp_path: Path) -> None:
    target = _make(tmp_path / "out.txt", kind)
    with pytest.raises(LabreplayError, match=KIND_WORDS[kind]):
        atomic_write_text(target, "x")
    assert _kind(target) == kind
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary left


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_an_output_directory_keeps_a_namesake_that_is_not_a_regular_file(
    kind: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.txt").write_text("mine", encoding="utf-8")
    namesake = _make(out / "index.html", kind)
    with pytest.raises(LabreplayError, match=KIND_WORDS[kind]), atomic_directory(out) as build:
        (build / "index.html").write_text("new", encoding="utf-8")
        (build / "kept.txt").write_text("new", encoding="utf-8")
    assert _kind(namesake) == kind
    assert (out / "kept.txt").read_text(encoding="utf-8") == "mine"  # all or nothing
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# --------------------------------------------------------------------------- inputs
# reader -> argv with the file at F (and W: a scratch directory); each names its input first,
# so that a refusal is the input's own, before any other option is looked at.
READERS: dict[str, Callable[[Path, Path, dict[str, Path]], list[str]]] = {
    "--prices": lambda f, w, s: [
        *("conditions", "run", "--prices", str(f), "--questions", str(s["questions"])),
        *("--store", str(w / "s.sqlite"), "--agent", "random"),
    ],
    "conditions run --questions": lambda f, w, s: [
        *("conditions", "run", "--questions", str(f), "--store", str(w / "s.sqlite")),
        *("--agent", "random"),
    ],
    "conditions score --predictions": lambda f, w, s: [
        *("conditions", "score", "--predictions", str(f), "--questions", str(s["questions"])),
    ],
    "conditions compile --table": lambda f, w, s: [
        *("conditions", "compile", "--table", str(f), "--out", str(w / "q.jsonl")),
        *("--reaction-cols", "a", "--condition-cols", "b", "--yield-col", "y"),
    ],
    "campaign compile --record-card": lambda f, w, s: [
        *("campaign", "compile", "--record-card", str(f), "--out", str(w / "specs")),
    ],
    "campaign run --specs": lambda f, w, s: [
        *("campaign", "run", "--specs", str(f), "--store", str(w / "s.sqlite")),
        *("--agent", "random"),
    ],
    "store sign --key": lambda f, w, s: [
        *("store", "sign", "--key", str(f), "--store", str(s["store"])),
    ],
    "import inspect-log": lambda f, w, s: [
        *("import", "inspect-log", str(f), "--store", str(w / "s.sqlite")),
    ],
    "configsearch sweep --dataset": lambda f, w, s: [
        *("configsearch", "sweep", "--dataset", str(f), "--target", "y"),
        *("--store", str(w / "s.sqlite")),
    ],
    "configsearch replay --references": lambda f, w, s: [
        *("configsearch", "replay", "--references", str(f), "--seeds", "1"),
    ],
    "conditions run --store": lambda f, w, s: [
        *("conditions", "run", "--questions", str(s["questions"]), "--store", str(f)),
        *("--agent", "random"),
    ],
}
# the card reader asks for the file's name before its kind
NAMES = {"campaign compile --record-card": "x.card.toml", "import inspect-log": "x.json"}


@pytest.mark.parametrize("kind", ["fifo", "device"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_input_that_is_a_fifo_or_a_device_is_named_for_what_it_is(
    reader: str, kind: str, fuzz_seeds: dict[str, Path], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = _make(tmp_path / NAMES.get(reader, "input"), kind)
    line = assert_one_line_error(run_cli_in_process(*READERS[reader](path, work, fuzz_seeds)))
    assert KIND_WORDS[kind] in line and "not found" not in line, line
    assert _kind(path) == kind
    assert list(work.iterdir()) == []  # no store, no output


def test_a_spec_directory_that_is_a_fifo_is_named_so(
    fuzz_seeds: dict[str, Path], tmp_path: Path
) -> None:
    index = _make(tmp_path / "specs", "directory") / "index.json"
    _make(index, "fifo")
    line = assert_one_line_error(
        run_cli_in_process(*READERS["campaign run --specs"](index.parent, tmp_path, fuzz_seeds))
    )
    assert "a FIFO" in line and "not found" not in line, line
    assert _kind(index) == "fifo" and not (tmp_path / "s.sqlite").exists()


def test_a_price_file_over_its_limit_is_refused_unread(tmp_path: Path) -> None:
    """A regular file too large to be a price table (sparse: it costs no disk)."""
    from labreplay.agents.llm_prices import load_prices

    huge = tmp_path / "prices.json"
    with huge.open("wb") as handle:
        handle.truncate(17 * 2**20)  # over the 16 MiB cap
    with pytest.raises(LabreplayError, match="limit"):
        load_prices(huge)
