"""Options classes: one frozen dataclass per suite command, refusing unknown keys.

Every suite declares what `labreplay.run(suite, ...)` and `labreplay.compile(suite, ...)` take
as a frozen dataclass; `parse_options(Options, where, given)` builds it from keyword arguments
and refuses a key it does not declare in one line naming the nearest valid key (exit 2), so a
typo (`contrls=()`) is never silently ignored. The CLI builds the same class from its flags,
so the CLI and the API share one set of defaults.

The validators the options classes use (`int_in`, `finite_float`, `seed_range`, `id_set`, ...)
are re-exported here; each raises `OptionError` (a `LabreplayError`) naming the option.

Keyword arguments meant for the agent builder (e.g. the LLM options of `openai:MODEL`) are
declared as a set of names (`agent_keys`) and come back apart, in `extra`.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from labreplay.validate import (
    MAX_SEED,
    MAX_SEED_COUNT,
    OptionError,
    bad,
    choice,
    finite_float,
    id_set,
    int_in,
    name_list,
    number_list,
    seed_range,
)

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# an options dataclass
OptionsT = TypeVar("OptionsT", bound="DataclassInstance")


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The known name closest to `key` (None when nothing is close)."""
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_option(where: str, key: str, known: Collection[str]) -> OptionError:
    """One line naming the unknown key, the nearest valid one and what is valid."""
    close = nearest(key, known)
    hint = f"did you mean {close!r}? " if close is not None else ""
    return OptionError(
        f"{where}: unknown option {key!r} ({hint}valid: {', '.join(sorted(known)) or 'none'})"
    )


def refuse_unknown(where: str, given: Iterable[str], known: Collection[str]) -> None:
    """Refuse the first key of `given` not in `known` (OptionError naming the nearest)."""
    for key in given:
        if key not in known:
            raise unknown_option(where, key, known)


def check_agent_timeout(isolate: bool, agent_timeout_s: float | None) -> None:
    """`agent_timeout_s` (--agent-timeout) is a bound on an isolated agent's calls: refused
    without `isolate`, since an in-process agent cannot be stopped mid-call (a timeout that
    is accepted and ignored would promise what it does not do)."""
    if agent_timeout_s is None:
        return
    if not isolate:
        raise OptionError(
            "agent_timeout_s (--agent-timeout) needs isolate (--isolate): an in-process "
            "agent cannot be stopped mid-call"
        )
    finite_float("agent_timeout_s", agent_timeout_s, lo=0.0, hi=86_400.0, lo_open=True)


def option_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    """The field names of an options dataclass."""
    return tuple(f.name for f in dataclasses.fields(cls))


def parse_options(
    cls: type[OptionsT],
    where: str,
    given: Mapping[str, Any],
    agent_keys: Collection[str] = (),
) -> tuple[OptionsT, dict[str, Any]]:
    """`cls(**known)` and the keys meant for the agent builder; any other key is refused."""
    fields = option_names(cls)
    refuse_unknown(where, given, {*fields, *agent_keys})
    own = {k: v for k, v in given.items() if k in fields}
    extra = {k: v for k, v in given.items() if k not in fields}
    return cls(**own), extra


__all__ = [
    "MAX_SEED",
    "MAX_SEED_COUNT",
    "OptionError",
    "bad",
    "check_agent_timeout",
    "choice",
    "finite_float",
    "id_set",
    "int_in",
    "name_list",
    "nearest",
    "number_list",
    "option_names",
    "parse_options",
    "refuse_unknown",
    "seed_range",
    "unknown_option",
]
