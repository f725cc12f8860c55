"""Options classes whose fields are the flags: one declaration for the CLI and the Python API.

A suite declares what a command takes as a frozen, keyword-only dataclass whose fields are
made with `flag(default, help, ...)`: each carries its command-line name, its help and its
check. The dataclass checks itself (`Checked.__post_init__`), so a bad value is refused in one
line (`OptionError`, exit 2) however the class is built: by the CLI from its parsed flags
(`labreplay.cli.generate` makes the typer command from the fields: no suite writes a
`typer.Option`) or by `labreplay.run(..., **options)`. A refusal of one door is therefore a
refusal of the other, with the same words, and both doors have the same defaults.

Each check is a small object that also carries a value it refuses (`refused`): the test that
enumerates every flag of every command feeds it to both doors.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from labreplay import validate


class Check(Protocol):
    """Refuses a bad value (OptionError naming `label`) or returns it, normalised."""

    @property
    def refused(self) -> str | None:
        """A command-line value this check refuses (None: none to show)."""

    def __call__(self, label: str, value: Any) -> Any: ...


@dataclass(frozen=True)
class Ints:
    """An integer in [lo, hi] (a digit string and a NumPy integer are the same int)."""

    lo: int | None = None
    hi: int | None = None

    @property
    def refused(self) -> str | None:
        return str(self.hi + 1) if self.hi is not None else None

    def __call__(self, label: str, value: Any) -> int:
        return validate.int_in(label, value, self.lo, self.hi)


def seeds() -> Ints:
    """A seed: what an SQLite INTEGER column holds, 0 up."""
    return Ints(0, validate.MAX_SEED)


def counts(lo: int = 1) -> Ints:
    """A count of units, calls, rows or steps."""
    return Ints(lo, validate.MAX_COUNT)


@dataclass(frozen=True)
class Floats:
    """A finite number within the bounds (open or closed)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    @property
    def refused(self) -> str | None:
        return "nan"

    def __call__(self, label: str, value: Any) -> float:
        return validate.finite_float(
            label, value, lo=self.lo, hi=self.hi, lo_open=self.lo_open, hi_open=self.hi_open
        )


def seconds(hi: float = validate.MAX_TIMEOUT_S) -> Floats:
    """A duration in seconds: (0, hi]."""
    return Floats(0.0, hi, lo_open=True)


@dataclass(frozen=True)
class OneOf:
    """One of a closed set of names."""

    choices: tuple[str, ...]

    @property
    def refused(self) -> str | None:
        return "not-a-choice"

    def __call__(self, label: str, value: Any) -> str:
        return validate.choice(label, value, self.choices)


@dataclass(frozen=True)
class Rule:
    """A check written as a function of (label, value), with a value it refuses."""

    check: Callable[[str, Any], Any]
    refused: str | None = None

    def __call__(self, label: str, value: Any) -> Any:
        return self.check(label, value)


def _writable_dir(label: str, value: str | Path) -> Path:
    from labreplay._files import writable_dir

    return writable_dir(value, label)


def out_dirs() -> Rule:
    """A directory to write into: free or a directory (a file, FIFO or device there is
    refused before any work, and left as it was). No example value is given: a test makes
    its FIFO or device in its own directory (tests/reliability/test_file_kinds.py), never
    points a command at a system path."""
    return Rule(_writable_dir)


def urls() -> Rule:
    """An http(s) URL with a host."""
    return Rule(validate.url, "not-a-url")


@dataclass(frozen=True)
class Flag:
    """What a field is on the command line: its name, help, check and doors.

    `cli=False`: an API-only field (a progress callback); `api=False`: a field of the command
    line only (`--json`, a directory the CLI reads specs from). `parse_as`: the type typer parses
    where the field's own type is wider (`str | Sequence[str]` read as `str`). `argument`: a
    positional argument of the command line, not a flag (`data fetch NAME`)."""

    help: str
    name: str
    check: Check | None = None
    cli: bool = True
    api: bool = True
    parse_as: object = None
    required: bool = False
    aliases: tuple[str, ...] = ()
    show_default: bool = True
    argument: bool = False

    def label(self, field_name: str) -> str:
        """How a refusal names the option: the flag, and the API name where it differs."""
        if self.name == "--" + field_name.replace("_", "-"):
            return self.name
        return f"{field_name} ({self.name})"


