"""The campaign suite's options: one class for `campaign run` and `labreplay.run("campaign")`.

Defaults live here and nowhere else: the CLI's flags are generated from `CampaignRunOptions`
(and the shared LLM group, `LlmOptions`) and the Python API builds the same classes from its
keyword arguments, so both doors run the same branches (e.g. the
number of schedule-matched random replicates) and give the same run ids and scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from labreplay.sdk import writable_dir
from labreplay.sdk.options import (
    Checked,
    Floats,
    Ints,
    IsolationOptions,
    LlmOptions,
    OneOf,
    Rule,
    bad,
    counts,
    flag,
    seeds,
    split_options,
)

CONTROLS = ("random", "no-evidence")  # every control a run may ask for
DEFAULT_CONTROLS = CONTROLS
NO_CONTROLS = "none"
# Every column of the campaign board, in order (`board_text.COLUMNS` says how each is drawn),
# and those it shows unless `--columns` says otherwise.
ALL_BOARD_COLUMNS = (
    "assignments", "isolation", "auc", "skill", "gain", "value", "headroom", "selection",
    "evidence", "seed-sd", "invalid",
)  # fmt: skip
BOARD_COLUMNS = ("assignments", "auc", "skill", "gain", "selection", "evidence")


def parse_controls(text: object) -> tuple[str, ...]:
    """`random,no-evidence` (or a list of names, from Python) -> the control branches; an
    unknown name is named (exit 2). `none` (or an empty list, from Python) means the adaptive
    branch alone; an empty text is refused (an unset variable in a script is no choice)."""
    from labreplay.sdk.options import bad, name_list

    if isinstance(text, str):
        if not text.strip():
            raise bad("--controls", text, f"is empty; give {', '.join(CONTROLS)} or {NO_CONTROLS}")
        if text.strip() == NO_CONTROLS:
            return ()
    return name_list("--controls", text, CONTROLS, allow_empty=True)


def _controls(label: str, value: object) -> tuple[str, ...]:
    return parse_controls(value)


@dataclass(frozen=True, kw_only=True)
class CampaignOptions(Checked):
    """The campaign suite's own options: the same class, defaults and checks in `campaign
    run`, `campaign serve` and `labreplay.run`.

    `random_replicates=None`: 3 for Python agents, 1 for LLM agents, whose every replicate is
    a full campaign of calls. `progress` (API only): called once per assignment done.
    """

    controls: str | Sequence[str] = flag(
        ",".join(DEFAULT_CONTROLS),
        "Comma list of control branches (random, no-evidence), or none.",
        check=Rule(_controls, "bogus"),
        parse_as=str,
    )
    random_replicates: int | None = flag(
        None,
        "Schedule-matched random replicates per assignment (default 3; 1 for LLM agents, "
        "whose every replicate costs a full campaign of calls).",
        check=Ints(1, 50),
    )
    limit: int | None = flag(
        None,
        "Run only the first N assignments in an order seeded by the run seed.",
        check=counts(),
    )
    progress: Callable[[], None] | None = flag(None, "Called once per assignment done.", cli=False)

    def control_branches(self, agent: object) -> tuple[str, ...]:
        """The control branches, `random` expanded into its replicates."""
        from labreplay.suites.campaign.branches import default_replicates, with_replicates

        replicates = (
            self.random_replicates
            if self.random_replicates is not None
            else default_replicates(agent if isinstance(agent, str) else "")
        )
        return with_replicates(parse_controls(self.controls), replicates)


@dataclass(frozen=True, kw_only=True)
class CampaignRunOptions(CampaignOptions, IsolationOptions):
    """What one campaign run takes besides specs, agent, store, seed and executor."""


@dataclass(frozen=True, kw_only=True)
class CampaignSource(Checked):
    """Which compiled assignments a command plays, into which store (the command line's)."""

    specs: Path = flag(help="Directory written by `campaign compile`.", api=False)
    only: str | None = flag(None, "Comma list of assignment ids (default: all).", api=False)
    seed: int = flag(0, "Run seed (agent and control randomness).", check=seeds(), api=False)


@dataclass(frozen=True, kw_only=True)
class CampaignAgentArgs(Checked):
    """The agent `campaign run` plays, and how (the command line's)."""

    agent: str = flag(
        "bayes",
        "random | bayes | no-evidence | openai:MODEL | a registered agent | MODULE:ATTR "
        "(your class or factory, importable from PYTHONPATH or the working directory).",
        api=False,
    )
    max_concurrency: int = flag(
        1, "Campaigns in flight at once (threads; for LLM agents).", check=Ints(1, 256), api=False
    )
    dry_run: bool = flag(
        False,
        "Render the prompts and estimate calls and tokens without calling the model; exit 0.",
        api=False,
    )


@dataclass(frozen=True, kw_only=True)
class CampaignCompileOptions(Checked):
    """What `campaign compile` and `labreplay.compile("campaign", ...)` take (besides the
    data directory and the protocol's own overrides, `ProtocolParams`)."""

    record: str | None = flag(
        None, "A built-in record: precursor-genome (default) | alab-pipeline."
    )
    record_card: Path | None = flag(
        None,
        "A record card (NAME.card.toml or NAME.card.yaml, docs/record-cards.md) describing "
        "your own table of experiments.",
    )
    protocol: str = flag("sdl1", "Protocol family.", check=OneOf(("sdl1",)))
    seed: int = flag(0, "Seed of the frozen partition.", check=seeds())
    context_detail: str = flag(
        "record",
        "record | summary | rows (context in the state; record: the record's own, summary for "
        "the built-in records, rows for a card's table, which its reference learner reads).",
        check=OneOf(("record", "summary", "rows")),
    )


def _pem_file(label: str, value: object) -> Path:
    """A PEM file to read (not found, a directory or a FIFO is refused in one line)."""
    from labreplay.sdk import readable_file

    return readable_file(Path(str(value)), label, max_bytes=1 << 20)


@dataclass(frozen=True, kw_only=True)
class LiveAgentOptions(Checked):
    """What `campaign live emulate` and `serve` evaluate (command line)."""

    agent: str = flag(
        "bayes", "The system under evaluation, as `campaign run` takes it.", api=False
    )
    twin: bool = flag(
        False, "Also play its forecast-only twin (no evidence) on the same live stream, recorded "
        "as the `no-evidence` branch (what stands in for the replay's matched controls).",
        api=False,
    )  # fmt: skip
    selections: str = flag(
        "agent", "Who selects the experiments: the system under evaluation (agent) or the lab's "
        "own agent (lab: the lab posts each selection; the system only forecasts).",
        check=OneOf(("agent", "lab")), api=False,
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class LiveEmulateOptions(LiveAgentOptions):
    """How `campaign live emulate` plays compiled campaigns as a live lab (command line)."""

    delay_s: float = flag(
        0.0, "Seconds from each prior forecast to the lab's result.", check=Floats(0.0, 3600.0),
        api=False,
    )  # fmt: skip
    shuffle: bool = flag(False, "Post each experiment's evidence in a seeded order.", api=False)
    fail_rate: float = flag(
        0.0, "Probability that an experiment fails (a deviation, no result).",
        check=Floats(0.0, 1.0), api=False,
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class LiveServeOptions(LiveAgentOptions):
    """Where `campaign live serve` takes a lab's posts, and how long it waits (command line)."""

    host: str = flag(
        "127.0.0.1", "Address to serve on (not loopback: only with --allow-remote).", api=False
    )
    port: int = flag(8765, "Port to serve on.", check=Ints(1, 65535), api=False)
    allow_remote: bool = flag(
        False, "Serve on a non-loopback address (give --tls-cert/--tls-key there: the token "
        "and the posts travel in clear otherwise).", api=False,
    )  # fmt: skip
    tls_cert: Path | None = flag(
        None, "PEM certificate (chain) to serve HTTPS with; needs --tls-key.",
        check=Rule(_pem_file), api=False,
    )  # fmt: skip
    tls_key: Path | None = flag(
        None, "PEM private key of --tls-cert.", check=Rule(_pem_file), api=False
    )
    result_wait_s: float = flag(
        3600.0, "Seconds to wait for an experiment's result (then: a no_result deviation).",
        check=Floats(0.0, 86400.0, lo_open=True), api=False,
    )  # fmt: skip

    def check(self) -> None:
        if self.tls_cert is not None and self.tls_key is None:
            raise bad("--tls-cert", str(self.tls_cert), "needs --tls-key too (HTTPS takes both)")
        if self.tls_key is not None and self.tls_cert is None:
            raise bad("--tls-key", str(self.tls_key), "needs --tls-cert too (HTTPS takes both)")


def _out_dir(label: str, value: object) -> Path:
    """A directory path to write (a device, FIFO or file there is refused, left as it was)."""
    return writable_dir(Path(str(value)), label)


@dataclass(frozen=True, kw_only=True)
class CampaignCompileArgs(Checked):
    """Where `campaign compile` writes, and for how many partition seeds (command line)."""

    seeds: str | None = flag(
        None, "Several partition seeds, e.g. 0-4: one seed<N>/ folder each.", api=False
    )
    out: Path | None = flag(None, "Write specs + index.json here.", check=Rule(_out_dir), api=False)


def _columns(label: str, value: object) -> tuple[str, ...]:
    """`all` or a comma list of the board's column names (unknown names are named)."""
    from labreplay.sdk.options import name_list

    if isinstance(value, str) and value.strip() == "all":
        return ALL_BOARD_COLUMNS
    return name_list(label, value, ALL_BOARD_COLUMNS)


def _price(label: str, value: object) -> str:
    """IN,OUT[,CACHED], refused as parsed."""
    from labreplay.sdk.agents import parse_price

    parse_price(str(value))
    return str(value)


@dataclass(frozen=True, kw_only=True)
class CampaignBoardArgs(Checked):
    """What `campaign leaderboard` reads and how it prints (read only from the store)."""

    specs: Path | None = flag(
        None,
        "Board only these specs (a `campaign compile` directory): selects one protocol "
        "when the store holds several under the same spec ids.",
        api=False,
    )
    difference: float = flag(
        0.01,
        "AUC difference for the power line's 'assignments needed'.",
        check=Floats(0.0, 2.0, lo_open=True),
        api=False,
    )
    price_per_mtok: str | None = flag(
        None,
        "IN,OUT[,CACHED]: USD per million prompt / completion / provider-cached prompt "
        "tokens, over any table (e.g. 2.5,10,1.25).",
        check=Rule(_price, "1,x"),
        api=False,
    )
    columns: str | Sequence[str] = flag(
        ",".join(BOARD_COLUMNS),
        "Comma list of board columns, or all: assignments, isolation, auc, skill, gain, value "
        "(selection value), headroom, selection, evidence (lifts), seed-sd, invalid. The text "
        "board and --format markdown | latex show them (csv: every figure).",
        check=Rule(_columns, "bogus"),
        parse_as=str,
        api=False,
    )
    format: str | None = flag(
        None,
        "Print the paper's board as markdown | latex | csv (with intervals and the power "
        "range) instead of the terminal tables.",
        check=OneOf(("markdown", "latex", "csv")),
        api=False,
    )
    require_isolated: bool = flag(
        False,
        "Rank only agents kept from the evaluator (--isolate runs, LLM agents); in-process "
        "runs are left out and listed.",
        api=False,
    )
    verified: bool = flag(
        False,
        "Run `store verify` first: refuse to rank a store it finds any problem in (exit "
        "1), and mark the runs whose figures it cannot re-derive.",
        api=False,
    )
    public_key: Path | None = flag(
        None,
        "As --verified, and every run must carry a valid signature by this Ed25519 "
        "public key (`labreplay store sign`).",
        api=False,
    )


def parse_run_options(
    given: Mapping[str, object], where: str = "campaign run"
) -> tuple[CampaignRunOptions, LlmOptions]:
    """The run options and the LLM options; an unknown key is refused naming the nearest."""
    run, llm = split_options(where, dict(given), CampaignRunOptions, LlmOptions)
    assert isinstance(run, CampaignRunOptions) and isinstance(llm, LlmOptions)
    return run, llm


__all__ = [
    "DEFAULT_CONTROLS",
    "CampaignAgentArgs",
    "CampaignBoardArgs",
    "CampaignCompileArgs",
    "CampaignCompileOptions",
    "CampaignOptions",
    "CampaignRunOptions",
    "CampaignSource",
    "LiveAgentOptions",
    "LiveEmulateOptions",
    "LiveServeOptions",
    "parse_run_options",
]
