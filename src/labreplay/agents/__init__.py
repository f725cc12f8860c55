"""Agents behind one contract per suite: reference agents, controls, and LLM agents."""
