"""LLM harness figures: our overhead per model turn, and throughput with concurrent requests.

The model side is a local stub server that answers after a fixed delay (labreplay.testing.
fault_server), so the figures measure labreplay and the openai package, not a model. Observations
are real: the first turn and panel checkpoint of a compiled Precursor Genome campaign (short
assignment), so prompt rendering and schema validation run on real-sized state.

Figures:
- harness overhead per turn (median ms): rendering the prompt, parsing + validating the reply
  against the action schema, the response-cache write and the llm_calls store write. The time
  spent inside the HTTP call (SDK + loopback + the server's fixed delay) is excluded by timing
  that call separately.
- model layer per call (median ms): time inside the send (inspect_ai's `Model.generate` on its
  event loop thread, the openai SDK, loopback HTTP) minus the server's delay.
- the same requests (the bodies the layer sent, campaign prompt included) with the bare openai SDK
  and with inspect_ai's bare `Model.generate` (median ms, server delay excluded), for the ratio
  layer / bare SDK and to say how much of it is inspect_ai's own.
- throughput with max_concurrency 8 vs 1 against a server that answers after a fixed delay:
  requests per second at 8, and the ratio to 1 (ideal 8).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labreplay.agents.llm_client import AsyncLLMClient, LLMClient
from labreplay.agents.llm_config import RetryPolicy
from labreplay.store.sqlite import Store
from labreplay.suites.campaign.llm_agent import LLMCampaignAgent
from labreplay.suites.campaign.llm_prompts import campaign_messages
from labreplay.testing import fault_server as stub

SERVER_DELAY_S = 0.02
THROUGHPUT_DELAY_S = 0.1


def _real_observation() -> dict[str, Any]:
    from labreplay.suites.campaign.api import compile_specs
    from labreplay.suites.campaign.env import CampaignEnv

    _, specs, _ = compile_specs(record="precursor-genome", seed=0)
    short = next(s for s in specs if s.body["assignment"]["kind"] == "short")
    env = CampaignEnv(short)
    env.reset(0)
    return env.observation()


def _first_candidate_action(observation: dict[str, Any]) -> str:
    candidate = observation["state"]["candidates"][0]["experiment_id"]
    return f'{{"type": "select_experiment", "experiment_id": "{candidate}"}}'


class _TimedCreate:
    """Wraps the transport's send to time the model layer's part of each call."""

    def __init__(self, create: Callable[..., Any]) -> None:
        self.create = create
        self.seconds: list[float] = []
        self.bodies: list[Any] = []  # what was sent, for the bare-SDK and bare-inspect figures

    def __call__(self, *args: Any) -> Any:
        self.bodies.append(args[0])
        started = time.perf_counter()
        try:
            return self.create(*args)
        finally:
            self.seconds.append(time.perf_counter() - started)


def _overhead(turns: int) -> tuple[float, float, int, list[Any]]:
    observation = _real_observation()
    reply = stub.ok(_first_candidate_action(observation), delay_s=SERVER_DELAY_S)
    with tempfile.TemporaryDirectory() as tmp, stub.StubServer(stub.constant(reply)) as server:
        store = Store(Path(tmp) / "bench.sqlite")
        client = LLMClient("stub", base_url=server.base_url, retry=RetryPolicy(timeout_s=10))
        agent = LLMCampaignAgent(client)
        agent.bind_store(store)
        timed = _TimedCreate(client._sdk.create_sync)
        client._sdk.create_sync = timed  # type: ignore[method-assign]
        run_id, _ = store.open_run(
            suite="campaign",
            spec_hash="bench",
            spec_id="bench",
            branch="adaptive",
            agent=agent.name,
            agent_params=agent.params(),
            seed=0,
        )
        harness, inside = [], []
        for turn in range(turns + 1):
            # A new step number each turn: a new prompt, so no turn is a cache hit.
            observation = {**observation, "step": turn}
            started = time.perf_counter()
            action = agent.act(observation)
            store.record_llm_calls(run_id, agent.drain_calls())
            total = time.perf_counter() - started
            assert action["type"] == "select_experiment", action
            if turn == 0:
                continue  # warm-up: structured-output detection, connection set-up
            harness.append(total - timed.seconds[-1])
            inside.append(timed.seconds[-1] - SERVER_DELAY_S)
        store.close()
        prompt_chars = sum(len(m["content"]) for m in campaign_messages(observation))
    median_ms = statistics.median(harness) * 1e3, statistics.median(inside) * 1e3
    return *median_ms, prompt_chars, timed.bodies


def _bare_sdk_ms(bodies: list[Any]) -> float:
    """Median wall time of the layer's own requests sent with the bare openai SDK (no inspect,
    no harness) minus the server's delay: the floor under the model layer."""
    import openai

    reply = stub.ok('{"answer": "A"}', delay_s=SERVER_DELAY_S)
    with stub.StubServer(stub.constant(reply)) as server:
        sdk = openai.OpenAI(api_key="no-key-needed", base_url=server.base_url, max_retries=0)
        seconds = []
        for body in bodies:
            started = time.perf_counter()
            sdk.chat.completions.create(**body, timeout=10)
            seconds.append(time.perf_counter() - started)
        sdk.close()
    return (statistics.median(seconds[1:]) - SERVER_DELAY_S) * 1e3


