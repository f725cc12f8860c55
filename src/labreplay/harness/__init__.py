"""Serving our environments to harnesses that live outside this process (MCP, inspect_ai)."""
