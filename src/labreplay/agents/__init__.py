"""Agents behind one contract per suite: reference agents, controls, and LLM agents."""

from labreplay.agents.base import Agent, CallRecord
from labreplay.agents.contracts import CampaignAgent, Optimizer, QuestionAgent

__all__ = ["Agent", "CallRecord", "CampaignAgent", "Optimizer", "QuestionAgent"]
