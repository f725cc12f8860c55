"""Money (issue 35): a price per model that the user can override, cost per call priced with
provider caching (cached prompt tokens at the cached rate, response-cache hits free), and the
`--max-cost` / `--max-total-cost` caps, against local servers the tests start on 127.0.0.1
(`schema_server.SchemaAnswerer` reports `prompt_tokens_details.cached_tokens` as a provider's
prefix cache does). The CLI runs as a subprocess: exit codes and output are what a user sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from labreplay.agents.llm_caps import CapMeter, RunCaps
from labreplay.agents.llm_client import AsyncLLMClient, LLMClient
from labreplay.agents.llm_prices import (
    BUILTIN_PRICES,
    ModelPrice,
    PriceTable,
    SpendLedger,
    load_prices,
    lookup,
)
from labreplay.agents.llm_tokens import FALLBACK
from labreplay.agents.llm_usage import cost, usage_line, usage_summary
from labreplay.errors import AgentError
from labreplay.runtime.failure import COST_CAP
from labreplay.store.sqlite import Store
from labreplay.testing import fault_server as stub
from labreplay.testing.schema_server import SchemaAnswerer

pytest.importorskip("openai")

SCHEMA = {
    "type": "object",
    "properties": {"pick": {"type": "string", "enum": ["a", "b"]}},
    "required": ["pick"],
}
PRICE = ModelPrice(input=2.0, output=8.0, cached_input=0.5, source="test")


def run_cli(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labreplay.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )


@pytest.fixture(scope="module")
def specs(campaign_specs_source: Path) -> Path:
    """The session's `campaign compile` output (tests/conftest.py): runs only read it."""
    return campaign_specs_source


def _prices(tmp_path: Path, model: str = "priced-model", **row: float) -> Path:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({model: row or {"input": 2, "output": 8, "cached_input": 0.5}}))
    return path


# ---------------------------------------------------------------------- the table
def test_a_price_file_overrides_the_built_in_table_in_json_and_toml(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text('["gpt-4o"]\ninput = 1.0\noutput = 2.0\n\n["mine"]\ninput = 3\noutput = 4\n')
    table = load_prices(toml)
    assert table.price_for("gpt-4o") == ModelPrice(1.0, 2.0, None, None, "p.toml")
    assert table.price_for("gpt-4o").cached_rate == 1.0  # no discount declared: none assumed
    assert table.price_for("gpt-5") == BUILTIN_PRICES["gpt-5"]  # the rest stay built in
    assert load_prices(_prices(tmp_path)).price_for("priced-model") == ModelPrice(
        2.0, 8.0, 0.5, None, "prices.json"
    )


def test_names_match_exactly_or_as_a_dated_snapshot_never_by_a_looser_prefix() -> None:
    table = {"gpt-4o": PRICE}
    assert lookup(table, "gpt-4o-2024-08-06") is PRICE
    assert lookup(table, "openai/gpt-4o") is PRICE
    assert lookup({"claude-sonnet-4-5": PRICE}, "claude-sonnet-4-5-20250929") is PRICE
    assert lookup(table, "gpt-4o-mini") is None  # a different, cheaper model
    assert PriceTable().price_for("smollm2-135m") is None  # unknown: no price, not 0


@pytest.mark.parametrize(
    ("row", "said"),
    [
        ({"input": 1}, "field 'output' is missing"),
        ({"input": -1, "output": 1}, "field 'input' must be a number in [0, 10000]"),
        ({"input": 1, "output": 1, "ouput": 2}, "unknown field 'ouput'"),
        ({"input": "1", "output": 1}, "field 'input' must be a number"),
    ],
)
def test_a_bad_price_file_is_refused_naming_model_field_and_value(
    tmp_path: Path, row: dict[str, object], said: str
) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": row}))
    with pytest.raises(AgentError, match="--prices") as caught:
        load_prices(path)
    assert said in str(caught.value) and "model 'm'" in str(caught.value)


# ---------------------------------------------------------------------- cost per call
def test_cached_prompt_tokens_cost_the_cached_rate_and_response_cache_hits_nothing(
    tmp_path: Path,
) -> None:
    caps = RunCaps(prices=PriceTable({"priced": PRICE}))
    messages = [{"role": "user", "content": "a long stable prefix " * 20 + "then a question"}]
    with stub.StubServer(SchemaAnswerer()) as server, Store(tmp_path / "s.sqlite") as db:
        client = LLMClient("priced", base_url=server.base_url, cache=db, meter=CapMeter(caps))
        first = client.complete_json(messages, SCHEMA).calls[0]
        second = client.complete_json(messages[:1], {**SCHEMA, "title": "x"}).calls[0]
        again = client.complete_json(messages, SCHEMA).calls[0]  # the response cache answers
        sent = len(server.chat_requests)
    assert sent == 2 and again["cached"] and not second["cached"]
    assert first["cached_tokens"] == 0 and second["cached_tokens"] > 0
    p, c, k = second["prompt_tokens"], second["completion_tokens"], second["cached_tokens"]
    assert second["cost_usd"] == pytest.approx(((p - k) * 2.0 + k * 0.5 + c * 8.0) / 1e6)
    assert second["cost_usd"] < (p * 2.0 + c * 8.0) / 1e6  # the discount is real
    assert again["cost_usd"] == 0.0
    usage = usage_summary([first, second, again])
    assert usage["cost_usd"] == pytest.approx(first["cost_usd"] + second["cost_usd"], abs=1e-6)
    assert cost(usage, PRICE) == pytest.approx(usage["cost_usd"], abs=1e-6)  # repriced: same


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens_details": {"cached_tokens": 60}},  # OpenAI's form: what inspect reads
        {"prompt_cache_hit_tokens": 60, "prompt_cache_miss_tokens": 40},  # DeepSeek's
        {"cache_read_input_tokens": 60},  # Anthropic's, as proxies pass it through
    ],
    ids=["openai", "deepseek", "proxy"],
)
def test_cached_tokens_in_every_openai_form_usage_are_read_and_priced_cached(
    usage: dict[str, object],
) -> None:
    """inspect_ai's OpenAI-compatible provider reads `prompt_tokens_details` only; the flat
    forms (DeepSeek's cache hits, a proxy's `cache_read_input_tokens`) are read from the raw
    response it hands to its `on_response` hook, so a cache hit is priced as one, and the
    cached share is reported."""
    body = json.loads(stub.completion_body('{"pick": "a"}', prompt_tokens=100))
    body["usage"].update(usage)
    reply = stub.StubReply(200, json.dumps(body).encode())
    with stub.StubServer(stub.constant(reply)) as server:
        meter = CapMeter(RunCaps(prices=PriceTable({"claude-x": PRICE})))
        client = LLMClient("claude-x", base_url=server.base_url, meter=meter)
        call = client.complete_json([{"role": "user", "content": "q"}], SCHEMA).calls[0]
    assert call["prompt_tokens"] == 100 and call["cached_tokens"] == 60
    assert call["cost_usd"] == pytest.approx((40 * 2.0 + 60 * 0.5 + 7 * 8.0) / 1e6)


