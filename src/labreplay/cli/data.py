"""`labreplay data list | verify | fetch`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from labreplay.cli._common import (
    DataDirOption,
    JsonOption,
    console,
    print_json,
    print_table,
    progress_bar,
    timeout_check,
    url_check,
)

app = typer.Typer(
    help="Datasets: list the manifest, verify checksums, download.", no_args_is_help=True
)


@app.command("list")
def list_sources(json_out: bool = JsonOption) -> None:
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
    if json_out:
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


@app.command("verify")
def verify_cmd(
    names: list[str] = typer.Argument(None, help="Sources to verify (default: all)."),
    data_dir: Path | None = DataDirOption,
    json_out: bool = JsonOption,
) -> None:
    """Check every file against the manifest's size and sha256. Exit 1 if any is not ok."""
    from labreplay.records import manifest
    from labreplay.records.sources import resolve_data_dir, verify

    root = resolve_data_dir(data_dir)
    chosen = names or manifest.source_names()
    for name in chosen:
        manifest.get_source(name)  # unknown names fail before any work
    total = sum(len(manifest.get_source(n).files) for n in chosen)
    with progress_bar("verifying", total) as bar:
        results = verify(root, chosen, progress=bar.advance)
    bad = [r for r in results if r.status != "ok"]
    summary: dict[str, dict[str, int]] = {}
    for r in results:
        summary.setdefault(r.source, {"ok": 0, "bad": 0})["ok" if r.status == "ok" else "bad"] += 1
    if json_out:
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


@app.command("fetch")
def fetch_cmd(
    name: str = typer.Argument(..., help="Source name (see `labreplay data list`)."),
    data_dir: Path | None = DataDirOption,
    mirror: str | None = typer.Option(
        None,
        "--mirror",
        help="Base URL of a copy with the data directory's layout.",
        callback=url_check("--mirror"),
    ),
    timeout: float = typer.Option(
        60.0, help="Per-request timeout in seconds.", callback=timeout_check("--timeout")
    ),
    json_out: bool = JsonOption,
) -> None:
    """Download a source into the data directory, verifying every file's sha256."""
    from labreplay.records import manifest
    from labreplay.records.sources import fetch as fetch_source
    from labreplay.records.sources import resolve_data_dir

    source = manifest.get_source(name)  # an unknown source creates no data directory
    root = resolve_data_dir(data_dir, must_exist=False)  # fetch may create a new data dir
    root.mkdir(parents=True, exist_ok=True)
    with progress_bar(f"fetching {name}", len(source.files)) as bar:
        results = fetch_source(
            name, root, mirror=mirror, timeout=timeout, progress=lambda _e: bar.advance()
        )
    downloaded = sum(1 for r in results if r.detail == "downloaded")
    if json_out:
        print_json(
            {"source": name, "data_dir": str(root), "files": len(results), "downloaded": downloaded}
        )
    else:
        console.print(f"{name}: {len(results)} files ok ({downloaded} downloaded) in {root}")
