"""`labreplay campaign compile | run | leaderboard`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from labreplay.sdk.cli import (
    AgentTimeoutOption,
    ApiKeyEnvOption,
    BaseUrlOption,
    DataDirOption,
    DryRunOption,
    ExecutorOption,
    IsolateOption,
    JsonOption,
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
    QuietOption,
    ReasoningEffortOption,
    ReasoningTokensOption,
    RequireSandboxOption,
    SchedulerOption,
    TemperatureOption,
    TimeoutOption,
    TokenParamOption,
    agent_options,
    check_isolation,
    choice,
    console,
    finite_float_check,
    int_range,
    out_dir_check,
    print_json,
    print_table,
    progress_bar,
    progress_printer,
    seed_check,
)

if TYPE_CHECKING:
    from labreplay.sdk import Record
    from labreplay.suites.campaign.branches import AssignmentSummary
    from labreplay.suites.campaign.compiler import SpecIndex, TableQC

app = typer.Typer(
    help="SDL-1 budgeted campaigns over recorded reaction maps.", no_args_is_help=True
)


@app.command("compile")
def compile_cmd(
    record: str | None = typer.Option(
        None, help="A built-in record: precursor-genome (default) | alab-pipeline."
    ),
    record_card: Path | None = typer.Option(
        None,
        "--record-card",
        help="A record card (NAME.card.toml or NAME.card.yaml, docs/record-cards.md) describing "
        "your own table of experiments.",
    ),
    protocol: str = typer.Option("sdl1", help="Protocol family."),
    seed: int = typer.Option(0, help="Seed of the frozen partition.", callback=seed_check()),
    seeds: str | None = typer.Option(
        None, "--seeds", help="Several partition seeds, e.g. 0-4: one seed<N>/ folder each."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Write specs + index.json here.", callback=out_dir_check()
    ),
    context_detail: str = typer.Option(
        "summary",
        help="summary | rows (context in the state).",
        callback=choice("--context-detail", ("summary", "rows")),
    ),
    allow_modified_data: bool = typer.Option(
        False,
        "--allow-modified-data",
        help="Compile from files whose sha256 differs from the manifest; the specs record the "
        "real hashes and are marked 'unverified data' on every board.",
    ),
    data_dir: Path | None = DataDirOption,
    json_out: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Compile a record into frozen, hashed assignment specs and print the partition."""
    import contextlib

    from labreplay.sdk import atomic_directory
    from labreplay.suites.campaign.api import compile_specs, parse_seeds
    from labreplay.suites.campaign.compiler import write_specs

    seed_list = parse_seeds(seeds) if seeds is not None else [seed]
    # Seeds are compiled one at a time and written as they come (memory stays that of one
    # seed), into a temporary sibling of --out that is renamed into place only when every
    # seed has compiled and been written: a failure (bad data, a full disk) leaves --out as
    # it was, with no partial spec set.
    indexes: list[SpecIndex] = []
    records = None
    say = progress_printer(quiet)
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
                context_detail=context_detail,
                allow_modified_data=allow_modified_data,
            )
            if records is None and len(seed_list) > 1:
                records = _records_once(record, record_card, data_dir)
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
    console.print(
        f"record {record}, protocol {protocol}, seed {seed}: evaluation precursors "
        f"{', '.join(index['eval_precursors'])}"
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


def _print_qc(qc: TableQC) -> None:
    per = ", ".join(f"{k} {v}" for k, v in qc["rows_per_category"].items())
    console.print(
        f"QC: {qc['decidable_rows']} of {qc['rows']} rows decidable ({per}); panel "
        f"{qc['panel_size']}; {qc['assignments']} assignments"
    )
    for s in qc["scores"]:
        context = s["context_model_score"]
        shown = "n/a (no scorable panel)" if context is None else context
        console.print(
            f"QC {s['assignment']}: base-rate score {s['base_rate_score']}, context-model score "
            f"{shown}"
        )


@app.command("run")
def run_cmd(
    specs: Path = typer.Option(..., "--specs", help="Directory written by `campaign compile`."),
    agent: str = typer.Option(
        "bayes",
        help="random | bayes | no-evidence | openai:MODEL | a registered agent | MODULE:ATTR "
        "(your class or factory, importable from PYTHONPATH or the working directory).",
    ),
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    controls: str = typer.Option(
        "random,no-evidence",
        help="Comma list of control branches (random, no-evidence), or none.",
    ),
    seed: int = typer.Option(
        0, help="Run seed (agent and control randomness).", callback=seed_check()
    ),
    only: str | None = typer.Option(None, help="Comma list of assignment ids (default: all)."),
    random_replicates: int | None = typer.Option(
        None,
        "--random-replicates",
        help="Schedule-matched random replicates per assignment (default 3; 1 for LLM agents, "
        "whose every replicate costs a full campaign of calls).",
        callback=int_range("--random-replicates", 1, 50),
    ),
    base_url: str | None = BaseUrlOption,
    provider: str | None = ProviderOption,
    api_key_env: str | None = ApiKeyEnvOption,
    temperature: float | None = TemperatureOption,
    llm_seed: int | None = LlmSeedOption,
    max_tokens: int | None = MaxTokensOption,
    timeout: float | None = TimeoutOption,
    max_retries: int | None = MaxRetriesOption,
    token_param: str | None = TokenParamOption,
    reasoning_effort: str | None = ReasoningEffortOption,
    reasoning_tokens: int | None = ReasoningTokensOption,
    max_retry_wait: float | None = MaxRetryWaitOption,
    max_call_time: float | None = MaxCallTimeOption,
    max_calls: int | None = MaxCallsOption,
    max_tokens_total: int | None = MaxTokensTotalOption,
    max_time: float | None = MaxTimeOption,
    price_per_mtok: str | None = PriceOption,
    prices: str | None = PricesOption,
    max_cost: float | None = MaxCostOption,
    max_total_cost: float | None = MaxTotalCostOption,
    dry_run: bool = DryRunOption,
    limit: int | None = LimitOption,
    structured: str | None = typer.Option(
        None,
        help="LLM structured output: auto | json_schema | json_object | off.",
        callback=choice("--structured", ("auto", "json_schema", "json_object", "off")),
    ),
    executor: str = ExecutorOption,
    max_concurrency: int = typer.Option(
        1,
        "--max-concurrency",
        help="Campaigns in flight at once (threads; for LLM agents).",
        callback=int_range("--max-concurrency", 1, 256),
    ),
    scheduler: str | None = SchedulerOption,
    isolate: bool = IsolateOption,
    agent_timeout: float | None = AgentTimeoutOption,
    require_sandbox: bool = RequireSandboxOption,
    json_out: bool = JsonOption,
) -> None:
    """Run an agent with its matched controls on every assignment; resumable."""
    import dataclasses

    from labreplay.sdk import first_in_seeded_order
    from labreplay.sdk.agents import run_price
    from labreplay.sdk.engine import Store, open_executor
    from labreplay.suites.campaign.api import load_specs, resolve_campaign_agent, select_specs
    from labreplay.suites.campaign.options import CampaignRunOptions
    from labreplay.suites.campaign.runner import run_campaign

    price = run_price(agent, price_per_mtok, prices)
    options = agent_options(
        base_url=base_url,
        api_key_env=api_key_env,
        temperature=temperature,
        llm_seed=llm_seed,
        max_tokens=max_tokens,
        timeout=timeout,
        max_retries=max_retries,
        max_calls=max_calls,
        max_tokens_total=max_tokens_total,
        max_time=max_time,
        prices=prices,
        max_cost=max_cost,
        max_total_cost=max_total_cost,
        provider=provider,
        token_param=token_param,
        reasoning_effort=reasoning_effort,
        reasoning_tokens=reasoning_tokens,
        max_retry_wait=max_retry_wait,
        max_call_time=max_call_time,
    )
    if structured is not None:
        options["structured"] = structured
    if max_total_cost is not None and executor == "dask":
        from labreplay.errors import LabreplayError

        # Its spend is counted in this process; dask workers are other processes.
        raise LabreplayError(
            "--max-total-cost counts the spend of this process: use --executor in-process or "
            "threads with it, not dask"
        )
    if isolate and (executor != "in-process" or max_concurrency > 1):
        from labreplay.errors import LabreplayError

        raise LabreplayError("--isolate runs with --executor in-process (one child per agent)")
    check_isolation(isolate, require_sandbox)
    # The same options class, defaults and runner as `labreplay.run("campaign", ...)`.
    run_options = CampaignRunOptions(
        controls=controls,
        random_replicates=random_replicates,
        isolate=isolate,
        agent_timeout_s=agent_timeout,
    )
    run_options.check()
    control_list = run_options.control_branches(agent)
    chosen = first_in_seeded_order(select_specs(load_specs(specs), only), limit, seed, "campaign")
    # Every agent problem is one line, exit 2, before the store exists.
    resolved = resolve_campaign_agent(agent, isolate, agent_timeout, **options)
    from labreplay.sdk.agents import is_llm_agent

    is_llm = is_llm_agent(agent)
    if is_llm:
        from labreplay.suites.campaign.llm_run import check_max_tokens

        check_max_tokens(chosen, max_tokens)  # a budget too small is refused before any call
    if dry_run:
        from labreplay.suites.campaign.llm_run import print_dry_run

        print_dry_run(chosen, agent, resolved.make, seed, control_list, price, json_out)
        return
    if executor == "in-process" and max_concurrency > 1:
        executor = "threads"  # the older spelling of a threaded run
    workers = max_concurrency if max_concurrency > 1 else None
    # The executor first: an unreachable scheduler is refused before a store is created.
    from labreplay.suites.campaign.llm_run import with_progress

    with (
        open_executor(executor, scheduler, workers) as ex,
        Store(store) as db,
        progress_bar("campaigns", len(chosen), executor == "in-process") as bar,
        with_progress(resolved.make, agent) as watched,
    ):
        if is_llm and executor == "in-process":
            resolved = dataclasses.replace(resolved, make=watched)  # the slow-endpoint line
        api_options = {**dataclasses.asdict(run_options), **options, "progress": bar.advance}
        if "seed" in api_options:  # the LLM sampling seed; `seed` is the run seed
            api_options["llm_seed"] = api_options.pop("seed")
        results = run_campaign(chosen, resolved, db, seed=seed, executor=ex, **api_options)
    if json_out:
        print_json(results)
    else:
        print_results(agent, results)
        if is_llm:
            from labreplay.suites.campaign.llm_run import print_run_costs

            print_run_costs(console, results, price)
    failed = [r for r in results if r.get("status") == "failed"]
    if failed:
        from labreplay.errors import RunFailedError

        raise RunFailedError(
            f"{len(failed)} of {len(results)} assignments failed (stored as failed, not ranked; "
            f"rerun the same command to resume): {failed[0]['cause']}"
        )


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


@app.command("leaderboard")
def leaderboard_cmd(
    store: Path = typer.Option(..., "--store", help="Results store (SQLite file)."),
    specs: Path | None = typer.Option(
        None,
        "--specs",
        help="Board only these specs (a `campaign compile` directory): selects one protocol "
        "when the store holds several under the same spec ids.",
    ),
    difference: float = typer.Option(
        0.01,
        "--difference",
        help="AUC difference for the power line's 'assignments needed'.",
        callback=finite_float_check("--difference", lo=0, hi=2, lo_open=True),
    ),
    price_per_mtok: str | None = PriceOption,
    fmt: str | None = typer.Option(
        None,
        "--format",
        help="Print the paper's board as markdown | latex | csv (with intervals and the power "
        "range) instead of the terminal tables.",
        callback=choice("--format", ("markdown", "latex", "csv")),
    ),
    require_isolated: bool = typer.Option(
        False,
        "--require-isolated",
        help="Rank only agents kept from the evaluator (--isolate runs, LLM agents); in-process "
        "runs are left out and listed.",
    ),
    verified: bool = typer.Option(
        False,
        "--verified",
        help="Run `store verify` first: refuse to rank a store it finds any problem in (exit "
        "1), and mark the runs whose figures it cannot re-derive.",
    ),
    public_key: Path | None = typer.Option(
        None,
        "--public-key",
        help="As --verified, and every run must carry a valid signature by this Ed25519 "
        "public key (`labreplay store sign`).",
    ),
    json_out: bool = JsonOption,
) -> None:
    """The paper's board (long assignments) and the short board, with paired bootstrap 95%
    intervals, selection value, headroom and a power line; read only from the store."""
    from labreplay.errors import SpecError, StoreError
    from labreplay.sdk.engine import Store
    from labreplay.suites.campaign.api import load_specs
    from labreplay.suites.campaign.board_text import print_board
    from labreplay.suites.campaign.health import add_call_health
    from labreplay.suites.campaign.leaderboard import leaderboard

    if not difference > 0:
        raise SpecError(f"--difference must be positive, got {difference!r}")
    hashes = [s.spec_hash for s in load_specs(specs)] if specs is not None else None
    from labreplay.sdk.engine import load_public_key, require_verified

    key = load_public_key(public_key) if public_key is not None else None  # before the store
    marked: dict[str, list[str]] = {}
    with Store(store, readonly=True) as db:
        if verified or key is not None:
            marked = require_verified(db, key).unverifiable_runs
        runs = db.runs(suite="campaign")
        if not runs:
            suites = sorted({r.suite for r in db.runs()})
            held = f" (it holds {', '.join(suites)} runs)" if suites else ""
            raise StoreError(f"store {store} holds no campaign runs{held}")
        board = leaderboard(
            db, spec_hashes=hashes, difference=difference, require_isolated=require_isolated
        )
    add_call_health(board, runs)
    if verified or key is not None:
        ids = {r.run_id for r in runs}
        board["unverifiable"] = {r: notes for r, notes in marked.items() if r in ids}
    from labreplay.sdk.agents import parse_price
    from labreplay.suites.campaign.costs import add_costs, cost_lines

    add_costs(board, runs, parse_price(price_per_mtok))
    if json_out:
        print_json(board)
        return
    if fmt is not None:
        from labreplay.suites.campaign.board_export import render

        sys.stdout.write(render(board, fmt))
        return
    print_board(console, board)
    for line in cost_lines(board):
        console.print(line)
    if board.get("not_isolated"):
        console.print(
            "not ranked (--require-isolated; ran in-process): " + ", ".join(board["not_isolated"])
        )
    if board.get("unverifiable"):
        first = next(iter(board["unverifiable"].items()))
        console.print(
            f"marked: {len(board['unverifiable'])} run(s) hold figures store verify cannot "
            f"re-derive (first: {first[0]}: {first[1][0]})",
            markup=False,
            highlight=False,
        )
    if board.get("failed"):
        causes = board.get("failed_causes") or {}
        named = [f"{s} ({causes[s]})" if causes.get(s) else s for s in board["failed"]]
        console.print(f"not ranked (runs failed: the agent could not act): {', '.join(named)}")
    for table in board["tables"].values():
        for r in table["rows"]:
            if r.get("failed_call_share"):
                console.print(f"{r['system']}: {r['failed_call_share']:.1%} of model calls failed")


from labreplay.suites.campaign.serve_cli import serve_cmd  # noqa: E402

app.command("serve")(serve_cmd)
