"""Testing kit for labreplay users and suite authors.

- `check_agent(make_agent, suite, spec)`: the agent contract plus the suite's own checks
  (form, firewall canaries, determinism), like Gymnasium's `check_env`;
- `check_suite(suite, specs, agent)`: the engine's promises for a suite (unknown options
  refused, determinism, resume reads back, `store verify` and recomputed scores);
- `fault_server`: an OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on purpose
  (rate limits, server errors, garbage bodies), for exercising LLM fault handling without a
  model.
"""

from labreplay.testing.checks import check_agent, contract_problems
from labreplay.testing.suite_checks import check_suite

__all__ = ["check_agent", "check_suite", "contract_problems"]
