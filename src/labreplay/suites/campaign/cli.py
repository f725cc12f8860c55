"""`labreplay campaign compile | run | leaderboard`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from labreplay.sdk.cli import (
    command,
    console,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
)
from labreplay.sdk.options import (
    DataOptions,
    ExecutorOptions,
    LlmOptions,
    OutputOptions,
    ServeOptions,
    StoreOptions,
    api_options,
)
from labreplay.suites.campaign.options import (
    CampaignAgentArgs,
    CampaignBoardArgs,
    CampaignCompileArgs,
    CampaignCompileOptions,
    CampaignOptions,
    CampaignRunOptions,
    CampaignSource,
    LiveEmulateOptions,
    LiveServeOptions,
)

if TYPE_CHECKING:
    from labreplay.sdk import Record
    from labreplay.suites.campaign.branches import AssignmentSummary
    from labreplay.suites.campaign.compiler import SpecIndex, TableQC

app = typer.Typer(
    help="SDL-1 budgeted campaigns over recorded reaction maps.", no_args_is_help=True
)


@command(app, "compile", CampaignCompileOptions, CampaignCompileArgs, DataOptions, OutputOptions)
def compile_cmd(
    options: CampaignCompileOptions,
    args: CampaignCompileArgs,
    data: DataOptions,
    output: OutputOptions,
) -> None:
    """Compile a record into frozen, hashed assignment specs and print the partition."""
    import contextlib
    import time

    from labreplay.sdk import atomic_directory
    from labreplay.suites.campaign.api import compile_specs, parse_seeds
    from labreplay.suites.campaign.compiler import write_specs

    record, record_card, protocol = options.record, options.record_card, options.protocol
    data_dir, seeds, out, json_out = data.data_dir, args.seeds, args.out, output.json_out
    seed_list = parse_seeds(seeds) if seeds is not None else [options.seed]
    # Seeds are compiled one at a time and written as they come (memory stays that of one
    # seed), into a temporary sibling of --out that is renamed into place only when every
    # seed has compiled and been written: a failure (bad data, a full disk) leaves --out as
    # it was, with no partial spec set.
    indexes: list[SpecIndex] = []
    records = None
    say = progress_printer(output.quiet)
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        building = stack.enter_context(atomic_directory(out)) if out is not None else None
        for i, s in enumerate(seed_list, 1):
            if say is not None:
                say(f"compile: partition seed {s} ({i} of {len(seed_list)})")
            _, specs, index = compile_specs(
                record=record,
                record_card=record_card,
                protocol=protocol,
                seed=s,
                data_dir=data_dir,
                records=records,
                context_detail=options.context_detail,
                allow_modified_data=data.allow_modified_data,
            )
            if records is None and len(seed_list) > 1:
                records = _records_once(record, record_card, data_dir)
            if say is not None:  # binding and writing a large table's specs take minutes
                say(f"compile: seed {s}: {len(specs)} specs bound, {index['context_size']:,} context "
                    f"rows each ({time.monotonic() - start:.0f} s)" + (", writing" if building else ""))  # fmt: skip
            if building is not None:
                write_specs(building / f"seed{s}" if seeds is not None else building, index, specs)
            indexes.append(index)
            if not json_out:
                _print_index(index["record"], protocol, s, index)
            del specs
    if json_out:
        print_json(indexes if seeds is not None else indexes[0])
        return
    from labreplay.suites.campaign.card_compile import resolve_card

    # The A-Lab rule (by --record or by its card): how far its outcomes agree with the experts'
    if resolve_card(record, record_card).rule == "alab-pipeline":
        from labreplay.suites.campaign.alab_agreement import agreement_lines, ledger_agreement

        for line in agreement_lines(ledger_agreement(data_dir)):
            console.print(line, soft_wrap=True)
    if out is not None:
        total = sum(len(i["assignments"]) for i in indexes)
        where = f"{out}/seed<N>/" if seeds is not None else str(out)
        console.print(f"wrote {total} specs and index.json to {where}")


def _records_once(
    record: str | None, record_card: Path | None, data_dir: Path | None
) -> list[Record]:
    """The records, loaded once for several seeds (a card's table or a built-in loader)."""
    from labreplay.sdk.data import resolve_data_dir
    from labreplay.suites.campaign.api import load_records
    from labreplay.suites.campaign.card_compile import resolve_card
    from labreplay.suites.campaign.table_record import load_table_records

    card = resolve_card(record, record_card)
    root = resolve_data_dir(data_dir)
    return load_records(card.rule, root) if card.builtin else load_table_records(card, root)


def _print_index(record: str, protocol: str, seed: int, index: SpecIndex) -> None:
    if index.get("data_verified") is False:
        console.print(
            f"UNVERIFIED DATA (--allow-modified-data): {', '.join(index['modified_files'] or [])}"
        )
    groups = [elided(g) for g in index["eval_precursors"][:QC_NAMES]]
    if len(index["eval_precursors"]) > QC_NAMES:
        groups.append(f"and {len(index['eval_precursors']) - QC_NAMES} more")
    console.print(
        f"record {record}, protocol {protocol}, seed {seed}: evaluation precursors "
        f"{', '.join(groups)}"
    )
    console.print(
        f"panel {index['panel_size']} experiments; context {index['context_size']}; "
        f"long assignments cover {index['long_experiments']}, short cover "
        f"{index['short_experiments']}"
    )
    if "qc" in index:
        _print_qc(index["qc"])
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
    print_table(table, "assignment")


# Printed lines stay readable when group names are long (a SMILES is often 60-200 characters):
# a name over QC_NAME_WIDTH characters is elided in the middle, at most QC_NAMES are listed.
QC_NAME_WIDTH = 40
QC_NAMES = 24


def elided(name: str, width: int = QC_NAME_WIDTH) -> str:
    """`name`, or its head and tail around '...' in `width` characters."""
    if len(name) <= width:
        return name
    tail = (width - 3) // 3
    return f"{name[: width - 3 - tail]}...{name[-tail:]}"


def _print_qc(qc: TableQC) -> None:
    per = ", ".join(f"{k} {v}" for k, v in qc["rows_per_category"].items())
    console.print(
        f"QC: {qc['decidable_rows']} of {qc['rows']} rows decidable ({per}); panel "
        f"{qc['panel_size']}; {qc['assignments']} assignments"
    )
    if "undecidable" in qc:
        why = ", ".join(f"{k} {v}" for k, v in qc["undecidable"].items())
        console.print(f"QC undecidable rows by reason: {why}", soft_wrap=True)
    if "bins" in qc:
        cuts = " < ".join(f"{c:.4g}" for c in qc["bins"]["below"])
        balance = ", ".join(f"{k} {v}" for k, v in qc["bins"]["context_rows"].items())
        console.print(f"QC quantile bins cut at {cuts} on the context rows; balance: {balance}")
    if "replicates" in qc:
        n = qc["replicates"]
        console.print(
            f"QC replicates: {n['rows']} rows in {n['groups']} groups of identical descriptors, "
            "each group kept in one role"
        )
    for s in qc["scores"]:
        context = s["context_model_score"]
        shown = "n/a (no scorable panel)" if context is None else context
        console.print(
            f"QC {s['assignment']}: base-rate score {s['base_rate_score']}, context-model score "
            f"{shown}"
        )


@command(
    app, "run", CampaignSource, StoreOptions, CampaignAgentArgs, CampaignRunOptions, LlmOptions,
    ExecutorOptions, OutputOptions,
)  # fmt: skip
def run_cmd(
    source: CampaignSource,
    where: StoreOptions,
    args: CampaignAgentArgs,
    run: CampaignRunOptions,
    llm: LlmOptions,
    execution: ExecutorOptions,
    output: OutputOptions,
) -> None:
    """Run an agent with its matched controls on every assignment; resumable."""
    import dataclasses

    from labreplay.sdk import first_in_seeded_order
    from labreplay.sdk.agents import is_llm_agent
    from labreplay.sdk.engine import Store
    from labreplay.suites.campaign.api import load_specs, resolve_campaign_agent, select_specs
    from labreplay.suites.campaign.llm_run import check_max_tokens, with_progress
    from labreplay.suites.campaign.runner import run_campaign

    executor = execution.executor
    if executor == "in-process" and args.max_concurrency > 1:
        executor = "threads"  # the older spelling of a threaded run
    llm.check_executor(executor)
    run.check_executor(executor)
    run.say_without_sandbox()
    agent, seed = args.agent, source.seed
    control_list = run.control_branches(agent)
    selected = select_specs(load_specs(source.specs), source.only)
    chosen = first_in_seeded_order(selected, run.limit, seed, "campaign")
    options = llm.builder_kwargs()
    # Every agent problem is one line, exit 2, before the store exists.
    resolved = resolve_campaign_agent(agent, run.isolate, run.agent_timeout_s, **options)
    is_llm = is_llm_agent(agent)
    if is_llm:
        check_max_tokens(chosen, llm.max_tokens)  # a budget too small is refused before any call
    if args.dry_run:
        from labreplay.suites.campaign.llm_run import print_dry_run

        price = llm.price(agent)
        print_dry_run(chosen, agent, resolved.make, seed, control_list, price, output.json_out)
        return
    workers = args.max_concurrency if args.max_concurrency > 1 else execution.workers
    execution = dataclasses.replace(execution, executor=executor, workers=workers)
    # The executor first: an unreachable scheduler is refused before a store is created.
    with (
        execution.open() as ex,
        Store(where.store) as db,
        progress_bar(
            "campaigns", len(chosen), executor == "in-process" and not output.quiet
        ) as bar,
        with_progress(resolved.make, agent) as watched,
    ):
        if is_llm and executor == "in-process":
            resolved = dataclasses.replace(resolved, make=watched)  # the slow-endpoint line
        # The same options classes and runner as `labreplay.run("campaign", ...)`.
        results = run_campaign(
            chosen, resolved, db, seed=seed, executor=ex,
            # `chosen` is already the seeded --limit subset: the runner does not choose again
            **api_options(dataclasses.replace(run, limit=None, progress=bar.advance), llm),
        )  # fmt: skip
    if output.json_out:
        print_json(results)
    else:
        print_results(agent, results)
        if is_llm:
            from labreplay.suites.campaign.llm_run import print_run_costs

            print_run_costs(console, results, llm.price(agent))
    failed = [r for r in results if r.get("status") == "failed"]
    if failed:
        from labreplay.errors import RunFailedError

        raise RunFailedError(
            f"{len(failed)} of {len(results)} assignments failed (stored as failed, not ranked; "
            f"rerun the same command to resume): {failed[0]['cause']}"
        )


@command(app, "serve", CampaignSource, StoreOptions, CampaignOptions, ServeOptions)
def serve_cmd(
    source: CampaignSource, where: StoreOptions, campaign: CampaignOptions, serve: ServeOptions
) -> None:
    """Serve the campaigns to any harness over MCP (tools observe/act and one per action):
    the run `campaign run` plays, with its options and defaults."""
    from labreplay.sdk.harness import serve_suite_run
    from labreplay.suites.campaign.api import load_specs, select_specs
    from labreplay.suites.campaign.serve import CampaignView

    chosen = select_specs(load_specs(source.specs), source.only)
    serve_suite_run(
        "campaign", chosen, where.store, serve.agent_name, source.seed, model=serve.model,
        view=CampaignView(chosen), transport=serve.transport, port=serve.port,
        **api_options(campaign),
    )  # fmt: skip


live_app = typer.Typer(
    help="Online evaluation (first slice): a live lab as a source of episodes.",
    no_args_is_help=True,
)
app.add_typer(live_app, name="live")


@command(
    live_app, "emulate", CampaignSource, StoreOptions, LiveEmulateOptions, LlmOptions,
    OutputOptions,
)  # fmt: skip
def live_emulate_cmd(
    source: CampaignSource,
    where: StoreOptions,
    live: LiveEmulateOptions,
    llm: LlmOptions,
    output: OutputOptions,
) -> None:
    """Play compiled campaigns as a live lab: after each prior forecast the emulated lab posts
    the experiment's evidence and outcome (delayed, shuffled or failed as asked); each run is
    recorded as a `live` run of the agent's adaptive branch."""
    from labreplay.sdk.agents import close_agent
    from labreplay.sdk.engine import Store
    from labreplay.suites.campaign.api import load_specs, resolve_campaign_agent, select_specs
    from labreplay.suites.campaign.live.emulate import emulate

    chosen = select_specs(load_specs(source.specs), source.only)
    resolved = resolve_campaign_agent(live.agent, **llm.builder_kwargs())
    try:
        with Store(where.store) as db:
            results = emulate(
                chosen, resolved, db, seed=source.seed, delay_s=live.delay_s,
                shuffle=live.shuffle, fail_rate=live.fail_rate, twin=live.twin,
                selections=live.selections,
            )  # fmt: skip
            results = [{**r, "scores": db.scores(str(r["run_id"]))} for r in results]
    finally:
        close_agent(resolved.probe)
    _print_live(results, f"live (emulated lab), agent {live.agent}", output)


TOKEN_VARIABLE = "LABREPLAY_LIVE_TOKEN"


@command(
    live_app, "serve", CampaignSource, StoreOptions, LiveServeOptions, LlmOptions, OutputOptions
)  # fmt: skip
def live_serve_cmd(
    source: CampaignSource,
    where: StoreOptions,
    live: LiveServeOptions,
    llm: LlmOptions,
    output: OutputOptions,
) -> None:
    """Play compiled campaigns against a live lab: the lab polls GET
    /v1/campaigns/SPEC_ID/awaiting and POSTs each experiment's evidence, outcome or deviation
    to /v1/campaigns/SPEC_ID/posts with `Authorization: Bearer $LABREPLAY_LIVE_TOKEN`; each
    run is recorded as a `live` run of the agent's adaptive branch."""
    import os
    import ssl

    from labreplay.sdk.agents import close_agent
    from labreplay.sdk.engine import Store
    from labreplay.sdk.options import bad
    from labreplay.suites.campaign.api import load_specs, resolve_campaign_agent, select_specs
    from labreplay.suites.campaign.live.episodes import play_live
    from labreplay.suites.campaign.live.service import LabService

    token = os.environ.get(TOKEN_VARIABLE, "")
    if len(token) < 16:
        raise bad(TOKEN_VARIABLE, "(hidden)", "must hold the lab's bearer token (16+ characters)")
    if live.host not in ("127.0.0.1", "localhost", "::1") and not live.allow_remote:
        raise bad("--host", live.host, "is not loopback; pass --allow-remote to serve on it")
    chosen = select_specs(load_specs(source.specs), source.only)
    resolved = resolve_campaign_agent(live.agent, **llm.builder_kwargs())
    try:
        tls = None if live.tls_cert is None or live.tls_key is None else (
            live.tls_cert, live.tls_key
        )  # fmt: skip
        try:
            service = LabService(token, live.host, live.port, tls)
        except ssl.SSLError as exc:
            raise bad(
                "--tls-cert", str(live.tls_cert), f"and --tls-key do not load: {exc}"
            ) from None
        except OSError as exc:
            raise bad("--port", live.port, f"cannot be served on {live.host}: {exc}") from None
        with service, Store(where.store) as db:
            print(f"serving the lab's posts on {service.url}", file=sys.stderr)
            marker: dict[str, object] = {"lab": "served"}
            if live.selections != "agent":  # an agent-selected run keeps its identity
                marker["selections"] = live.selections
            results = play_live(
                chosen, resolved, db, service, seed=source.seed, marker=marker,
                wait_s=live.result_wait_s, twin=live.twin, selections=live.selections,
            )  # fmt: skip
            results = [{**r, "scores": db.scores(str(r["run_id"]))} for r in results]
    finally:
        close_agent(resolved.probe)
    _print_live(results, f"live, agent {live.agent}", output)


def _print_live(results: list[dict[str, object]], title: str, output: OutputOptions) -> None:
    if output.json_out:
        print_json(results)
        return
    table = Table(title=title)
    for column in ("run", "branch", "status", "auc", "gain"):
        table.add_column(column)
    for r in results:
        scores = r["scores"]
        assert isinstance(scores, dict)
        auc, gain = (scores.get(k) for k in ("adaptive_auc", "held_out_gain"))
        row = (str(r["run_id"])[:12], str(r["branch"]), str(r["status"]), _fmt(auc), _fmt(gain))
        table.add_row(*row)
    print_table(table, "run")


@command(live_app, "board", StoreOptions, OutputOptions)
def live_board_cmd(where: StoreOptions, output: OutputOptions) -> None:
    """A store's live runs as their outcomes arrive (read only, running runs too): prequential
    log loss, the held-out panel rescored from the panel outcomes the lab has posted (the rest
    pending), adaptive AUC and gain, and against the forecast-only twin where it ran."""
    from labreplay.errors import StoreError
    from labreplay.sdk.engine import Store
    from labreplay.suites.campaign.live.board import board_lines, live_board

    with Store(where.store, readonly=True) as db:
        rows = live_board(db)
    if not rows:
        raise StoreError(f"store {where.store} holds no live campaign runs")
    if output.json_out:
        print_json(rows)
        return
    for line in board_lines(rows):
        console.print(line, markup=False, highlight=False)


def print_results(agent: str, results: Sequence[AssignmentSummary]) -> None:
    from labreplay.suites.campaign.json_values import json_number

    table = Table(title=f"{agent}: {len(results)} assignments")
    columns = ("assignment", "seed", "status", "adaptive AUC", "held-out gain", "selection lift")
    # What the failed-run rule and the board read: the adaptive branch's invalid actions
    # (garbage, exceptions and rejected actions alike, not only LLM reply failures), the
    # checkpoint fallbacks of every branch, the failed share of its model calls, the cause.
    for col in (*columns, "evidence lift", "failed calls", "fallbacks", "invalid actions"):
        table.add_column(col)
    table.add_column("cause")
    for r in results:
        share = r.get("failed_call_share")
        branches = r.get("branches", {})
        adaptive = branches.get("adaptive", {})
        fallbacks = sum(
            int(json_number(b.get("checkpoint_fallbacks") or 0)) for b in branches.values()
        )
        invalid = int(json_number(adaptive.get("invalid_actions") or 0))
        table.add_row(
            r["assignment"]["id"],
            str(r.get("partition_seed", "-")),
            str(r.get("status", "complete")),
            f"{r['adaptive_auc']:.3f}",
            f"{r['held_out_gain']:+.3f}",
            _fmt(r.get("selection_lift")),
            _fmt(r.get("evidence_lift")),
            "-" if not share else f"{share:.0%}",
            str(fallbacks),
            str(invalid),
            str(r.get("cause_kind") or "-"),
        )
    print_table(table, "assignment")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


@command(app, "leaderboard", StoreOptions, CampaignBoardArgs, OutputOptions)
def leaderboard_cmd(where: StoreOptions, args: CampaignBoardArgs, output: OutputOptions) -> None:
    """The paper's board (long assignments) and the short board, with paired bootstrap 95%
    intervals, selection value, headroom and a power line; read only from the store."""
    from labreplay.errors import StoreError
    from labreplay.sdk.engine import Store
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.campaign.board_text import print_board
    from labreplay.suites.campaign.health import add_call_health
    from labreplay.suites.campaign.leaderboard import board_runs, leaderboard

    store, specs, public_key, fmt = where.store, args.specs, args.public_key, args.format
    verified, json_out = args.verified, output.json_out
    hashes = [s.spec_hash for s in load_specs(specs)] if specs is not None else None
    from labreplay.sdk.engine import load_public_key, require_verified

    key = load_public_key(public_key) if public_key is not None else None  # before the store
    marked: dict[str, list[str]] = {}
    with Store(store, readonly=True) as db:
        if verified or key is not None:
            marked = require_verified(db, key).unverifiable_runs
        if not db.runs(suite="campaign"):
            suites = sorted({r.suite for r in db.runs()})
            held = f" (it holds {', '.join(suites)} runs)" if suites else ""
            raise StoreError(f"store {store} holds no campaign runs{held}")
        runs, _ = board_runs(db, hashes)  # the runs the board reads, for health and costs
        board = leaderboard(
            db,
            spec_hashes=hashes,
            difference=args.difference,
            require_isolated=args.require_isolated,
        )
    add_call_health(board, runs)
    if verified or key is not None:
        ids = {r.run_id for r in runs}
        board["unverifiable"] = {r: notes for r, notes in marked.items() if r in ids}
    from labreplay.sdk.agents import parse_price
    from labreplay.suites.campaign.costs import add_costs, cost_lines

    add_costs(board, runs, parse_price(args.price_per_mtok))
    if json_out:
        print_json(board)
        return
    from labreplay.sdk.cli import reading_console

    out = reading_console(console)  # 80 columns when not a terminal (a file, a pipe)
    if fmt is not None:
        from labreplay.suites.campaign.board_export import render

        sys.stdout.write(render(board, fmt, columns=args.columns, width=out.width))
        return
    print_board(out, board, columns=args.columns)
    for line in cost_lines(board):
        out.print(line)
    if board.get("not_isolated"):
        out.print(
            "not ranked (--require-isolated; ran in-process): " + ", ".join(board["not_isolated"])
        )
    if board["live_left_out"]:
        out.print(
            f"left out: {board['live_left_out']} live run(s) (not ranked: no matched random "
            "controls; `campaign live board` scores them)"
        )
    if board.get("unverifiable"):
        first = next(iter(board["unverifiable"].items()))
        out.print(
            f"marked: {len(board['unverifiable'])} run(s) hold figures store verify cannot "
            f"re-derive (first: {first[0]}: {first[1][0]})",
            markup=False,
            highlight=False,
        )
    if board.get("failed"):
        causes = board.get("failed_causes") or {}
        named = [f"{s} ({causes[s]})" if causes.get(s) else s for s in board["failed"]]
        out.print(f"not ranked (runs failed: the agent could not act): {', '.join(named)}")
    for table in board["tables"].values():
        for r in table["rows"]:
            if r.get("failed_call_share"):
                out.print(f"{r['system']}: {r['failed_call_share']:.1%} of model calls failed")
