"""One validator per kind of option value, shared by every command and the Python API.

Each check runs before any work starts and before any file or store is created, and refuses a
bad value in one line naming the option and the value (a `LabreplayError`: exit 2). The CLI
uses them as typer callbacks (`labreplay.cli._common`); the Python entry points call them on
their arguments, so `labreplay.run(..., controls="random")` is refused exactly as the CLI
refuses `--controls bogus`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Literal, SupportsFloat, SupportsIndex, overload

from labreplay.errors import LabreplayError

MAX_SEED = 2**63 - 1  # what a SQLite INTEGER column holds
MAX_SEED_COUNT = 1_000  # seeds one command may expand to (each one is a compiled set or a run)
# Declared maxima of the options that take a duration or a count, so that a huge finite value
# (1e23) is refused in one line by its own range instead of overflowing a timer, an SQLite
# INTEGER or an allocation somewhere later.
MAX_TIMEOUT_S = 86_400.0  # one call or request: a day
MAX_RUN_TIME_S = 30 * 86_400.0  # one run's wall-time cap: thirty days
MAX_COUNT = 1_000_000_000  # a count of units, calls, rows or steps
MAX_TOKENS_TOTAL = 10**12  # a run's token cap


class OptionError(LabreplayError):
    """A bad option or argument value (exit 2)."""


def bad(option: str, value: object, why: str) -> OptionError:
    return OptionError(f"{option}: value {value!r} {why}")


def finite_float(
    option: str,
    value: object,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """`value` as a finite float within the bounds (open or closed), else OptionError."""
    # What float() accepts; anything else is the TypeError branch below.
    convertible = (str, bytes, bytearray, memoryview, SupportsFloat, SupportsIndex)
    if isinstance(value, bool) or not isinstance(value, convertible):
        raise bad(option, value, "is not a number")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise bad(option, value, "is not a number") from None
    if not math.isfinite(number):
        raise bad(option, value, "must be a finite number")
    below = lo is not None and (number <= lo if lo_open else number < lo)
    above = hi is not None and (number >= hi if hi_open else number > hi)
    if below or above:
        left = ("(" if lo_open else "[") + (f"{lo:g}" if lo is not None else "-inf")
        right = (f"{hi:g}" if hi is not None else "inf") + (")" if hi_open else "]")
        raise bad(option, value, f"is out of range {left}, {right}")
    return number


def int_in(option: str, value: object, lo: int | None = None, hi: int | None = None) -> int:
    """`value` as a Python int within [lo, hi], else OptionError. An int, a NumPy integer
    (any `numbers.Integral`) and a string of ASCII digits give the same int; a float, a bool
    (NumPy's too) or None is not an int."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral | str):
        raise bad(option, value, "is not an integer")
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in ("+", "-") else text
        if not (digits.isascii() and digits.isdigit()):
            raise bad(option, value, "is not an integer")
    number = int(value)  # a plain int: a NumPy integer or a digit string is the same seed
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        bounds = f"[{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
        raise bad(option, value, f"is out of range {bounds}")
    return number


def seed(option: str, value: object) -> int:
    return int_in(option, value, 0, MAX_SEED)


def choice(option: str, value: object, choices: Collection[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        shown = choices if isinstance(choices, Sequence) else sorted(choices)
        raise bad(option, value, f"is not one of {', '.join(shown)}")
    return value


def name_list(
    option: str,
    value: object,
    choices: Collection[str] | None = None,
    *,
    allow_empty: bool = False,
) -> tuple[str, ...]:
    """A comma list (CLI text) or a list/tuple of names (Python API): non-empty unless allowed,
    each name among `choices` when given, duplicates dropped in order. A bare string in the
    Python API is read as the CLI reads it (comma separated)."""
    if isinstance(value, str):
        names = [v.strip() for v in value.split(",")]
        if any(not n for n in names) and value.strip():
            raise bad(option, value, "has an empty name in it")
        names = [n for n in names if n]
    elif isinstance(value, Iterable) and not isinstance(value, bytes | dict):
        names = list(value)
        if not all(isinstance(n, str) and n.strip() for n in names):
            raise bad(option, value, "must be a list of non-empty names")
    else:
        raise bad(option, value, "must be a comma list or a list of names")
    if not names and not allow_empty:
        raise bad(option, value, "is empty; give at least one name")
    if choices is not None:
        unknown = [n for n in names if n not in choices]
        if unknown:
            raise bad(
                option, value, f"names unknown {unknown}; known: {', '.join(sorted(choices))}"
            )
    return tuple(dict.fromkeys(names))


def id_set(option: str, value: object, known: Sequence[str]) -> tuple[str, ...]:
    """A non-empty set of ids that must all exist among `known`."""
    names = name_list(option, value)
    missing = [n for n in names if n not in set(known)]
    if missing:
        shown = ", ".join(list(known)[:5]) + (", ..." if len(known) > 5 else "")
        raise bad(option, value, f"names unknown id(s) {missing}; known: {shown}")
    return names


@overload
def number_list(
    option: str,
    value: object,
    *,
    integer: Literal[True],
    lo: float | None = None,
    hi: float | None = None,
    why: str = "",
) -> tuple[int, ...]: ...


@overload
def number_list(
    option: str,
    value: object,
    *,
    integer: Literal[False] = False,
    lo: float | None = None,
    hi: float | None = None,
    why: str = "",
) -> tuple[float, ...]: ...


def number_list(
    option: str,
    value: object,
    *,
    integer: bool = False,
    lo: float | None = None,
    hi: float | None = None,
    why: str = "",
) -> tuple[int, ...] | tuple[float, ...]:
    """A non-empty comma list of finite numbers (ints when `integer`) within [lo, hi], sorted
    and without duplicates. A refusal names the option, the whole value and the bad item
    (`why` says where a bound comes from, e.g. "the --n-ood OOD candidates")."""
    parts = [p.strip() for p in value.split(",")] if isinstance(value, str) else value
    if not isinstance(parts, list | tuple) or not parts or any(p in ("", None) for p in parts):
        raise bad(option, value, "is not a non-empty comma list of numbers")
    kind = "integer" if integer else "finite number"
    numbers: list[float] = []
    for part in parts:
        try:
            number = int_in(option, part) if integer else finite_float(option, part)
        except OptionError:
            raise bad(option, value, f"has {part!r}, which is not a {kind}") from None
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            bounds = f"[{_shown(lo, '-inf')}, {_shown(hi, 'inf')}]"
            raise bad(option, value, f"has {part!r}, outside {bounds}{why and ' (' + why + ')'}")
        numbers.append(number)
    return tuple(sorted(set(numbers)))


def _shown(bound: float | None, missing: str) -> str:
    return missing if bound is None else f"{bound:g}"


def seed_range(option: str, value: object, max_count: int = MAX_SEED_COUNT) -> list[int]:
    """`A-B` (inclusive), `A,B,C` or one seed: each in [0, 2^63-1], at most `max_count` of
    them. Checked from the text, before any seed is expanded (a range of 10^5 seeds was
    accepted and compiled into memory)."""
    text = str(value).strip()
    if not text:
        raise bad(option, value, "is empty; give e.g. 0, 0-4 or 0,3,7")
    pieces: list[tuple[int, int]] = []
    count = 0
    for part in text.split(","):
        part = part.strip()
        lo_text, dash, hi_text = part.partition("-")
        lo = seed(option, lo_text)
        hi = seed(option, hi_text) if dash else lo
        if hi < lo:
            raise bad(option, value, f"has the empty range {part}")
        count += hi - lo + 1
        if count > max_count:
            raise bad(option, value, f"expands to more than {max_count} seeds (the maximum)")
        pieces.append((lo, hi))
    return list(dict.fromkeys(_expand(pieces)))


def _expand(pieces: Sequence[tuple[int, int]]) -> Iterator[int]:
    for lo, hi in pieces:
        yield from range(lo, hi + 1)


MAX_NAME_CHARS = 200


def display_name(option: str, value: object) -> str:
    """A declared name (an agent's, a harness's): non-empty, printable, one line, at most
    `MAX_NAME_CHARS` characters. It lands in the store, on boards and in run ids."""
    if not isinstance(value, str) or not value.strip():
        raise bad(option, value, "is empty; give a name")
    if len(value) > MAX_NAME_CHARS:
        raise bad(option, value[:40] + "...", f"is longer than {MAX_NAME_CHARS} characters")
    if not value.isprintable():
        raise bad(option, value, "holds a control character")
    return value


def scheduler_address(option: str, value: object) -> str:
    """A Dask scheduler address: `tcp://host:port` (or `host:port`), port in 1..65535."""
    from urllib.parse import urlsplit

    text = str(value).strip()
    spelled = text if "://" in text else f"tcp://{text}"
    try:
        parts = urlsplit(spelled)
        port = parts.port
    except ValueError:
        raise bad(option, value, "is not a scheduler address like tcp://127.0.0.1:8786") from None
    ok = parts.scheme in ("tcp", "tls", "ucx", "inproc") and parts.hostname and port
    if not ok or parts.path not in ("", "/") or any(c.isspace() for c in text):
        raise bad(option, value, "is not a scheduler address like tcp://127.0.0.1:8786")
    return text


def url(option: str, value: object) -> str:
    """An http(s) URL with a host and a valid port, or a one-line error."""
    if not isinstance(value, str):
        raise bad(option, value, "is not a URL")
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError on a bad port
    except ValueError as exc:
        raise bad(option, value, f"is not a valid URL ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad(option, value, "is not an http(s) URL with a host, e.g. http://127.0.0.1:8080/v1")
    if port == 0:
        raise bad(option, value, "has port 0")
    if any(c.isspace() for c in value):
        raise bad(option, value, "contains whitespace")
    return value


__all__ = [
    "MAX_COUNT",
    "MAX_RUN_TIME_S",
    "MAX_SEED",
    "MAX_SEED_COUNT",
    "MAX_TIMEOUT_S",
    "MAX_TOKENS_TOTAL",
    "OptionError",
    "bad",
    "choice",
    "display_name",
    "finite_float",
    "id_set",
    "int_in",
    "name_list",
    "number_list",
    "scheduler_address",
    "seed",
    "seed_range",
    "url",
]
