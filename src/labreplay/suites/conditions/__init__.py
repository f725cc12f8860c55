"""The conditions suite (RxnOptBench): screening tables -> condition-selection questions.

Pipeline: `datasets` / `importer` (source rows -> `tables.ScreeningTable` with QC) -> `compiler`
(MC_single, MC_all, FIB and precedent twins under a hashed spec) -> `questions` (release-layout
JSONL, agent view) -> `agents` / `prompts` -> `scoring` + `summary` (METRICS.md) -> `runner`
(results store) -> `demo`.
"""
