"""`labreplay data list | verify | fetch`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from labreplay.cli._common import console, print_json, print_table, progress_bar
from labreplay.cli.generate import command
from labreplay.option_fields import Checked, flag, seconds, urls
from labreplay.run_options import DataDirOptions, OutputOptions

app = typer.Typer(
    help="Datasets: list the manifest, verify checksums, download.", no_args_is_help=True
)


@command(app, "list", OutputOptions)
def list_sources(output: OutputOptions) -> None:
    """List every known source with its license, size and canonical location."""
    from labreplay.records import manifest  # (here: `labreplay --help` needs none of them)

    rows: list[dict[str, Any]] = [
        {
            "name": s.name,
            "folder": s.folder,
            "files": len(s.files),
            "bytes": sum(f.size for f in s.files),
            "license": s.license,
            "canonical_url": s.canonical_url,
            "loader": s.loader,
            "citation": s.citation,
        }
        for s in manifest.sources()
    ]
    if output.json_out:
        print_json(rows)
        return
    table = Table(title="labreplay data sources")
    for col in ("name", "files", "MB", "license", "canonical"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["name"], str(r["files"]), f"{r['bytes'] / 1e6:.1f}", r["license"], r["canonical_url"]
        )
    print_table(table, "name")


@dataclass(frozen=True, kw_only=True)
class VerifyNames(Checked):
    """The sources `data verify` checks."""

    names: list[str] | None = flag(
        None, "Sources to verify (default: all).", argument=True, api=False
    )


@command(app, "verify", VerifyNames, DataDirOptions, OutputOptions)
def verify_cmd(sources: VerifyNames, data: DataDirOptions, output: OutputOptions) -> None:
    """Check every file against the manifest's size and sha256. Exit 1 if any is not ok."""
    from labreplay.records import manifest
    from labreplay.records.sources import resolve_data_dir, verify

    root = resolve_data_dir(data.data_dir)
    chosen = sources.names or manifest.source_names()
    for name in chosen:
        manifest.get_source(name)  # unknown names fail before any work
    total = sum(len(manifest.get_source(n).files) for n in chosen)
    with progress_bar("verifying", total, not output.quiet) as bar:
        results = verify(root, chosen, progress=bar.advance)
    bad = [r for r in results if r.status != "ok"]
    summary: dict[str, dict[str, int]] = {}
    for r in results:
        summary.setdefault(r.source, {"ok": 0, "bad": 0})["ok" if r.status == "ok" else "bad"] += 1
    if output.json_out:
        print_json(
            {
                "data_dir": str(root),
                "files": len(results),
                "bad": [r.__dict__ for r in bad],
                "per_source": summary,
            }
        )
    else:
        table = Table(title=f"verify {root}")
        for col in ("source", "ok", "not ok"):
            table.add_column(col)
        for name, counts in summary.items():
            table.add_row(name, str(counts["ok"]), str(counts["bad"]))
        print_table(table, "source")
        for r in bad[:20]:
            # soft_wrap: a long path stays on one line (greppable); escape: `[` in a file name
            # is not rich markup
            console.print(
                f"[red]{r.status}[/red] {escape(r.path)} {escape(r.detail)}", soft_wrap=True
            )
        console.print(f"{len(results) - len(bad)} of {len(results)} files ok")
    if bad:
        raise typer.Exit(1)


@dataclass(frozen=True, kw_only=True)
class FetchSource(Checked):
    """The source `data fetch` downloads."""

    name: str = flag(help="Source name (see `labreplay data list`).", argument=True, api=False)


@dataclass(frozen=True, kw_only=True)
class FetchArgs(Checked):
    """Where `data fetch` downloads from."""

    mirror: str | None = flag(
        None, "Base URL of a copy with the data directory's layout.", check=urls(), api=False
    )
    timeout: float = flag(60.0, "Per-request timeout in seconds.", check=seconds(), api=False)


@command(app, "fetch", FetchSource, DataDirOptions, FetchArgs, OutputOptions)
def fetch_cmd(
    source_name: FetchSource, data: DataDirOptions, args: FetchArgs, output: OutputOptions
) -> None:
    """Download a source into the data directory, verifying every file's sha256."""
    from labreplay.records import manifest
    from labreplay.records.sources import fetch as fetch_source
    from labreplay.records.sources import resolve_data_dir

    name = source_name.name
    source = manifest.get_source(name)  # an unknown source creates no data directory
    root = resolve_data_dir(data.data_dir, must_exist=False)  # fetch may create a new data dir
    root.mkdir(parents=True, exist_ok=True)
    with progress_bar(f"fetching {name}", len(source.files), not output.quiet) as bar:
        results = fetch_source(
            name, root, mirror=args.mirror, timeout=args.timeout, progress=lambda _e: bar.advance()
        )
    downloaded = sum(1 for r in results if r.detail == "downloaded")
    if output.json_out:
        print_json(
            {"source": name, "data_dir": str(root), "files": len(results), "downloaded": downloaded}
        )
    else:
        console.print(f"{name}: {len(results)} files ok ({downloaded} downloaded) in {root}")
