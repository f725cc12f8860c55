"""The campaign dry run a buyer can plan with (issue 50): a range over stand-ins that spend 0%,
50% and 100% of the evidence budget that holds the calls of a model that inspects evidence, a
reasoning line for a reasoning model, and tokens counted with the model's tokenizer where this
machine has it (o200k from bpe-openai's packaged file), else the declared fallback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.reliability.conftest import run_cli_in_process

from labreplay.agents import llm_tokens
from labreplay.agents.llm_tokens import FALLBACK, INSTALL_TOKENS, O200K, rule_for
from labreplay.store.sqlite import Store
from labreplay.testing.fault_server import StubServer
from labreplay.testing.schema_server import INSPECTING, SchemaAnswerer

pytest.importorskip("openai")


def _campaign(specs: Path, store: Path, url: str, agent: str, *extra: str) -> str:
    """`campaign run` in this process; its stdout (it must succeed)."""
    proc = run_cli_in_process(
        "campaign", "run", "--specs", str(specs), "--agent", agent, "--base-url", url,
        "--store", str(store), *extra,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def fresh_rules() -> Iterator[None]:
    """Each test finds the tokenizer anew (the rules are cached per process)."""
    rule_for.cache_clear()
    llm_tokens._o200k.cache_clear()
    yield
    rule_for.cache_clear()
    llm_tokens._o200k.cache_clear()


@pytest.mark.parametrize("assignment", ["short-1", "long-1"])
def test_the_range_holds_the_calls_of_a_model_that_inspects_evidence(
    campaign_specs_source: Path, tmp_path: Path, assignment: str
) -> None:
    store = tmp_path / "s.sqlite"
    with StubServer(SchemaAnswerer(INSPECTING)) as server:
        dry = _campaign(
            campaign_specs_source, store, server.base_url, "openai:inspector",
            "--only", assignment, "--dry-run", "--json",
        )  # fmt: skip
        assert not store.exists() and not server.chat_requests
        _campaign(campaign_specs_source, store, server.base_url, "openai:inspector",
                  "--only", assignment)  # fmt: skip
    estimate = json.loads(dry)
    with Store(store, readonly=True) as db:
        calls = {r.branch: len(db.llm_calls(r.run_id)) for r in db.runs()}
    low, high = estimate["range"]["calls"]
    assert low < sum(calls.values()) <= high, (low, calls, high)
    plays = {p["evidence_share"]: p for p in estimate["plays"]}
    assert sorted(plays) == [0, 50, 100] and not estimate["reasoning_included"]
    assert "reasoning" not in estimate  # not a reasoning model
    # The stand-ins spend what they say: each inspection or review is a policy call and the
    # updated forecast it requires, so the adaptive branch buys 2 calls per unit of budget.
    spec = json.loads((campaign_specs_source / f"{assignment}.json").read_text())
    budgets = (spec.get("body") or spec)["budgets"]
    adaptive = {s: p["assignments"][0]["branches"]["adaptive"] for s, p in plays.items()}
    bought = {s: (adaptive[s]["policy_calls"] - adaptive[0]["policy_calls"]) // 2 for s in plays}
    assert bought[100] == budgets["evidence"] + budgets["reviews"]
    assert bought[50] == budgets["evidence"] // 2 + budgets["reviews"] // 2
    # the server spends everything, as the top stand-in does: its calls are the top of the range
    assert sum(calls.values()) == high


def test_a_reasoning_model_states_its_reasoning_apart_from_the_range(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"o3-mini": {"input": 1, "output": 4}}))
    args = ("--only", "short-1", "--dry-run", "--reasoning-tokens", "1000", "--prices", str(prices))
    url = "http://127.0.0.1:9/v1"  # never called
    store = tmp_path / "s.sqlite"
    text = _campaign(campaign_specs_source, store, url, "openai:o3-mini", *args)
    estimate = json.loads(
        _campaign(campaign_specs_source, store, url, "openai:o3-mini", *args, "--json")
    )
    assert not store.exists()
    low, high = estimate["range"]["calls"]
    found = estimate["reasoning"]
    assert found["budget_per_call"] == 1000 and not estimate["reasoning_included"]
    assert [a["share"] for a in found["at"]] == [25, 50, 100]
    full = found["at"][-1]
    assert full["tokens"] == [low * 1000, high * 1000]
    assert full["cost"] == pytest.approx([low * 1000 * 4 / 1e6, high * 1000 * 4 / 1e6])
    said = " ".join(text.split())
    assert "reasoning not included (see REASONING)" in said
    assert "REASONING (hidden, billed as completion tokens, not in the range above): 1,000" in said
    assert f"at 25% {low * 250:,}-{high * 250:,} tokens" in said
    assert f"{low:,}-{high:,} calls" in said and "min-max over stand-ins" in said


def test_an_openai_model_is_counted_with_o200k_from_the_packaged_file(
    fresh_rules: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    if llm_tokens._packaged_o200k() is None:
        pytest.skip(f"bpe-openai not installed ({INSTALL_TOKENS})")
    import tiktoken.registry

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: only the packaged file
    rule = rule_for("openai/gpt-5")
    assert rule.name == O200K and rule_for("o3-mini").name == O200K
    assert rule.count("hello world") == 2 and rule.count("1234567") == 3  # digits in threes
    assert list(tmp_path.iterdir()) == []  # read through a private folder, gone after
    assert "o200k_base" not in tiktoken.registry.ENCODINGS  # tiktoken's own state unchanged


def test_without_the_tokenizer_the_fallback_is_declared_with_its_install_command(
    fresh_rules: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(llm_tokens, "_packaged_o200k", lambda: None)
    damaged = tmp_path / llm_tokens._cache_name()  # a cached file that fails tiktoken's hash
    damaged.write_bytes(b"not an encoding")
    rule = rule_for("gpt-5")
    assert rule.name.startswith(FALLBACK) and INSTALL_TOKENS in rule.name
    assert damaged.read_bytes() == b"not an encoding"  # left as it was, nothing downloaded
    assert rule.count("hello world 12") == 6  # two words, two spaces, a token per digit
    # a model with no tokenizer on this machine: the fallback, no install hint
    assert rule_for("anthropic/claude-sonnet-4-5").name == FALLBACK
    assert rule_for("HuggingFaceTB/SmolLM2-135M-Instruct").name == FALLBACK


def test_anthropic_cache_writes_are_priced_at_the_write_rate(
    campaign_specs_source: Path, tmp_path: Path
) -> None:
    """Anthropic bills the prompt tokens a request writes to its cache at a premium (1.25x the
    input rate for claude-sonnet-4-5): the dry run counts them and prices them so."""
    url = "http://127.0.0.1:9/v1"  # never called
    args = ("--only", "short-1", "--dry-run", "--json", "--provider", "anthropic")
    model = "openai:claude-sonnet-4-5"
    estimate = json.loads(
        _campaign(campaign_specs_source, tmp_path / "s.sqlite", url, model, *args)
    )
    for play in estimate["plays"]:
        total = play["total"]
        written, cached = total["cache_write_tokens"], total["cached_tokens"]
        assert 0 < written <= total["prompt_tokens"] - cached
        fresh = total["prompt_tokens"] - cached - written
        usd = fresh * 3.0 + cached * 0.3 + written * 3.75 + total["completion_tokens"] * 15.0
        assert play["cost"] == pytest.approx(usd / 1e6, abs=1e-6)
        uncached = (total["prompt_tokens"] * 3.0 + total["completion_tokens"] * 15.0) / 1e6
        assert play["cost_uncached"] == pytest.approx(uncached, abs=1e-6)