def _bare_inspect_ms(bodies: list[Any]) -> float:
    """The same requests through inspect_ai's `Model.generate` alone (its openai-api provider,
    one event loop, no labreplay code in the timed part) minus the server's delay."""
    import asyncio

    from inspect_ai.model import get_model

    from labreplay.agents.llm_inspect import generate_args

    reply = stub.ok('{"answer": "A"}', delay_s=SERVER_DELAY_S)
    with stub.StubServer(stub.constant(reply)) as server:
        model = get_model(
            "openai-api/bench/stub", base_url=server.base_url, api_key="no-key-needed",
            max_retries=0,
        )  # fmt: skip
        requests = [generate_args(body, "openai-api") for body in bodies]

        async def timed() -> list[float]:
            seconds = []
            for messages, config in requests:
                started = time.perf_counter()
                await model.generate(input=messages, config=config)
                seconds.append(time.perf_counter() - started)
            return seconds

        seconds = asyncio.run(timed())
    return (statistics.median(seconds[1:]) - SERVER_DELAY_S) * 1e3


def _throughput(requests: int, concurrency: int) -> float:
    reply = stub.ok('{"answer": "A"}', delay_s=THROUGHPUT_DELAY_S)
    schema = {"type": "object", "required": ["answer"]}
    jobs = [([{"role": "user", "content": f"question {i}"}], schema) for i in range(requests)]
    with stub.StubServer(stub.constant(reply)) as server:
        client = AsyncLLMClient(
            "stub",
            base_url=server.base_url,
            max_concurrency=concurrency,
            structured="off",
            retry=RetryPolicy(timeout_s=10),
        )
        started = time.perf_counter()
        replies = client.run_many(jobs)
        elapsed = time.perf_counter() - started
    assert all(r.ok for r in replies)
    return requests / elapsed


def run(quick: bool) -> list[dict[str, Any]]:
    turns = 15 if quick else 60
    harness_ms, client_ms, prompt_chars, bodies = _overhead(turns)
    requests = 32 if quick else 96
    bare_ms, inspect_ms = _bare_sdk_ms(bodies), _bare_inspect_ms(bodies)
    serial = _throughput(requests, 1)
    parallel = _throughput(requests, 8)
    return [
        {
            "name": f"llm turn harness overhead (render+validate+store, {prompt_chars} char prompt)",
            "median": round(harness_ms, 3),
            "unit": "ms",
            "ratio": None,
            "target": "< 5 ms (accounting on: usage fields, meter, llm_calls write)",
        },
        {
            "name": "llm call model layer (inspect_ai + openai SDK + loopback HTTP, server delay "
            "excluded)",
            "median": round(client_ms, 3),
            "unit": "ms",
            "ratio": round(client_ms / bare_ms, 2),
            "target": f"ratio to the bare openai SDK call ({bare_ms:.3f} ms); < 20 ms",
        },
        {
            "name": "llm call inspect_ai alone (bare Model.generate, the same requests, server "
            "delay excluded)",
            "median": round(inspect_ms, 3),
            "unit": "ms",
            "ratio": round(inspect_ms / bare_ms, 2),
            "target": "ratio to the bare openai SDK call: inspect_ai's own share of the layer's",
        },
        {
            "name": f"llm throughput max_concurrency 8 vs 1 ({THROUGHPUT_DELAY_S * 1e3:g} ms server)",
            "median": round(parallel, 2),
            "unit": "req/s",
            "ratio": round(parallel / serial, 2),
            "target": "ratio > 5",
        },
    ]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure)
