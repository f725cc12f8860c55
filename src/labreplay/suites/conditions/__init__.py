"""The conditions suite (RxnOptBench): screening tables -> condition-selection questions.

Pipeline: `datasets` / `importer` (source rows -> `tables.ScreeningTable` with QC) -> `compiler`
(MC_single, MC_all, FIB and precedent twins under a hashed spec) -> `questions` (release-layout
JSONL, agent view) -> `agents` / `prompts` -> `scoring` + `summary` (METRICS.md) -> `runner`
(results store) -> `demo`.
"""

from labreplay.suites.conditions.agents import LeaveTableOutRanker, QuestionAgent, RandomAgent
from labreplay.suites.conditions.prompts import normalise_answer, parse_answer, render_prompt
from labreplay.suites.conditions.questions import agent_view, load_questions, write_questions

__all__ = [
    "LeaveTableOutRanker",
    "QuestionAgent",
    "RandomAgent",
    "agent_view",
    "load_questions",
    "normalise_answer",
    "parse_answer",
    "render_prompt",
    "write_questions",
]
