"""inspect's `mockllm/model`, offline: the one patch lives in the core
(`labreplay.agents.inspect_offline`), shared with the LLM agents' inspect route."""

from __future__ import annotations

from labreplay.sdk.agents import allow_mockllm_offline, mockllm_offline_state

_state = mockllm_offline_state  # the same dict: tests reset "unavailable" through it

__all__ = ["allow_mockllm_offline"]
