"""`labreplay store verify --store PATH`: exit 0 if every run's chain and spec verify, else 1
naming the first broken run and seq; `labreplay store remove`: remove chosen runs to redo them
(recorded, so verify says what was superseded)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer

from labreplay.cli._common import console, err_console, print_json
from labreplay.cli.generate import command
from labreplay.option_fields import Checked, OneOf, flag, out_dirs
from labreplay.run_options import OutputOptions, StoreOptions
from labreplay.validate import OptionError

app = typer.Typer(help="Results-store maintenance.", no_args_is_help=True)


@dataclass(frozen=True, kw_only=True)
class VerifyArgs(Checked):
    """What `store verify` checks besides the chains."""

    public_key: Path | None = flag(
        None,
        "Also check every run's Ed25519 signature (`store sign`) with this PEM public key.",
        api=False,
    )
    allow_unverifiable: bool = flag(
        False,
        "Accept runs whose scores cannot be checked because the store lacks a file their "
        "spec names (a conditions question file): listed as unverifiable, not failed.",
        api=False,
    )


@command(app, "verify", StoreOptions, VerifyArgs, OutputOptions)
def verify(where: StoreOptions, args: VerifyArgs, output: OutputOptions) -> None:
    """Re-verify every run's hash chain against its stored, hash-checked spec (and, with
    --public-key, its signature)."""
    from labreplay.store.sqlite import Store
    from labreplay.store.verify import verify_store

    store, key = where.store, None
    if args.public_key is not None:  # before the store is opened: a bad key touches nothing
        from labreplay.store.signing import load_public_key

        key = load_public_key(args.public_key)
    with Store(store, readonly=True) as db:
        report = verify_store(db, allow_unverifiable=args.allow_unverifiable)
        if key is not None:
            from labreplay.store.signing import verify_signatures

            report.problems.extend(verify_signatures(db, key))
    if output.json_out:
        print_json(
            {
                "runs": report.runs,
                "events": report.events,
                "problems": report.problems,
                "superseded": report.superseded,
                "unverifiable": report.unverifiable,
                "signatures_checked": key is not None,
            }
        )
    elif report.ok:
        signed = ", every signature verified" if key is not None else ""
        console.print(f"ok: {report.runs} runs, {report.events} events verified{signed}")
        if report.unverifiable:
            console.print(
                f"{len(report.unverifiable_runs)} run(s) hold figures nothing in the store "
                f"re-derives (boards mark them); first: {report.unverifiable[0]}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        if report.superseded:
            console.print(
                f"{len(report.superseded)} run(s) were removed to be redone (store remove): "
                + "; ".join(
                    f"{r['run_id']} ({r['agent']}, {r['spec_id']}, {r['branch']}, was "
                    f"{r['status']}: {r['reason']})"
                    for r in report.superseded[:5]
                ),
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    else:
        err_console.print(
            f"labreplay: store {store}: {len(report.problems)} broken run(s); first: "
            f"{report.problems[0]}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if not report.ok:
        raise typer.Exit(1)


STATUSES = ("failed", "running", "complete")


@dataclass(frozen=True, kw_only=True)
class RemoveArgs(Checked):
    """Which runs `store remove` removes (selectors ANDed, at least one), and why."""

    run_id: list[str] | None = flag(None, "A run id (repeatable).", api=False)
    agent: str | None = flag(None, "Every run of this agent.", api=False)
    assignment: str | None = flag(
        None, "Runs of this spec id or campaign assignment id (long-1).", api=False
    )
    status: str | None = flag(
        None,
        "Only runs with this status (failed | running | complete).",
        check=OneOf(STATUSES),
        api=False,
    )
    reason: str = flag("removed to be redone", "Recorded with each removed run.", api=False)
    dry_run: bool = flag(False, "List what would be removed.", api=False)

    def check(self) -> None:
        if not (self.run_id or self.agent or self.assignment or self.status):
            raise OptionError("store remove: give --run-id, --agent, --assignment or --status")


@command(app, "remove", StoreOptions, RemoveArgs, OutputOptions)
def remove(where: StoreOptions, args: RemoveArgs, output: OutputOptions) -> None:
    """Remove chosen runs (and the control runs that hang from them) so the same run command
    redoes them, e.g. a run broken by a transient endpoint failure. Each removal is recorded:
    `store verify` says what was superseded. Selectors are ANDed; at least one is needed."""
    from labreplay.errors import LabreplayError
    from labreplay.store.sqlite import Store

    store, run_id, agent, assignment = where.store, args.run_id, args.agent, args.assignment
    status, dry_run = args.status, args.dry_run
    with Store(store, readonly=dry_run) as db:
        runs = db.runs()
        chosen = [
            r
            for r in runs
            if (not run_id or r.run_id in run_id)
            and (agent is None or r.agent == agent)
            and (
                assignment is None
                or r.spec_id == assignment
                or r.spec_id.endswith((f"-{assignment}", f"/{assignment}"))
            )
            and (status is None or r.status == status)
        ]
        unknown = sorted(set(run_id or ()) - {r.run_id for r in runs})
        if unknown:
            raise LabreplayError(f"--run-id: no run {unknown[0]!r} in store {store}")
        if not chosen:
            raise LabreplayError(f"store {store}: no run matches the selectors (nothing removed)")
        ids = {r.run_id for r in chosen}
        # a control's numbers are relative to its adaptive run: they go with it
        ids |= {r.run_id for r in runs if r.parent_run_id in ids}
        gone = [r for r in runs if r.run_id in ids]
        if not dry_run:
            db.remove_runs([r.run_id for r in gone], args.reason)
    rows = [
        {"run_id": r.run_id, "agent": r.agent, "spec_id": r.spec_id, "branch": r.branch,
         "status": r.status}
        for r in gone
    ]  # fmt: skip
    if output.json_out:
        print_json({"removed": [] if dry_run else rows, "would_remove": rows if dry_run else []})
        return
    verb = "would remove" if dry_run else "removed"
    console.print(f"{verb} {len(rows)} run(s); rerun the same command to redo them")
    for r in rows:
        console.print(
            f"  {r['run_id']}  {r['agent']}  {r['spec_id']}  {r['branch']}  {r['status']}"
        )


@dataclass(frozen=True, kw_only=True)
class KeygenArgs(Checked):
    """Where `store keygen` writes the key pair."""

    out: Path = flag(help="Directory for the new key pair.", check=out_dirs(), api=False)


@command(app, "keygen", KeygenArgs, OutputOptions)
def keygen(args: KeygenArgs, output: OutputOptions) -> None:
    """Write a new Ed25519 key pair for `store sign`: the private key (mode 0600; keep it
    out of the store and of any shared place) and the public key to give to verifiers."""
    from labreplay.store.signing import generate_key_pair

    private, public, kid = generate_key_pair(args.out)
    if output.json_out:
        print_json({"private_key": str(private), "public_key": str(public), "key_id": kid})
        return
    console.print(f"key {kid}: private key {private} (mode 0600), public key {public}")


@dataclass(frozen=True, kw_only=True)
class SignArgs(Checked):
    """The key `store sign` signs with."""

    key: Path = flag(help="Ed25519 private key, PEM (`store keygen`).", api=False)


@command(app, "sign", StoreOptions, SignArgs, OutputOptions)
def sign(where: StoreOptions, args: SignArgs, output: OutputOptions) -> None:
    """Sign every finished run (its row, event chain head, scores and calls) and the set of
    runs with an Ed25519 key; `store verify --public-key` checks them. Signing again replaces
    the signatures. Only signatures and the key's id are stored, never the key."""
    from labreplay.store.signing import load_private_key, sign_store
    from labreplay.store.sqlite import Store

    # before the store is opened: a bad key touches nothing
    private_key = load_private_key(args.key)
    with Store(where.store, readonly=True) as check:
        check.runs()  # a damaged store is refused before anything is written to it
    with Store(where.store) as db:
        report = sign_store(db, private_key)
    if output.json_out:
        print_json(
            {"signed": report.signed, "skipped_running": report.skipped_running,
             "key_id": report.key_id}
        )  # fmt: skip
        return
    console.print(f"signed {report.signed} run(s) with key {report.key_id}")
    if report.skipped_running:
        err_console.print(
            f"labreplay: {len(report.skipped_running)} run(s) still running were not signed "
            f"(first: {report.skipped_running[0]}); sign again once they finish",
            markup=False,
            highlight=False,
        )
