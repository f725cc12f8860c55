"""Options classes: one frozen dataclass per suite command, the fields its flags.

A suite declares what a command takes as a frozen, keyword-only `Checked` dataclass whose
fields are made with `flag(default, help, check=...)`; the CLI's flags are generated from the
fields (`labreplay.sdk.cli.command`) and the Python API builds the same class from its keyword
arguments (`split_options` refuses a key no class declares, naming the nearest valid one), so
both doors share one set of defaults, checks and refusals. The groups every run shares are
declared once: `IsolationOptions` (the base of a suite's run options), `LlmOptions`,
`ExecutorOptions`, `OutputOptions`.

The checks (`Ints`, `Floats`, `OneOf`, `Rule`, `counts`, `seconds`, `seeds`) and the
validators under them (`int_in`, `finite_float`, `seed_range`, ...) raise `OptionError` (a
`LabreplayError`: one line, exit 2) naming the option.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from labreplay.agents.llm_options import BuilderKwargs, LlmOptions
from labreplay.option_fields import (
    REQUIRED,
    Checked,
    Floats,
    Ints,
    OneOf,
    Rule,
    api_names,
    api_options,
    counts,
    flag,
    flags,
    nearest,
    out_dirs,
    refuse_unknown,
    seconds,
    seeds,
    split_options,
    unknown_option,
)
from labreplay.run_options import (
    DataDirOptions,
    DataOptions,
    ExecutorOptions,
    IsolationOptions,
    OutputOptions,
    ServeOptions,
    StoreOptions,
)
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
    "REQUIRED",
    "BuilderKwargs",
    "Checked",
    "DataDirOptions",
    "DataOptions",
    "ExecutorOptions",
    "Floats",
    "Ints",
    "IsolationOptions",
    "LlmOptions",
    "OneOf",
    "OptionError",
    "OutputOptions",
    "Rule",
    "ServeOptions",
    "StoreOptions",
    "api_names",
    "api_options",
    "bad",
    "check_agent_timeout",
    "choice",
    "counts",
    "finite_float",
    "flag",
    "flags",
    "id_set",
    "int_in",
    "name_list",
    "nearest",
    "number_list",
    "option_names",
    "out_dirs",
    "parse_options",
    "refuse_unknown",
    "seconds",
    "seed_range",
    "seeds",
    "split_options",
    "unknown_option",
]
