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
    "out_dirs",
    "refuse_unknown",
    "seconds",
    "seed_range",
    "seeds",
    "split_options",
    "unknown_option",
]
