"""Reference agents on the real datasets, the results store, resume."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from labreplay.store.sqlite import Store
from labreplay.suites.conditions.agents import LeaveTableOutRanker, QuestionAgent, RandomAgent
from labreplay.suites.conditions.questions import agent_view, load_questions, write_questions
from labreplay.suites.conditions.run import run_agent
from labreplay.suites.conditions.runner import leaderboard


def test_agents_satisfy_the_protocol(compiled_all: Any) -> None:
    for agent in (RandomAgent(1), LeaveTableOutRanker(compiled_all.questions[:50])):
        assert isinstance(agent, QuestionAgent)
        assert isinstance(agent.params(), dict)


def test_random_agent_is_deterministic_per_question(compiled_all: Any) -> None:
    views = [agent_view(q) for q in compiled_all.questions[:200]]
    a = [RandomAgent(5).answer(v) for v in views]
    b = [RandomAgent(5).answer(v) for v in reversed(views)][::-1]
    assert a == b


def test_ranker_leaves_the_table_out(compiled_all: Any) -> None:
    """Changing a table's own outcomes must not change the ranker's answers on that table."""
    import json

    questions = compiled_all.questions
    table = questions[0]["meta"]["parent_table_id"]
    altered = json.loads(json.dumps(questions))
    for q in altered:
        if q["meta"]["parent_table_id"] == table:
            q["meta"]["effective_scores"] = list(reversed(q["meta"]["effective_scores"]))
    own = [q for q in questions if q["meta"]["parent_table_id"] == table]
    r1, r2 = LeaveTableOutRanker(questions), LeaveTableOutRanker(altered)
    assert [r1.answer(agent_view(q)) for q in own] == [r2.answer(agent_view(q)) for q in own]


def _is_base_fib(q: dict[str, Any]) -> bool:
    return bool(q["question_type"] == "fib_all" and q["meta"]["variant"] == "no_precedents")


def test_ranker_beats_random_floor_and_store_keeps_everything(
    questions_file: Path, tmp_path: Path
) -> None:
    questions = load_questions(questions_file)
    store_path = tmp_path / "store.db"
    with Store(store_path) as store:
        rnd = run_agent(store, questions_file, questions, RandomAgent(0), seed=0)
        rank = run_agent(store, questions_file, questions, LeaveTableOutRanker(questions), seed=0)
        again = run_agent(store, questions_file, questions, RandomAgent(0), seed=0)
        assert again["cached"] and again["run_id"] == rnd["run_id"]
        for metric, floor in (
            ("mc_all_score", "mc_all_floor_score"),
            ("mc_single_score", "mc_single_floor_score"),
            ("fib_strict", "fib_floor_strict"),
            ("fib_score_given_hit", "fib_floor_score_given_hit"),
        ):
            assert rank[metric] > rank[floor] + 0.05, metric
            # random sits near its exact floor; Score | Hit is a mean over the random agent's
            # few Hits (FIB is asked only off full grids), so its tolerance is 3 SE of that mean
            tolerance = 0.05
            if metric == "fib_score_given_hit":
                hits = round(rnd["fib_hit"] * sum(1 for q in questions if _is_base_fib(q)))
                tolerance = max(tolerance, 3 * 0.5 / max(hits, 1) ** 0.5)
            assert abs(rnd[metric] - rnd[floor]) < tolerance, metric
        events = store.events(rank["run_id"])
        assert len(events) == len(questions) + 1  # the run's header event, then the answers
        assert events[0]["kind"] == "header"
        assert all(e["prev_hash"] == p["hash"] for p, e in itertools.pairwise(events))
        run = store.run(rank["run_id"])
        assert run.suite == "conditions" and run.status == "complete"
        assert store.score_details(rank["run_id"])["summary"]["precedent_lift"]
        board = leaderboard(store)
        assert {r["agent"] for r in board["runs"]} == {"random", "ranker_leave_table_out"}
        # the reference rows beside every precedent lift on the board (issue 36)
        refs = board["precedent_references"][run.spec_id]
        assert refs["exclusion"]["all"]["mc.score"]["contains_zero"]
        assert refs["precedent_ranker"]["all"]["mc.score"]["ci95"][0] > 0
        lift = store.score_details(rank["run_id"])["summary"]["precedent_lift"]["mc_single.score"]
        assert lift["clusters"] < lift["n"] and lift["resampled"] == "source tables"


class _Crashing(RandomAgent):
    def __init__(self, after: int) -> None:
        super().__init__(0)
        self.left = after

    def answer(self, question_view: dict[str, Any]) -> dict[str, Any]:
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return super().answer(question_view)


def test_interrupted_run_resumes_to_the_same_result(compiled_all: Any, tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    write_questions(path, compiled_all.questions[:1200])
    questions = load_questions(path)
    with Store(tmp_path / "a.db") as store:
        with pytest.raises(KeyboardInterrupt):
            run_agent(store, path, questions, _Crashing(after=700), seed=0)
        partial = store.runs()[0]
        assert partial.status == "running"
        # the header event and one full batch of 500 answers survived
        assert len(store.events(partial.run_id)) == 501
        resumed = run_agent(store, path, questions, RandomAgent(0), seed=0)
        assert resumed["resumed"] and resumed["run_id"] == partial.run_id
        chain = store.events(partial.run_id)
    with Store(tmp_path / "b.db") as fresh:
        full = run_agent(fresh, path, questions, RandomAgent(0), seed=0)
        assert [e["hash"] for e in fresh.events(full["run_id"])] == [e["hash"] for e in chain]
    assert {k: v for k, v in full.items() if k not in {"resumed", "cached"}} == {
        k: v for k, v in resumed.items() if k not in {"resumed", "cached"}
    }