def test_concurrent_requests_each_read_their_own_raw_usage() -> None:
    """The raw usage is kept per request in flight: eight concurrent calls whose replies report
    different cache hits, answered in the reverse order, each record their own."""

    def reply(request: stub.SeenRequest, n: int) -> stub.StubReply:
        hit = int((request.body or {})["messages"][0]["content"])
        body = json.loads(stub.completion_body('{"pick": "a"}', prompt_tokens=100))
        body["usage"]["prompt_cache_hit_tokens"] = hit
        return stub.StubReply(200, json.dumps(body).encode(), delay_s=0.05 * (18 - hit))

    with stub.StubServer(reply) as server:
        client = AsyncLLMClient("deepseek-chat", base_url=server.base_url, max_concurrency=8)
        jobs = [([{"role": "user", "content": str(hit)}], SCHEMA) for hit in range(10, 18)]
        replies = client.run_many(jobs)
    assert [r.calls[0]["cached_tokens"] for r in replies] == list(range(10, 18))


def test_an_unknown_model_has_an_unknown_cost_said_in_words_not_zero() -> None:
    calls = [{"prompt_tokens": 10, "completion_tokens": 5, "cost_usd": None}]
    usage = usage_summary(calls)
    assert "cost_usd" not in usage and cost(usage) is None
    assert "cost unknown" in usage_line(usage) and "$0" not in usage_line(usage)


