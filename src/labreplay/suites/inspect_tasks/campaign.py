"""`inspect eval labreplay/campaign -T specs=DIR -T store=PATH [-T only=IDS] --model M`.

inspect's model drives our environment through tools: the samples are the branches of each
assignment (`short-1/adaptive`, `short-1/random`, `short-1/no-evidence`, ...), played in that
order by one served run per (specs, store, model): `labreplay.run` in a worker thread with a
bridge agent, as `labreplay campaign serve` (the controls start from the adaptive
branch's pre-campaign forecast, so a control sample waits for its adaptive sample; one random
replicate, one sample each: every replicate is a full campaign of model calls). Each step
the model sees the current observation (or panel checkpoint: answered by the same model) and
calls one typed tool; a reply without a tool call is passed on as the action (an invalid
action, recorded). The harness keeps no conversation across steps: the observation holds the
whole agent-visible state. Runs are written to `store` as agent `inspect:<model>` with
`agent_isolation: "inspect"`; each sample's score is its branch's adaptive AUC, read from the
store after the branch finished.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser, get_model
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolInfo, ToolParams

from labreplay.sdk.agents import allow_mockllm_offline
from labreplay.sdk.harness import ServedRun
from labreplay.suites.campaign.api import load_specs, parse_controls, select_specs
from labreplay.suites.campaign.serve import INSTRUCTIONS, CampaignView, tool_defs

INTERFACE = "inspect"
_SESSIONS: dict[tuple[str, ...], tuple[ServedRun, CampaignView]] = {}
_LOCK = threading.Lock()
WAIT_TURN_S = 3600.0


def _session(
    specs: str, store: str, only: str | None, controls: str, seed: int, model: str
) -> tuple[ServedRun, CampaignView]:
    key = (
        str(Path(specs).resolve()),
        str(Path(store).resolve()),
        only or "",
        controls,
        str(seed),
        model,
    )
    with _LOCK:
        if key not in _SESSIONS:
            chosen = select_specs(load_specs(specs), only)
            options = {"controls": controls, "random_replicates": 1}
            run = ServedRun(
                "campaign", chosen, Path(store), f"inspect:{model}", seed, model, options,
                INTERFACE,
            )  # fmt: skip
            _SESSIONS[key] = (run, CampaignView(chosen))
        return _SESSIONS[key]


def _call(
    session: tuple[ServedRun, CampaignView], tool: str, args: dict[str, object]
) -> dict[str, object]:
    run, view = session
    with run.lock:
        return view.call(run, tool, args)


def tool_infos() -> list[ToolInfo]:
    return [
        ToolInfo(
            name=t.name,
            description=t.description,
            parameters=ToolParams.model_validate(t.input_schema),
        )
        for t in tool_defs()
        if t.name != "observe"
    ]


@solver
def drive_campaign(
    specs: str,
    store: str,
    only: str | None,
    controls: str,
    seed: int,
    max_steps: int,
) -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        session = _session(specs, store, only, controls, seed, str(model))
        target = {"assignment": state.metadata["assignment"], "branch": state.metadata["branch"]}
        tools = tool_infos()
        waited = 0.0
        steps = 0
        while steps < max_steps:
            view = await anyio.to_thread.run_sync(_call, session, "observe", {})
            if view.get("done") or "session" not in view:
                break
            if view["session"] != target:
                if _past(session, target):
                    break  # this branch is finished (e.g. already complete in the store)
                await anyio.sleep(0.05)  # another sample's branch is being played
                waited += 0.05
                if waited > WAIT_TURN_S:
                    break
                continue
            messages: list[ChatMessage] = [
                ChatMessageSystem(content=INSTRUCTIONS),
                ChatMessageUser(
                    content=json.dumps({k: v for k, v in view.items() if k != "rules"})
                    + "\n\nRules: "
                    + str(view.get("rules", ""))
                ),
            ]
            output = await model.generate(messages, tools=tools)
            calls = output.message.tool_calls or []
            if calls:
                name, args = calls[0].function, dict(calls[0].arguments or {})
            else:
                name, args = "act", {"reply": output.completion}
            result = await anyio.to_thread.run_sync(_call, session, name, args)
            state.messages.append(output.message)
            state.messages.append(ChatMessageUser(content=f"{name} -> {json.dumps(result)}"))
            steps += 1
        state.metadata["steps"] = steps
        return state

    return solve


def _past(session: tuple[ServedRun, CampaignView], target: dict[str, str]) -> bool:
    """Has `target`'s branch been played (a later branch started after it)?"""
    run, view = session
    started = [view.session_of(context) for context in run.channel.episodes]
    return target in started and started[-1] != target


@scorer(metrics=[mean()])
def branch_auc(specs: str, store: str, only: str | None, controls: str, seed: int) -> Scorer:
    """The branch's adaptive AUC, read from the store (the model never sees it)."""

    async def score(state: TaskState, target: Target) -> Score:
        from labreplay.sdk.engine import Store, run_key

        run, _ = _session(specs, store, only, controls, seed, str(state.model))
        spec = next(
            s for s in run.specs if s.body["assignment"]["id"] == state.metadata["assignment"]
        )
        run_id = run_key(
            spec.spec_hash,
            run.agent_name,
            run.params,
            seed,
            state.metadata["branch"],
            INTERFACE,
        )

        def read() -> tuple[str, float | None]:
            with Store(store, readonly=True) as db:
                status = db.run(run_id).status
                return status, db.scores(run_id).get("adaptive_auc")

        status, auc = await anyio.to_thread.run_sync(read)
        return Score(
            value=float(auc) if auc is not None else 0.0,
            metadata={"run_id": run_id, "status": status},
        )

    return score


@task
def campaign(
    specs: str,
    store: str,
    only: str | None = None,
    controls: str = "random,no-evidence",
    seed: int = 0,
    max_steps: int = 2000,
) -> Task:
    allow_mockllm_offline()  # `--model mockllm/model` runs without tiktoken's download
    chosen = select_specs(load_specs(specs), only)
    branches = ("adaptive", *parse_controls(controls))
    samples = [
        Sample(
            id=f"{s.body['assignment']['id']}/{b}",
            input=f"Play branch {b} of campaign assignment {s.body['assignment']['id']}.",
            metadata={"assignment": s.body["assignment"]["id"], "branch": b},
        )
        for s in chosen
        for b in branches
    ]
    return Task(
        dataset=MemoryDataset(samples, name="labreplay-campaign"),
        solver=drive_campaign(specs, store, only, controls, seed, max_steps),
        scorer=branch_auc(specs, store, only, controls, seed),
        metadata={"labreplay_suite": "campaign", "store": str(Path(store).resolve())},
    )
