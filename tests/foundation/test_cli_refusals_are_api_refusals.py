"""Every refusal of the CLI is a refusal of the API, in the same words (issue 47).

The commands are generated from options classes (`labreplay.cli.generate.command`): each flag
is a field whose check carries a value it refuses (`Check.refused`). This walks every command
of `labreplay` (every group, the suites' included) and, for every flag with such a value:

- the command line with that value exits 2 with one line on stderr and creates nothing;
- where the field is an option of the API too (`api=True`), the command's API door
  (`labreplay.run` for `run` and `serve`, `labreplay.compile` for `compile`) refuses the same
  value, as the command line parses it, with the same message.

A command written by hand (not generated from options classes) fails the test, unless it takes
no option at all (`NO_OPTIONS`).
"""

from __future__ import annotations

import dataclasses
import pickle
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

import labreplay
from labreplay.cli import main as cli_main
from labreplay.cli.generate import options_of
from labreplay.errors import LabreplayError
from labreplay.option_fields import Checked, Flag, flags

# Commands that take no option at all: nothing to generate.
NO_OPTIONS = frozenset({"version"})
# The API door of a command, by its last word.
RUN_DOORS = ("run", "serve", "replay", "emulate")  # serve plays the run `run` plays, with its
# options; configsearch replay's optimiser and campaign live emulate take the run's LLM options
COMPILE_DOORS = ("compile", "sweep", "references")  # a sweep's samples are compiled ones


Callback = Callable[..., Any] | None


def _commands(app: typer.Typer, prefix: str = "") -> Iterator[tuple[str, Callback]]:
    """(command path, callback) of every command under `app`."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "")
        yield f"{prefix}{name}", info.callback
    for group in app.registered_groups:
        if group.typer_instance is not None:
            yield from _commands(group.typer_instance, f"{prefix}{group.name} ")


def _all_commands() -> dict[str, Callback]:
    cli_main._add_suite_groups()  # the late groups too (each suite's, `import`)
    return dict(_commands(cli_main.app))


COMMANDS = _all_commands()


@dataclasses.dataclass(frozen=True)
class Case:
    command: str
    classes: tuple[type[Checked], ...]
    field: str
    flag: Flag

    def __str__(self) -> str:
        return f"{self.command} {self.flag.name}"


def _cases() -> list[Case]:
    cases = []
    for path, callback in sorted(COMMANDS.items()):
        classes = options_of(callback)
        if classes is None:
            continue
        for cls in classes:
            for field, declared in flags(cls):
                check = declared.check
                if declared.cli and check is not None and check.refused is not None:
                    cases.append(Case(path, classes, field.name, declared))
    return cases


CASES = _cases()


def test_every_command_is_generated_or_known() -> None:
    by_hand = {
        path
        for path, callback in COMMANDS.items()
        if options_of(callback) is None and path not in NO_OPTIONS
    }
    assert not by_hand, (
        f"written by hand: {sorted(by_hand)}; generate them from options classes "
        "(labreplay.cli.generate.command)"
    )
    assert {"store verify", "data fetch", "report", "export", "import inspect-log"} <= {
        path for path, callback in COMMANDS.items() if options_of(callback) is not None
    }


def test_the_enumeration_reaches_every_kind_of_check() -> None:
    kinds = {type(case.flag.check).__name__ for case in CASES}
    assert {"Ints", "Floats", "OneOf", "Rule"} <= kinds
    assert any(case.flag.api for case in CASES), "no flag of both doors was enumerated"


def _harmless(field: dataclasses.Field[Any], cls: type, where: Path) -> str:
    """A value the command line accepts for a required field the case does not test: a path
    in `where` that does not exist (nothing is read before the options are checked)."""
    hint = str(typing.get_type_hints(cls)[field.name])
    return str(where / field.name) if "Path" in hint else "1"


# Optional flags a command's rules across fields need before they reach the tested one
# (configsearch: a task or a dataset), with a value those rules accept.
NEEDED = {"task": "band_gap"}


def _argv(case: Case, where: Path) -> list[str]:
    argv = case.command.split()
    for cls in case.classes:
        for field, declared in flags(cls):
            if field.name == case.field or not declared.cli:
                continue
            if field.name in NEEDED and not declared.required:
                argv += [declared.name, NEEDED[field.name]]
            if not declared.required:
                continue
            value = _harmless(field, cls, where)
            argv += [value] if declared.argument else [declared.name, value]
    if case.flag.argument:
        return [*argv, str(case.flag.check.refused if case.flag.check else "")]
    return [*argv, case.flag.name, str(case.flag.check.refused if case.flag.check else "")]


def _parsed(case: Case) -> object:
    """The refused value as the command line hands it to the class: int and float flags
    parsed as typer parses them, any other kept as the text."""
    refused = case.flag.check.refused if case.flag.check else None
    cls = next(c for c in case.classes if case.field in {f.name for f, _ in flags(c)})
    parsed_as = case.flag.parse_as or typing.get_type_hints(cls)[case.field]
    kinds = set(typing.get_args(parsed_as)) or {parsed_as}
    for kind in (int, float):
        if kind in kinds:
            return kind(str(refused))
    return refused


SpecsOf = Callable[[str], list[Any]]


@pytest.fixture(scope="module")
def specs_of(compiled_campaign: Callable[..., Any], made_once: Any) -> SpecsOf:
    """specs_of(suite) -> a suite's real specs, compiled once per test run."""

    def small_conditions(path: Path) -> None:
        questions = path.with_suffix(".jsonl")
        specs = labreplay.compile("conditions", datasets=["edbo_mitsunobu"], out=questions)
        path.write_bytes(pickle.dumps(specs))

    def small_configsearch(path: Path) -> None:
        from labreplay.suites.configsearch.pipeline import PipelineSettings

        settings = PipelineSettings(n_total=200, n_ood=60)
        specs = labreplay.compile("configsearch", task="band_gap", settings=settings)
        path.write_bytes(pickle.dumps(specs))

    makers = {"conditions": small_conditions, "configsearch": small_configsearch}

    def specs(suite: str) -> list[Any]:
        if suite == "campaign":
            return list(compiled_campaign(record="precursor-genome", seed=0)[1][:1])
        loaded: list[Any] = pickle.loads(
            made_once(f"refusal-specs-{suite}.pickle", makers[suite]).read_bytes()
        )
        return loaded

    return specs