def test_a_call_is_admitted_only_if_its_worst_case_fits_so_no_cap_is_exceeded() -> None:
    meter = CapMeter(RunCaps(max_cost_usd=0.01, prices=PriceTable({"m": PRICE})))
    meter.bind_model("m")
    request = {"model": "m", "messages": [{"role": "user", "content": "pick " * 40}]}
    request["max_tokens"] = 300  # the reply budget, reasoning budget included
    worst = meter.worst_case_usd(request)
    assert worst == pytest.approx((len(json.dumps(request)) * 2.0 + 300 * 8.0) / 1e6)
    assert meter.admit(worst) is None and meter.admit(worst) is None  # two in flight
    assert meter.held_usd == pytest.approx(2 * worst)
    size = len(json.dumps(request))
    for n in range(100):  # each call costs its whole worst case, the most it can
        meter.charge(
            {"prompt_tokens": size, "completion_tokens": 300, "request_hash": f"{n}"}, worst
        )
        assert meter.cost_usd + meter.held_usd <= 0.01  # in flight included
        over = meter.admit(worst)
        if over is not None:
            break
    assert over is not None and over.cap == "--max-cost 0.01" and COST_CAP in over.detail
    assert "could cost" in over.detail
    spent_and_held = meter.cost_usd + meter.held_usd  # one call is still in flight
    assert spent_and_held + worst > 0.01 >= spent_and_held  # stopped only when it had to
    with pytest.raises(AgentError, match="--max-cost needs the price of model 'nameless'"):
        CapMeter(RunCaps(max_cost_usd=1.0)).bind_model("nameless")


def test_a_reasoning_budget_learned_mid_call_is_admitted_before_it_is_sent() -> None:
    """An unknown name that turns out to be a reasoning model (the server refuses max_tokens)
    is resent with its reasoning budget on top: sent only if that worst case fits too."""
    caps = RunCaps(max_cost_usd=0.03, prices=PriceTable({"mystery": PRICE}))
    messages = [{"role": "user", "content": "pick one"}]
    with stub.StubServer(stub.reasoning_endpoint(SchemaAnswerer())) as server:
        client = LLMClient("mystery", base_url=server.base_url, meter=CapMeter(caps))
        first = client.complete_json(messages, SCHEMA)  # 8192 reasoning tokens cost 0.066
        second = client.complete_json(messages, SCHEMA)
        sent = len(server.chat_requests)
    assert sent == 1 and "--max-cost 0.03" in str(first.error) and not first.cap_reached
    assert second.cap_reached and "--max-cost 0.03" in second.cap_reached
    assert client.meter.cost_usd == 0.0 and client.meter.held_usd == 0.0


def test_a_request_is_paid_once_a_hit_of_one_paid_by_a_crashed_process_costs_what_it_cost() -> None:
    ledger = SpendLedger(1.0)
    shared = RunCaps(prices=PriceTable({"m": PRICE}), ledger=ledger)
    runs = [CapMeter(shared), CapMeter(shared)]
    for m in runs:
        m.bind_model("m")
    hit = {"prompt_tokens": 400, "completion_tokens": 100, "cached": True}
    hit["request_hash"] = uuid.uuid4().hex  # a request no call of this process has paid for
    first, again, other = dict(hit), dict(hit), dict(hit)
    runs[0].charge(first)  # paid by a process that crashed: this run's spend holds it
    runs[0].charge(again)  # the same request again: this process paid it, the cache answered
    runs[1].charge(other)  # so too for another run of the command
    assert first["cost_usd"] == pytest.approx(0.0016) and again["cost_usd"] == 0.0
    assert other["cost_usd"] == 0.0 and ledger.spent_usd == pytest.approx(0.0016)
    usage = usage_summary([first, again])
    assert usage["cost_usd"] == pytest.approx(0.0016) and usage["cache_hit_prompt_tokens"] == 400
    assert cost(usage, PRICE) == pytest.approx(0.0016)  # repriced: the same
    assert not ledger.hold(1.0) and ledger.hold(0.5)  # the total cap holds worst cases too


# ---------------------------------------------------------------------- the CLI
def _campaign(specs: Path, store: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "campaign", "run", "--specs", str(specs), "--base-url", url, "--store", str(store),
        "--agent", "openai:priced-model", *extra,
    )  # fmt: skip


def test_max_cost_stops_a_campaign_run_failed_with_the_cost_cap_and_the_spend_stored(
    specs: Path, tmp_path: Path
) -> None:
    store = tmp_path / "s.sqlite"
    prices = str(_prices(tmp_path))
    with stub.StubServer(SchemaAnswerer()) as server:
        proc = _campaign(
            specs, store, server.base_url, "--only", "short-1", "--prices", prices,
            "--max-cost", "0.05",
        )  # fmt: skip
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cap reached: --max-cost 0.05" in proc.stderr and COST_CAP in proc.stderr
    assert "the next call could cost" in proc.stderr
    with Store(store, readonly=True) as db:
        (run,) = db.runs()
        calls = db.llm_calls(run.run_id)
    assert run.status == "failed" and run.summary is not None
    assert run.summary["cap_reached"].startswith("--max-cost 0.05")
    spent = sum(c["cost_usd"] for c in calls)
    assert all(c["cost_usd"] > 0 for c in calls) and len(calls) > 2
    assert spent <= 0.05  # never above the cap: a call is sent only if its worst case fits
    assert run.summary["usage"]["cost_usd"] == pytest.approx(spent, abs=1e-6)
    assert run.summary["cause_kind"] == COST_CAP  # not "call cap"
    # the board shows the spend, and says why the run is not ranked
    board = run_cli("campaign", "leaderboard", "--store", str(store))
    assert board.returncode == 0, board.stderr
    text = " ".join(board.stdout.split())
    assert f"cost ${spent:.2f} (controls $0.00)" in text
    assert f"openai:priced-model: {len(calls)} model calls" in text
    assert (
        "not ranked (runs failed: the agent could not act): openai:priced-model (cost cap)" in text
    )


