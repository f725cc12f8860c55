"""`labreplay campaign compile | run | leaderboard`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from labreplay.cli._common import DataDirOption, JsonOption, console, print_json, progress_bar

app = typer.Typer(
    help="SDL-1 budgeted campaigns over recorded reaction maps.", no_args_is_help=True
)


@app.command("compile")
def compile_cmd(
    record: str = typer.Option("precursor-genome", help="precursor-genome | alab-pipeline"),
    protocol: str = typer.Option("sdl1", help="Protocol family."),
    seed: int = typer.Option(0, help="Seed of the frozen partition."),
    out: Path | None = typer.Option(None, "--out", help="Write specs + index.json here."),
    context_detail: str = typer.Option("summary", help="summary | rows (context in the state)."),
    data_dir: Path | None = DataDirOption,
    json_out: bool = JsonOption,
) -> None:
    """Compile a record into frozen, hashed assignment specs and print the partition."""
    from labreplay.suites.campaign.api import compile_specs
    from labreplay.suites.campaign.compiler import write_specs

    _, specs, index = compile_specs(
        record=record,
        protocol=protocol,
        seed=seed,
        data_dir=data_dir,
        context_detail=context_detail,
    )
    if out is not None:
        write_specs(out, index, specs)
    if json_out:
        print_json(index)
        return
    console.print(
        f"record {record}, protocol {protocol}, seed {seed}: evaluation precursors "
        f"{', '.join(index['eval_precursors'])}"
    )
    console.print(
        f"panel {index['panel_size']} experiments; context {index['context_size']}; "
        f"long assignments cover {index['long_experiments']}, short cover "
        f"{index['short_experiments']}"
    )
    table = Table()
    for col in ("assignment", "candidates", "queries", "budgets (exp/evid/rev)", "spec_hash"):
        table.add_column(col)
    for a in index["assignments"]:
        b = a["budgets"]
        table.add_row(
            a["id"],
            str(a["candidates"]),
            str(a["queries"]),
            f"{b['experiments']}/{b['evidence']}/{b['reviews']}",
            a["spec_hash"],
        )
    console.print(table)
    if out is not None:
        console.print(f"wrote {len(specs)} specs and index.json to {out}")


@app.command("run")
def run_cmd(
    specs: Path = typer.Option(..., "--specs", help="Directory written by `campaign compile`."),
    agent: str = typer.Option("bayes", help="random | bayes | no-evidence | openai:MODEL"),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    controls: str = typer.Option("random,no-evidence", help="Comma list of control branches."),
    seed: int = typer.Option(0, help="Run seed (agent and control randomness)."),
    only: str | None = typer.Option(None, help="Comma list of assignment ids (default: all)."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint."),
    temperature: float | None = typer.Option(None, help="LLM sampling temperature."),
    llm_seed: int | None = typer.Option(None, "--llm-seed", help="LLM sampling seed."),
    max_tokens: int | None = typer.Option(None, help="LLM max tokens per call."),
    timeout: float | None = typer.Option(None, help="LLM per-request timeout (s)."),
    structured: str | None = typer.Option(
        None, help="LLM structured output: auto | json_schema | json_object | off."
    ),
    executor: str = typer.Option("in-process", help="in-process | dask"),
    max_concurrency: int = typer.Option(
        1, "--max-concurrency", help="Campaigns in flight at once (threads; for LLM agents)."
    ),
    scheduler: str | None = typer.Option(
        None, "--scheduler", help="Dask scheduler address (default: a LocalCluster)."
    ),
    json_out: bool = JsonOption,
) -> None:
    """Run an agent with its matched controls on every assignment; resumable."""
    from labreplay.errors import LabreplayError
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.api import agent_factory, load_specs, run_assignment

    options: dict[str, Any] = {
        k: v
        for k, v in (
            ("base_url", base_url),
            ("temperature", temperature),
            ("seed", llm_seed),
            ("max_tokens", max_tokens),
            ("timeout_s", timeout),
            ("structured", structured),
        )
        if v is not None
    }
    make = agent_factory(agent, **options)
    chosen = load_specs(specs)
    if only:
        wanted = set(only.split(","))
        chosen = [s for s in chosen if s.body["assignment"]["id"] in wanted]
    control_list = tuple(c for c in controls.split(",") if c)
    if executor not in ("in-process", "dask"):
        raise LabreplayError(f"--executor must be in-process or dask, got {executor!r}")
    if executor == "dask":
        from labreplay.execute import DaskExecutor
        from labreplay.suites.campaign.execute import run_assignments

        cluster = None
        if scheduler is None:  # a local cluster of worker processes, one per core
            from dask.distributed import LocalCluster

            cluster = LocalCluster(dashboard_address=None, threads_per_worker=1)  # type: ignore[no-untyped-call]
        try:
            with Store(store) as db, DaskExecutor(scheduler, cluster=cluster) as ex:
                results = run_assignments(chosen, agent, db, seed, control_list, ex, options)
        finally:
            if cluster is not None:
                cluster.close()
    elif max_concurrency > 1:
        from labreplay.execute import ThreadedExecutor
        from labreplay.suites.campaign.execute import run_assignments

        with Store(store) as db, ThreadedExecutor(max_concurrency) as threads:
            results = run_assignments(chosen, agent, db, seed, control_list, threads, options)
    else:
        results = []
        with Store(store) as db, progress_bar("campaigns", len(chosen)) as bar:
            for spec in chosen:
                results.append(run_assignment(spec, make, db, seed, control_list))
                bar.advance()
    if json_out:
        print_json(results)
        return
    table = Table(title=f"{agent}: {len(results)} assignments")
    for col in ("assignment", "adaptive AUC", "held-out gain", "selection lift", "evidence lift"):
        table.add_column(col)
    for r in results:
        table.add_row(
            r["assignment"]["id"],
            f"{r['adaptive_auc']:.3f}",
            f"{r['held_out_gain']:+.3f}",
            _fmt(r.get("selection_lift")),
            _fmt(r.get("evidence_lift")),
        )
    console.print(table)


def _fmt_x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


@app.command("leaderboard")
def leaderboard_cmd(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    json_out: bool = JsonOption,
) -> None:
    """Leaderboard with paired bootstrap 95% intervals, read only from the store."""
    from labreplay.errors import StoreError
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.leaderboard import leaderboard, reference_rows

    if not store.is_file():
        raise StoreError(f"store {store} does not exist")
    with Store(store) as db:
        board = leaderboard(db)
        board["references"] = reference_rows(db)
    if json_out:
        print_json(board)
        return
    print_leaderboard(board)


def print_leaderboard(board: dict[str, Any]) -> None:
    table = Table(
        title=f"campaign leaderboard ({len(board['assignments'])} assignments, "
        "equal weight; 95% paired bootstrap)"
    )
    for col in (
        "#",
        "system",
        "adaptive AUC",
        "held-out gain",
        "selection lift [95% CI]",
        "evidence lift [95% CI]",
        "over-claim",
        "invalid",
    ):
        table.add_column(col)

    def ci(v: dict[str, float] | None) -> str:
        return "-" if v is None else f"{v['mean']:+.3f} [{v['lo']:+.3f}, {v['hi']:+.3f}]"

    for r in board["rows"]:
        table.add_row(
            str(r["rank"]),
            r["system"],
            f"{r['adaptive_auc']:.3f}",
            f"{r['held_out_gain']:+.3f}",
            ci(r["selection_lift"]),
            ci(r["evidence_lift"]),
            "-" if r["overclaim_rate"] is None else f"{r['overclaim_rate']:.2f}",
            f"{r['invalid_actions']:.0f}",
        )
    for ref in board.get("references", []):
        table.add_row(
            "ref", ref["system"], f"{ref['adaptive_auc']:.3f}", "0 (flat)", "-", "-", "-", "-"
        )
    for c in board["ceiling"]:
        table.add_row(
            "ceil",
            c["system"] + " (sees outcomes)",
            f"{c['adaptive_auc']:.3f}",
            f"{c['held_out_gain']:+.3f}",
            "-",
            "-",
            "-",
            "-",
        )
    console.print(table)
    for r in board["rows"]:
        est = r["acceleration_estimable"]
        m = r["movements"]
        console.print(
            f"{r['system']}: acceleration first passage {_fmt_x(r['acceleration_first'])} "
            f"({est['first']} of {r['assignments']} estimable), sustained "
            f"{_fmt_x(r['acceleration_sustained'])} ({est['sustained']}); local vs held-out "
            f"movements same {m['same']} / opposite {m['opposite']} / zero {m['zero']}; "
            f"early stops {r['stops']['early_stops']}; LOAO ranks "
            f"{board['loao_ranks'].get(r['system'], [])}"
        )
    if board["incomplete"]:
        console.print(f"not ranked (incomplete branches): {', '.join(board['incomplete'])}")
