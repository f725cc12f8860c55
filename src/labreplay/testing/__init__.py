"""Testing kit for labreplay users and suite authors.

- `check_agent(make_agent, suite, spec)`: the agent contract plus the suite's own checks
  (form, firewall canaries, determinism), like Gymnasium's `check_env`;
- `fault_server`: an OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on purpose
  (rate limits, server errors, garbage bodies), for exercising LLM fault handling without a
  model.
"""

from labreplay.testing.checks import check_agent, contract_problems

__all__ = ["check_agent", "contract_problems"]
