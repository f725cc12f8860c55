"""`check_agent(make_agent, suite, spec)`: is this agent fit to run in this suite?

Modelled on Gymnasium's `check_env`: the generic contract first (a name, JSON-able parameters
without anything that looks like a credential, `reset(seed)` if it keeps state), then the
suite's own checks (`Suite.agent_problems`: action/answer form, the visibility firewall with
planted canaries, determinism given the seed). Raises `AgentError` listing every problem, or
returns None.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from labreplay._hashing import canonical_json
from labreplay._provenance import scrub_secrets
from labreplay.compile.spec import EnvironmentSpec
from labreplay.errors import AgentError
from labreplay.suite import Suite, get_suite

# Every planted canary matches this, whatever the suite planted it in.
CANARY = re.compile(r"CANARY-[A-Za-z0-9_:.\-]+")


def contract_problems(agent: object) -> list[str]:
    problems = []
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        problems.append("contract: agent has no non-empty string `name`")
    params_fn = getattr(agent, "params", None)
    if not callable(params_fn):
        problems.append("contract: agent has no params() method")
    else:
        try:
            params = params_fn()
        except Exception as exc:  # the agent's own bug is a finding, not a crash of the check
            problems.append(f"contract: params() raised {_raised(exc)}")
            return problems
        if not isinstance(params, dict):
            problems.append(f"contract: params() returned {type(params).__name__}, not a dict")
        else:
            try:
                canonical_json(params)
            except ValueError as exc:
                problems.append(f"contract: params() is not JSON-able ({exc})")
            if scrub_secrets(params) != params:
                problems.append("contract: params() carries something that looks like a secret")
    reset = getattr(agent, "reset", None)
    if reset is not None and not callable(reset):
        problems.append("contract: `reset` is not callable")
    return problems


def check_agent(
    make_agent: Callable[[], object],
    suite: str | Suite,
    spec: EnvironmentSpec,
    seed: int = 0,
    **options: object,
) -> None:
    """Check agents built by `make_agent` (called for each fresh copy) on `spec` of `suite`."""
    target = get_suite(suite) if isinstance(suite, str) else suite

    def failed(problems: list[str]) -> AgentError:
        return AgentError(f"agent check failed in suite {target.name}: " + "; ".join(problems))

    try:
        probe = make_agent()
    except Exception as exc:
        raise failed([f"build: make_agent() raised {_raised(exc)}"]) from exc
    # a suite whose agents are named built-in policies (configsearch's search methods) hands
    # over a name: the object contract does not apply, the suite's checks do
    problems = [] if isinstance(probe, str) else contract_problems(probe)
    if problems:  # the suite's checks would only trip over the same missing pieces
        raise failed(problems)
    try:
        problems += target.agent_problems(make_agent, spec, seed, **options)
    except AgentError:
        raise
    except Exception as exc:
        # An agent that raises, or that is another suite's agent (no `answer`/`act`), is what
        # this check exists to find: a problem in the one-line report, never a traceback.
        raise failed([f"behaviour: the agent raised {_raised(exc)} in the suite's checks"]) from exc
    if problems:
        raise failed(problems)


def _raised(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


__all__ = ["check_agent", "contract_problems"]
