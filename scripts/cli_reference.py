"""Write the CLI reference (docs/cli.md) from the typer app itself.

The docs build calls `render()` through the MkDocs hook in `scripts/mkdocs_hooks.py`, so the
page is generated at build time and never goes stale; `python scripts/cli_reference.py --out
FILE` writes the same page to a file to read it without building the site.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import typer


class _Param(Protocol):
    name: str | None
    opts: list[str]
    secondary_opts: list[str]
    required: bool
    default: object
    param_type_name: str


class _Command(Protocol):
    name: str | None
    help: str | None
    hidden: bool
    params: list[_Param]


def _commands(command: _Command, path: list[str]) -> Iterator[tuple[list[str], _Command]]:
    """Every command of the app, depth first, sub-commands in name order."""
    yield path, command
    children: dict[str, _Command] = getattr(command, "commands", {})
    for name in sorted(children):
        child = children[name]
        if not child.hidden:
            yield from _commands(child, [*path, name])


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(param: _Param) -> str:
    value = param.default
    if param.required:
        return "required"
    if value is None or value == () or value == "" or callable(value):
        return ""
    return f"`{value}`"


def _section(path: list[str], command: _Command) -> str:
    depth = min(len(path) + 1, 6)
    lines = [f"{'#' * depth} `{' '.join(path)}`", ""]
    if command.help:
        lines += [command.help.strip().split("\f")[0].strip(), ""]
    options = [p for p in command.params if p.name != "help"]
    if options:
        lines += ["| argument / option | default | help |", "| --- | --- | --- |"]
        for param in options:
            names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
            if param.param_type_name == "argument":
                names = f"`{(param.name or '').upper()}` (argument)"
            help_text = _cell(str(getattr(param, "help", "") or ""))
            lines.append(f"| {names} | {_default(param)} | {help_text} |")
        lines.append("")
    return "\n".join(lines)


def render() -> str:
    """The whole CLI reference page as Markdown."""
    from labreplay.cli import main as cli_main

    cli_main._add_suite_groups()  # the suites' groups are mounted on first run
    root: _Command = typer.main.get_command(cli_main.app)
    head = [
        "# CLI reference",
        "",
        "Generated from the `labreplay` typer app when the docs are built",
        "(`scripts/cli_reference.py`); `labreplay COMMAND --help` prints the same per command.",
        "",
    ]
    body = [_section(path, command) for path, command in _commands(root, ["labreplay"])]
    return "\n".join(head + body)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="Markdown file to write.")
    Path(parser.parse_args().out).write_text(render(), encoding="utf-8")