def _api_refusal(case: Case, value: object, specs_of: SpecsOf, where: Path) -> str:
    """The message of the API door's refusal of `value` for the case's option."""
    suite, door = case.command.split()[0], case.command.split()[-1]
    option: dict[str, Any] = {case.field: value}
    specs = specs_of(suite) if door in RUN_DOORS else []
    with pytest.raises(LabreplayError) as refused:
        if door in RUN_DOORS:
            agent = labreplay.suite.get_suite(suite).reference_agents()[0]
            labreplay.run(suite, specs, agent, where / "api.sqlite", **option)
        elif door in COMPILE_DOORS:
            # conditions writes its question file: where, if the options pass
            out = {"out": where / "questions.jsonl"} if suite == "conditions" else {}
            labreplay.compile(suite, **out, **option)
        else:
            pytest.fail(f"{case}: an option of the API (api=True) on a command with no API door")
    return " ".join(str(refused.value).split())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_refused_value_is_refused_by_both_doors_in_the_same_words(
    case: Case,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    specs_of: SpecsOf,
) -> None:
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    monkeypatch.chdir(cli_dir)
    capsys.readouterr()
    code = cli_main.run(_argv(case, cli_dir))
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("labreplay: error: "), err
    assert list(cli_dir.iterdir()) == [], "a refused command line created files"
    if not case.flag.api:
        return
    api_dir = tmp_path / "api"
    api_dir.mkdir()
    said = _api_refusal(case, _parsed(case), specs_of, api_dir)
    assert lines[0] == f"labreplay: error: {said}"
    assert not (api_dir / "api.sqlite").exists()
