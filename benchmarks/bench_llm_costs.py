"""LLM run costs: calls and prompt size per long assignment, the provider-cached prefix share,
and the dry run's speed and accuracy.

The model side is `labreplay.testing.schema_server` on 127.0.0.1: it answers every schema
correctly (finishing the campaign), so the calls and prompts are the harness's own, and its
`cached_tokens` is the common prefix with the previous request (what a provider prefix cache can
reuse). Figures:
- long-1 adaptive branch: calls and prompt characters per assignment; the share of prompt
  tokens inside the previous request's prefix (cached share) and characters that change
  between consecutive calls (mean). The "was" figures are the same measurement with the
  previous renderer (lr-llm-prompts-2: whole state re-rendered, panel repeated per checkpoint);
- `--dry-run` of a five-seed protocol (60 assignments, every branch): seconds, and its error in
  calls against the real run on `long-1` (its stand-in that inspects nothing plays the server's
  policy, so 0 is expected; and the whole protocol's range of calls over the three stand-ins;
  token error against a real model is quoted in the README from the SmolLM2 server);
- with LABREPLAY_BENCH_LLM_BASE_URL set (e.g. the local SmolLM2 server, 8,192-token context):
  the long-1 adaptive branch against that real model at default settings (only the per-request
  timeout raised to 600 s: a 135M model on a busy CPU takes minutes per panel forecast), with
  its truncated replies, checkpoint fallbacks, prompt tokens and the dry run's token error.
  This takes tens of minutes, which is why it is here and not in CI.
"""

from __future__ import annotations

import itertools
import os
import sys
import time
from typing import Any

from labreplay.suites.campaign.api import compile_specs
from labreplay.suites.campaign.dry_run import dry_run
from labreplay.suites.campaign.llm_agent import make_agent
from labreplay.suites.campaign.runner import run_assignment_branches
from labreplay.testing.fault_server import StubServer
from labreplay.testing.schema_server import SchemaAnswerer, _common_prefix, _prompt_text


def _specs(seed: int) -> list[Any]:
    _, specs, _ = compile_specs(record="precursor-genome", protocol="sdl1", seed=seed)
    return list(specs)


def _long_run(spec: Any) -> dict[str, float]:
    with StubServer(SchemaAnswerer()) as server:
        make = lambda: make_agent("openai:bench", base_url=server.base_url)  # noqa: E731
        results = run_assignment_branches(spec, make, None, 0, ())
        prompts = [_prompt_text(r.body or {}) for r in server.chat_requests]
    calls = results["adaptive"].calls
    prompt = sum(int(c["prompt_tokens"] or 0) for c in calls)
    cached = sum(int(c["cached_tokens"] or 0) for c in calls)
    changed = [len(b) - _common_prefix(a, b) for a, b in itertools.pairwise(prompts)]
    return {
        "calls": len(calls),
        "prompt_chars": sum(len(p) for p in prompts),
        "largest_prompt": max(len(p) for p in prompts),
        "cached_share": cached / prompt if prompt else 0.0,
        "changed_chars": sum(changed) / max(1, len(changed)),
    }


def _real_model(spec: Any, base_url: str) -> list[dict[str, Any]]:
    model = os.environ.get("LABREPLAY_BENCH_LLM_MODEL", "smollm2")
    agent = f"openai:{model}"
    # Default settings: the timeout is derived from each call's response budget (a 32-query
    # panel forecast gets 159 s), so a slow CPU model's checkpoints are not timed out.
    results = run_assignment_branches(
        spec, lambda: make_agent(agent, base_url=base_url), None, 0, ()
    )
    adaptive = results["adaptive"]
    calls = adaptive.calls
    prompt = sum(int(c["prompt_tokens"] or 0) for c in calls)
    estimate = dry_run([spec], agent, {}, 0, ())["plays"][0]["total"]  # inspects nothing
    truncated = sum(1 for c in calls if c["finish_reason"] == "length")
    figures = [
        (f"{agent} long-1 adaptive: calls", len(calls), "calls", "-"),
        (f"{agent} long-1 adaptive: truncated replies", truncated, "calls", "0"),
        (
            f"{agent} long-1 adaptive: checkpoint fallbacks",
            adaptive.metrics.get("checkpoint_fallbacks", 0),
            "forecasts",
            "-",
        ),
        (f"{agent} long-1 adaptive: prompt tokens (provider usage)", prompt, "tokens", "-"),
        (
            f"{agent} long-1 adaptive: --dry-run prompt-token error vs this run",
            round(100 * abs(estimate["prompt_tokens"] - prompt) / max(1, prompt), 1),
            "%",
            "< 25 %",
        ),
    ]
    return [
        {"name": n, "median": v, "unit": u, "ratio": None, "target": t} for n, v, u, t in figures
    ]


def run(quick: bool) -> list[dict[str, Any]]:
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    specs = [s for seed in seeds for s in _specs(seed)]
    long1 = next(s for s in specs if s.body["assignment"]["id"] == "long-1")
    real = _long_run(long1)
    start = time.perf_counter()
    estimate = dry_run(specs, "openai:bench", {}, 0, ("random", "no-evidence"))
    dry_s = time.perf_counter() - start
    # the stand-in that inspects nothing plays what the schema-answering server answers
    one = dry_run([long1], "openai:bench", {}, 0, ())["plays"][0]["total"]
    base_url = os.environ.get("LABREPLAY_BENCH_LLM_BASE_URL")
    extra = _real_model(long1, base_url) if base_url else []
    return [
        *extra,
        {
            "name": "llm long-1 adaptive: calls per assignment (schema-answering server)",
            "median": real["calls"],
            "unit": "calls",
            "ratio": None,
            "target": "-",
        },
        {
            "name": "llm long-1 adaptive: prompt characters per assignment",
            "median": real["prompt_chars"],
            "unit": "chars",
            "ratio": None,
            "target": "was 1,306,000 (lr-llm-prompts-2)",
        },
        {
            "name": "llm long-1 adaptive: prompt tokens inside the previous call's prefix",
            "median": round(100 * real["cached_share"], 1),
            "unit": "%",
            "ratio": None,
            "target": "was 63.9 % (lr-llm-prompts-2)",
        },
        {
            "name": "llm long-1 adaptive: largest prompt",
            "median": real["largest_prompt"],
            "unit": "chars",
            "ratio": None,
            "target": "was 33,826 (lr-llm-prompts-2)",
        },
        {
            "name": "llm long-1 adaptive: characters changed between consecutive calls (mean)",
            "median": round(real["changed_chars"]),
            "unit": "chars",
            "ratio": None,
            "target": "was 9,061 (lr-llm-prompts-2)",
        },
        {
            "name": f"llm --dry-run of {len(seeds)} seed(s), {len(specs)} assignments, all branches",
            "median": round(dry_s, 2),
            "unit": "s",
            "ratio": None,
            "target": "< 30 s (five seeds)",
        },
        {
            "name": "llm --dry-run calls error on long-1 adaptive vs the real run",
            "median": round(100 * abs(one["calls"] - real["calls"]) / real["calls"], 1),
            "unit": "%",
            "ratio": None,
            "target": "< 25 %",
        },
        *(
            {
                "name": f"llm --dry-run estimated calls, whole protocol, range {end}",
                "median": calls,
                "unit": "calls",
                "ratio": None,
                "target": "-",
            }
            for end, calls in zip(("low", "high"), estimate["range"]["calls"], strict=True)
        ),
    ]


if __name__ == "__main__":
    for figure in run(quick="--quick" in sys.argv):
        print(figure)
