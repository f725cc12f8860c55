"""CLI helpers for a suite's command group (typer options, validators, JSON and progress).

    from labreplay.sdk.cli import DataDirOption, JsonOption, console, print_json, seed_check

`print_table(table, "system")` prints a rich table whose name column stays whole at any width
(`COLUMNS` is honoured; a file or a pipe gets the table at its natural width).

Validators raise `LabreplayError` with one line naming the option and the value; the CLI's
entry point prints it and exits 2 (see `report_failure`).

The LLM option set of every LLM run command (`BaseUrlOption`, ..., `agent_options`) is here
too, imported on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from labreplay._lazy import lazy_attributes
from labreplay.cli._common import (
    EXECUTORS,
    AgentTimeoutOption,
    DataDirOption,
    ExecutorOption,
    IsolateOption,
    JsonOption,
    QuietOption,
    RequireSandboxOption,
    SchedulerOption,
    WorkersOption,
    check_isolation,
    choice,
    console,
    count_check,
    err_console,
    finite_float_check,
    int_range,
    name_check,
    out_dir_check,
    out_file_check,
    positive_float,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
    scheduler_check,
    seed_check,
    timeout_check,
    url_check,
)
from labreplay.cli._errors import expected_failure, report_failure
from labreplay.cli.generate import command

if TYPE_CHECKING:
    from labreplay.cli.llm_options import (
        ApiKeyEnvOption,
        BaseUrlOption,
        DryRunOption,
        LimitOption,
        LlmSeedOption,
        MaxCallsOption,
        MaxCallTimeOption,
        MaxCostOption,
        MaxRetriesOption,
        MaxRetryWaitOption,
        MaxTimeOption,
        MaxTokensOption,
        MaxTokensTotalOption,
        MaxTotalCostOption,
        PriceOption,
        PricesOption,
        ProviderOption,
        ReasoningEffortOption,
        ReasoningTokensOption,
        TemperatureOption,
        TimeoutOption,
        TokenParamOption,
        agent_options,
    )

_SOURCES: dict[str, tuple[str, ...]] = {
    "labreplay.cli.llm_options": (
        "ApiKeyEnvOption",
        "BaseUrlOption",
        "DryRunOption",
        "LimitOption",
        "LlmSeedOption",
        "MaxCallsOption",
        "MaxCallTimeOption",
        "MaxRetriesOption",
        "MaxRetryWaitOption",
        "MaxTimeOption",
        "MaxTokensOption",
        "MaxTokensTotalOption",
        "PriceOption",
        "MaxCostOption",
        "MaxTotalCostOption",
        "PricesOption",
        "ProviderOption",
        "ReasoningEffortOption",
        "ReasoningTokensOption",
        "TemperatureOption",
        "TimeoutOption",
        "TokenParamOption",
        "agent_options",
    ),
}

__all__ = [
    "EXECUTORS",
    "AgentTimeoutOption",
    "ApiKeyEnvOption",
    "BaseUrlOption",
    "DataDirOption",
    "DryRunOption",
    "ExecutorOption",
    "IsolateOption",
    "JsonOption",
    "LimitOption",
    "LlmSeedOption",
    "MaxCallTimeOption",
    "MaxCallsOption",
    "MaxCostOption",
    "MaxRetriesOption",
    "MaxRetryWaitOption",
    "MaxTimeOption",
    "MaxTokensOption",
    "MaxTokensTotalOption",
    "MaxTotalCostOption",
    "PriceOption",
    "PricesOption",
    "ProviderOption",
    "QuietOption",
    "ReasoningEffortOption",
    "ReasoningTokensOption",
    "RequireSandboxOption",
    "SchedulerOption",
    "TemperatureOption",
    "TimeoutOption",
    "TokenParamOption",
    "WorkersOption",
    "agent_options",
    "check_isolation",
    "choice",
    "command",
    "console",
    "count_check",
    "err_console",
    "expected_failure",
    "finite_float_check",
    "int_range",
    "name_check",
    "out_dir_check",
    "out_file_check",
    "positive_float",
    "print_json",
    "print_table",
    "progress_bar",
    "progress_printer",
    "report_failure",
    "scheduler_check",
    "seed_check",
    "timeout_check",
    "url_check",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_attributes(__name__, globals(), _SOURCES)
