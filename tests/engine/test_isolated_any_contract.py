"""`IsolatedAgent` forwards whatever methods the suite's contract declares, so a fourth suite's
agents get `--isolate` with no change in the core."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from labreplay.agents.isolated import AgentRaised, IsolatedAgent

CONTRACT = """
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Guesser(Protocol):
    name: str

    def params(self) -> dict[str, Any]: ...

    def guess(self, clue: dict[str, Any]) -> dict[str, Any]: ...

    def learn(self, outcome: dict[str, Any]) -> None: ...
"""

AGENT = """
class Halver:
    name = "halver"

    def __init__(self):
        self.seen = []

    def params(self):
        return {"rule": "halve"}

    def guess(self, clue):
        return {"value": clue["high"] / 2, "seen": len(self.seen)}

    def learn(self, outcome):
        if outcome.get("boom"):
            raise ValueError("told to fail")
        self.seen.append(outcome)

    def private(self):
        return "not in the contract"
"""


def test_a_fourth_suites_contract_is_forwarded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "guess_contract.py").write_text(CONTRACT, encoding="utf-8")
    (tmp_path / "guess_agents.py").write_text(AGENT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the child imports from where the command runs
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = IsolatedAgent("guess_agents:Halver", "guess_contract:Guesser", timeout_s=30)
    try:
        from guess_contract import Guesser  # type: ignore[import-not-found]

        assert isinstance(agent, Guesser) and agent.name == "halver"
        assert sorted(agent.methods) == ["guess", "learn", "params"]
        assert agent.guess({"high": 10}) == {"value": 5.0, "seen": 0}
        agent.learn({"ok": True})
        assert agent.guess({"high": 4}) == {"value": 2.0, "seen": 1}  # state lives in the child
        with pytest.raises(AgentRaised, match="told to fail"):
            agent.learn({"boom": True})
        with pytest.raises(AttributeError):
            agent.private  # noqa: B018 -- not in the contract: not forwarded
    finally:
        agent.close()
        sys.modules.pop("guess_contract", None)
