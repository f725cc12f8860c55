"""Every value `conditions run` and `conditions compile` refuse on the command line, the Python
API refuses in the same words: both doors build the same options classes (enumerated here
from their fields, each check's own refused value), before any store or file is made."""

from __future__ import annotations

import contextlib
import io
import typing
from pathlib import Path

import pytest

import labreplay
from labreplay.errors import LabreplayError
from labreplay.option_fields import Checked, flags
from labreplay.sdk.options import DataOptions, LlmOptions
from labreplay.suites.conditions.options import ConditionsCompileOptions, ConditionsRunOptions


def _refusals(*classes: type[Checked]) -> list[typing.Any]:
    """(API name, flag, the value as the CLI parses it) of every checked field of both doors."""
    found = []
    for cls in classes:
        hints = typing.get_type_hints(cls)
        for field, declared in flags(cls):
            refused = declared.check.refused if declared.check is not None else None
            if not (declared.cli and declared.api) or refused is None:
                continue
            kind = str(hints[field.name])
            typed = (
                int(refused) if "int" in kind else float(refused) if "float" in kind else refused
            )
            found.append(pytest.param(field.name, declared.name, refused, typed, id=declared.name))
    return found


def _cli_line(*argv: str) -> str:
    """The one line a refused command prints (exit 2, no traceback)."""
    from labreplay.cli.main import run

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run(list(argv))
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()
    return lines[0].removeprefix("labreplay: error: ")


def test_the_enumeration_sees_the_options_of_both_doors() -> None:
    run = {p.values[1] for p in _refusals(ConditionsRunOptions, LlmOptions)}
    assert {"--limit", "--agent-timeout", "--max-concurrency", "--prices", "--max-cost"} <= run
    compiled = {p.values[1] for p in _refusals(ConditionsCompileOptions, DataOptions)}
    assert {"--max-options", "--max-tables", "--fib-max-hit-floor", "--seed"} <= compiled


@pytest.mark.parametrize(
    ("key", "name", "value", "typed"), _refusals(ConditionsRunOptions, LlmOptions)
)
def test_a_run_option_refused_by_the_cli_is_refused_by_the_api(
    question_file: Path, tmp_path: Path, key: str, name: str, value: str, typed: object
) -> None:
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.runner import question_spec

    store = tmp_path / "s.sqlite"
    argv = ["--questions", str(question_file), "--agent", "random", "--store", str(store)]
    line = _cli_line("conditions", "run", *argv, name, value)
    spec = question_spec(question_file, load_questions(question_file))
    with pytest.raises(LabreplayError) as refused:
        labreplay.run(
            "conditions", [spec], "random", store, questions=question_file, **{key: typed}
        )
    assert str(refused.value) == line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("key", "name", "value", "typed"), _refusals(ConditionsCompileOptions, DataOptions)
)
def test_a_compile_option_refused_by_the_cli_is_refused_by_the_api(
    tmp_path: Path, key: str, name: str, value: str, typed: object
) -> None:
    out = tmp_path / "q.jsonl"
    line = _cli_line("conditions", "compile", "--all", "--out", str(out), name, value)
    with pytest.raises(LabreplayError) as refused:
        labreplay.compile("conditions", out=out, **{key: typed})
    assert str(refused.value) == line
    assert list(tmp_path.iterdir()) == []