def test_a_resumed_runs_spend_equals_an_uninterrupted_runs_and_counts_toward_its_cap(
    specs: Path, tmp_path: Path
) -> None:
    """Defect: calls paid before a stop counted as free cache hits after resume (spend
    under-reported, and the caps counted from zero). A run stopped after 5 calls, then resumed
    under --max-cost, stops at the call an uninterrupted run stops at, having spent the same."""
    prices, spent = str(_prices(tmp_path)), {}
    for name, stops in (("once", ()), ("resumed", (("--max-calls", "5"),))):
        # a server of its own: it reports the prefix shared with its last request as cached
        with stub.StubServer(SchemaAnswerer()) as server:
            store = tmp_path / f"{name}.sqlite"
            for stop in [*stops, ("--max-cost", "0.05")]:
                proc = _campaign(
                    specs, store, server.base_url, "--only", "short-1", "--prices", prices, *stop
                )
                assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
            with Store(store, readonly=True) as db:
                (run,) = db.runs()
                assert run.summary is not None and run.summary["cause_kind"] == COST_CAP
                usage = run.summary["usage"]
            spent[name] = (usage["calls"], usage["cost_usd"], usage["cached_calls"])
    assert spent["resumed"][2] == 5  # the calls made before the stop, answered by the cache
    assert spent["resumed"][:2] == pytest.approx(spent["once"][:2], abs=1e-9)


def test_max_total_cost_stops_every_run_still_to_go(specs: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.sqlite"
    prices = str(_prices(tmp_path))
    with stub.StubServer(SchemaAnswerer()) as server:
        proc = _campaign(
            specs, store, server.base_url, "--limit", "2", "--prices",
            prices, "--max-total-cost", "0.05", "--json",
        )  # fmt: skip
        sent = len(server.chat_requests)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    results = json.loads(proc.stdout)
    assert [r["status"] for r in results] == ["failed", "failed"]
    assert all("--max-total-cost 0.05" in str(r["cause"]) for r in results)
    with Store(store, readonly=True) as db:
        spent = sum(c["cost_usd"] for r in db.runs() for c in db.llm_calls(r.run_id))
    assert 0 < spent <= 0.05 and sent >= 1


def test_the_conditions_board_shows_each_runs_cost_and_a_capped_runs_spend(
    buchwald_questions: Path, tmp_path: Path
) -> None:
    """Defect: the conditions board showed tokens but no cost, and a run stopped by
    --max-cost (failed, never ranked) was nowhere on it, nor what it spent."""
    store, prices = tmp_path / "c.sqlite", str(_prices(tmp_path))
    argv = ("conditions", "run", "--questions", str(buchwald_questions), "--store", str(store))
    with stub.StubServer(SchemaAnswerer()) as server:
        url = ("--base-url", server.base_url, "--prices", prices, "--limit", "6")
        done = run_cli(*argv, "--agent", "openai:priced-model", *url)
        capped = run_cli(
            *argv, "--agent", "openai:priced-model", *url, "--seed", "1", "--max-cost", "0.005",
            "--max-concurrency", "1",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert capped.returncode == 1 and "cap reached: --max-cost 0.005" in capped.stderr
    with Store(store, readonly=True) as db:
        by_status = {r.status: r for r in db.runs()}
        spent = {
            s: sum(c["cost_usd"] for c in db.llm_calls(r.run_id)) for s, r in by_status.items()
        }
    assert by_status["failed"].summary is not None
    assert by_status["failed"].summary["cause_kind"] == COST_CAP
    board = run_cli("conditions", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0, board.stderr
    (row,) = json.loads(board.stdout)["runs"]
    assert row["cost_usd"] == pytest.approx(spent["complete"], abs=1e-6) and row["cost_usd"] > 0
    text = " ".join(run_cli("conditions", "leaderboard", "--store", str(store)).stdout.split())
    assert f"${spent['complete']:.4f}" in text
    assert "not ranked (failed, cost cap): openai:priced-model" in text
    assert f"cost ${spent['failed']:.4f}" in text and 0 < spent["failed"] <= 0.005


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--max-cost", "0"), "--max-cost"),
        (("--max-cost", "5"), "--max-cost needs the price of model 'priced-model'"),
        (("--max-total-cost", "-1"), "--max-total-cost"),
    ],
)
def test_bad_money_options_are_one_line_exit_2_before_any_store(
    specs: Path, tmp_path: Path, extra: tuple[str, ...], said: str
) -> None:
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, "http://127.0.0.1:9/v1", "--only", "short-1", *extra)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not store.exists()


