"""Policies behind one protocol: reference agents, controls, and LLM agents."""

from labreplay.agents.base import Agent, CallRecord

__all__ = ["Agent", "CallRecord"]