REQUIRED: Any = dataclasses.MISSING


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The known name closest to `key` (None when nothing is close)."""
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_option(where: str, key: str, known: Collection[str]) -> validate.OptionError:
    """One line naming the unknown key, the nearest valid one and what is valid."""
    close = nearest(key, known)
    hint = f"did you mean {close!r}? " if close is not None else ""
    return validate.OptionError(
        f"{where}: unknown option {key!r} ({hint}valid: {', '.join(sorted(known)) or 'none'})"
    )


def refuse_unknown(where: str, given: Iterable[str], known: Collection[str]) -> None:
    """Refuse the first key of `given` not in `known` (OptionError naming the nearest)."""
    for key in given:
        if key not in known:
            raise unknown_option(where, key, known)


def flag(
    default: Any = REQUIRED,
    help: str = "",
    *,
    name: str | None = None,
    check: Check | None = None,
    cli: bool = True,
    api: bool = True,
    parse_as: object = None,
    aliases: Sequence[str] = (),
    factory: Callable[[], Any] | None = None,
    show_default: bool = True,
    argument: bool = False,
) -> Any:
    """A dataclass field that is an option of both doors (`name`: the flag, default from the
    field's name; no default: a required option)."""
    meta = {
        "flag": Flag(
            help=help,
            name=name or "",
            check=check,
            cli=cli,
            api=api,
            parse_as=parse_as,
            required=default is REQUIRED and factory is None,
            aliases=tuple(aliases),
            show_default=show_default,
            argument=argument,
        )
    }
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def flag_of(field: dataclasses.Field[Any]) -> Flag | None:
    """The field's `Flag` (its name filled in), or None for a plain field."""
    declared = field.metadata.get("flag")
    if not isinstance(declared, Flag):
        return None
    if declared.name:
        return declared
    return dataclasses.replace(declared, name="--" + field.name.replace("_", "-"))


def flags(cls: type) -> Iterator[tuple[dataclasses.Field[Any], Flag]]:
    """Every flagged field of an options class, in declaration order."""
    for field in dataclasses.fields(cls):
        declared = flag_of(field)
        if declared is not None:
            yield field, declared


@dataclass(frozen=True, kw_only=True)
class Checked:
    """Base of an options class: every flagged field's check runs as the instance is made
    (None passes: the option was not given), then `check()`, the rules across fields."""

    def __post_init__(self) -> None:
        for field, declared in flags(type(self)):
            value = getattr(self, field.name)
            if declared.check is not None and value is not None:
                object.__setattr__(
                    self, field.name, declared.check(declared.label(field.name), value)
                )
        self.check()

    def check(self) -> None:
        """Rules across fields (override); a refusal raises OptionError."""


def api_names(*classes: type) -> frozenset[str]:
    """The keyword arguments the API takes for these options classes."""
    return frozenset(f.name for cls in classes for f, d in flags(cls) if d.api)


def api_options(*instances: Checked) -> dict[str, Any]:
    """The API's keyword arguments holding these instances' values (a door hands its parsed
    options to `labreplay.run` and the suite's runner in these names)."""
    return {f.name: getattr(one, f.name) for one in instances for f, d in flags(type(one)) if d.api}


def split_options(
    where: str, given: dict[str, Any], *classes: type[Checked]
) -> tuple[Checked, ...]:
    """Build each class from the keys of `given` it declares; a key none declares is refused
    naming the nearest valid one (a typo is never silently ignored)."""
    memo = _PARSED.get()
    for seen_classes, seen, built in memo or ():
        try:
            if seen_classes == classes and seen == given:
                return built
        except (TypeError, ValueError):  # a value without a plain truth (an array): parse again
            continue
    refuse_unknown(where, given, api_names(*classes))
    built = tuple(
        cls(**{k: v for k, v in given.items() if k in {f.name for f, d in flags(cls) if d.api}})
        for cls in classes
    )
    if memo is not None:
        memo.append((classes, dict(given), built))
    return built


# The parses of one `parsed_once()` block: a suite's check, resolve and run steps each split
# the same options; inside one call they get the instances the first split built.
_Parse = tuple[tuple[type[Checked], ...], dict[str, Any], tuple[Checked, ...]]
_PARSED: ContextVar[list[_Parse] | None] = ContextVar("labreplay_parsed", default=None)


@contextmanager
def parsed_once() -> Iterator[None]:
    """Within it (one `labreplay.run` or `serve` call) options given again are not parsed
    again: each options class is built, and its checks run, once."""
    token = _PARSED.set([])
    try:
        yield
    finally:
        _PARSED.reset(token)


__all__ = [
    "REQUIRED",
    "Check",
    "Checked",
    "Flag",
    "Floats",
    "Ints",
    "OneOf",
    "Rule",
    "api_names",
    "api_options",
    "counts",
    "flag",
    "flag_of",
    "flags",
    "nearest",
    "out_dirs",
    "parsed_once",
    "refuse_unknown",
    "seconds",
    "seeds",
    "split_options",
    "unknown_option",
    "urls",
]