def test_a_bad_price_file_is_refused_by_the_cli_and_left_unchanged(
    specs: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "prices.toml"
    bad.write_text('["m"]\ninput = -2\noutput = 1\n')
    before = bad.read_bytes()
    store = tmp_path / "s.sqlite"
    proc = _campaign(specs, store, "http://127.0.0.1:9/v1", "--prices", str(bad))
    assert proc.returncode == 2 and "field 'input' must be a number" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not store.exists()
    assert bad.read_bytes() == before


# ---------------------------------------------------------------------- the dry run
def test_the_dry_run_counts_the_calls_and_prompts_a_real_run_sends(
    specs: Path, tmp_path: Path
) -> None:
    """On the schema-answering server every reply is valid, so a real run makes exactly the
    calls the dry run's stand-in that inspects nothing plays out, with the same prompts
    (character for character), in every branch; its tokens follow the declared rule."""
    store = tmp_path / "s.sqlite"
    with stub.StubServer(SchemaAnswerer()) as server:
        dry = _campaign(
            specs, store, server.base_url, "--only", "short-1", "--dry-run", "--json",
            "--prices", str(_prices(tmp_path)),
        )  # fmt: skip
        assert dry.returncode == 0 and not store.exists(), dry.stderr
        real = _campaign(specs, store, server.base_url, "--only", "short-1", "--json")
    assert real.returncode == 0, real.stderr
    estimate = json.loads(dry.stdout)
    assert estimate["token_rule"] == FALLBACK  # a model with no tokenizer here
    play = estimate["plays"][0]
    assert play["evidence_share"] == 0
    branches = play["assignments"][0]["branches"]
    with Store(store, readonly=True) as db:
        measured = {r.branch: db.llm_calls(r.run_id) for r in db.runs()}
    assert set(measured) == set(branches)
    for branch, calls in measured.items():
        assert len(calls) == branches[branch]["calls"], branch
        assert sum(c["prompt_chars"] for c in calls) == branches[branch]["prompt_chars"]
        served = sum(c["prompt_tokens"] for c in calls)  # the server counts the same way
        assert abs(branches[branch]["prompt_tokens"] / served - 1) < 0.05, branch
    # The server reports the prefix shared with the request before as provider-cached; the
    # adaptive branch runs first, so its previous request is its own, as in the estimate.
    served_cache = sum(c["cached_tokens"] for c in measured["adaptive"])
    assert abs(branches["adaptive"]["cached_tokens"] / served_cache - 1) < 0.05
    assert 0 < play["cost"] < play["cost_uncached"]
    assert estimate["cost_range"][0] == play["cost"]
    total = play["total"]  # the bound: priced as if no prompt token were provider-cached
    expected = (total["prompt_tokens"] * 2.0 + total["completion_tokens"] * 8.0) / 1e6
    assert play["cost_uncached"] == pytest.approx(expected, abs=1e-6)
    # the ceiling: an agent that spends everything can make more calls, never fewer, and each
    # of its calls may fill its whole response budget
    ceiling = estimate["upper_bound"]
    assert ceiling["calls"] >= 3 * total["calls"] and estimate["upper_bound_rule"]
    assert ceiling["completion_tokens"] > total["completion_tokens"]
    largest = max(b["largest_response_budget"] for b in branches.values())
    assert ceiling["completion_tokens"] <= ceiling["calls"] * largest
    assert estimate["upper_bound_cost"] > estimate["cost_uncached_range"][1]


def test_the_spend_ceiling_of_one_request() -> None:
    from labreplay.agents.llm_budget import REPAIR_TURN_TOKENS, spend_ceiling

    assert spend_ceiling(1000, 200, 0) == (1, 1000, 200)
    turn = 2 * 200 + REPAIR_TURN_TOKENS  # a refused reply and the note naming its problem
    assert spend_ceiling(1000, 200, 2) == (3, 3000 + 3 * turn, 600)
