"""Typer commands generated from options classes (`labreplay.option_fields`).

    @command(app, "run", RunOptions, LlmOptions)
    def run_cmd(run: RunOptions, llm: LlmOptions) -> None:
        "Run an agent on every spec; resumable."

The command's flags are the classes' flagged fields, in order: name, help and default come
from the field, so a suite declares an option once and writes no `typer.Option`. The body gets
one instance of each class, built (and so checked) from the parsed flags: a refusal is the
class's own, the same as the Python API's, and the entry point prints it in one line (exit 2).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from labreplay.option_fields import Checked, flags

BodyT = TypeVar("BodyT", bound=Callable[..., None])


def parameters(*classes: type[Checked]) -> list[inspect.Parameter]:
    """The typer parameters of these classes' command-line fields, in order."""
    out: list[inspect.Parameter] = []
    seen: set[str] = set()
    for cls in classes:
        for field, declared in flags(cls):
            if not declared.cli:
                continue
            if field.name in seen:
                raise TypeError(f"{cls.__name__}.{field.name} is declared twice on one command")
            seen.add(field.name)
            default = ... if declared.required else field.default
            if declared.argument:
                option = typer.Argument(
                    default, help=declared.help, show_default=declared.show_default
                )
            else:
                option = typer.Option(
                    default,
                    declared.name,
                    *declared.aliases,
                    help=declared.help,
                    show_default=declared.show_default,
                )
            annotation = declared.parse_as or typing.get_type_hints(cls)[field.name]
            out.append(
                inspect.Parameter(
                    field.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=option,
                    annotation=annotation,
                )
            )
    return out


def build(cls: type[Checked], parsed: dict[str, Any]) -> Checked:
    """An instance of `cls` from the parsed flags (its API-only fields keep their defaults)."""
    return cls(**{f.name: parsed[f.name] for f, d in flags(cls) if d.cli})


def command(
    app: typer.Typer, name: str, *classes: type[Checked], hidden: bool = False
) -> Callable[[BodyT], BodyT]:
    """Register `body(*instances)` as `app`'s command `name`, its flags generated from
    `classes`; the body's docstring is the command's help."""

    def register(body: BodyT) -> BodyT:
        def cmd(**parsed: Any) -> None:
            body(*(build(cls, parsed) for cls in classes))

        cmd.__signature__ = inspect.Signature(parameters(*classes))  # type: ignore[attr-defined]
        cmd.__doc__ = body.__doc__
        cmd.__name__ = body.__name__
        cmd.options_classes = classes  # type: ignore[attr-defined]
        app.command(name, hidden=hidden)(cmd)
        return body

    return register


def options_of(callback: Callable[..., object] | None) -> tuple[type[Checked], ...] | None:
    """The options classes a command was generated from (None: a command written by hand);
    typer's wrapper of the callback keeps the attribute."""
    classes = getattr(callback, "options_classes", None)
    return classes if isinstance(classes, tuple) else None


__all__ = ["build", "command", "options_of", "parameters"]
