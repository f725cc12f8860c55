"""Fixtures of the report tests: a real store with three reference agents on four sdl1
assignments (adaptive + both controls each), the same store with conditions and configsearch
runs added, and an HTML structure reader."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec
from labreplay.runtime.trajectory import Trajectory
from labreplay.store import Store


@pytest.fixture(scope="session")
def report_specs(compiled_campaign: Callable[..., Any]) -> list[EnvironmentSpec]:
    if not os.environ.get("LABREPLAY_DATA_DIR"):
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    _, specs, _ = compiled_campaign(record="precursor-genome", seed=0)  # the sdl1 protocol
    wanted = ("short-1", "long-1", "long-2", "long-3")  # the report shows the long board
    return [s for w in wanted for s in specs if s.body["assignment"]["id"] == w]


@pytest.fixture(scope="session")
def campaign_store(
    tmp_path_factory: pytest.TempPathFactory, report_specs: list[EnvironmentSpec]
) -> Path:
    from labreplay.store import Store
    from labreplay.suites.campaign.runner import run_assignments

    path = tmp_path_factory.mktemp("store") / "campaign.sqlite"
    with Store(path) as store:
        for agent in ("bayes", "no-evidence", "random"):  # random is a reference row
            run_assignments(report_specs, agent, store, seed=0)
    return path


def add_configsearch_runs(store: Store) -> None:
    """Two optimisers over three seeds in the shapes configsearch stores (its agent parameters
    are large nested mappings, which the report must not print)."""
    params: dict[str, Any] = {
        "budget": 6,
        "init": 2,
        "models": ["rf-scm"],
        "model_params": {"rf-scm": {"max_features": 0.33, "n_estimators": 50}},
        "n_total": 300,
        "space": "895e3fb96c94",
        "task": "band_gap",
    }
    store.put_spec("configsearch", "band_gap", "band_gap", "c" * 64, "{}")
    for agent in ("bo", "random"):
        for seed in range(3):
            run_id, _ = store.open_run(
                suite="configsearch",
                spec_hash="c" * 64,
                spec_id="band_gap",
                branch="main",
                agent=agent,
                agent_params={**params, "cost_alpha": 0 if agent == "bo" else None},
                seed=seed,
            )
            trajectory = Trajectory("c" * 64)
            maes = [0.4 / (1 + k + seed / 7) for k in range(6)]
            for k, mae in enumerate(maes):
                config = {"r": k / 5, "n": 4 + k, "s": 1 + k % 3}
                trajectory.append("evaluation", {"config": config, "mae": mae})
                best = min(maes[: k + 1])
                trajectory.append("step", {"step": k + 1, "config": config, "best_so_far": best})
            store.append_events(run_id, trajectory.events)
            best = [min(maes[: k + 1]) for k in range(len(maes))]
            store.put_scores(run_id, {"best_mae": best[-1], "steps": 6}, {"trace": best})
            store.finish_run(run_id, "complete", {})
    # an exhaustive sweep over a small grid: the claims table is computed from it
    sweep_id, _ = store.open_run(
        suite="configsearch",
        spec_hash="c" * 64,
        spec_id="band_gap",
        branch="sweep/exhaustive",
        agent="exhaustive",
        agent_params={**params, "problem": "sweep", "min_test_points": 30},
        seed=42,
    )
    trajectory = Trajectory("c" * 64)
    for r in (0.0, 0.5):
        for n in (4, 8, 24, 48):
            for s in (1, 2, 4, 10):
                mae = 0.3 + 0.1 * r + 0.5 / n + 0.01 * s
                config = {"r": r, "n": n, "s": s}
                trajectory.append("evaluation", {"config": config, "mae": mae})
    store.append_events(sweep_id, trajectory.events)
    store.put_scores(sweep_id, {"best_mae": 0.32}, {})
    store.finish_run(sweep_id, "complete", {})


@pytest.fixture(scope="session")
def three_suite_store(tmp_path_factory: pytest.TempPathFactory, campaign_store: Path) -> Path:
    import labreplay
    from labreplay.suites.conditions.compiler import compile_datasets
    from labreplay.suites.conditions.questions import load_questions
    from labreplay.suites.conditions.report import write_compiled
    from labreplay.suites.conditions.runner import question_spec

    folder = tmp_path_factory.mktemp("three-suites")
    path = folder / "runs.sqlite"
    shutil.copyfile(campaign_store, path)
    questions = folder / "mitsunobu.jsonl"
    data_dir = Path(os.environ["LABREPLAY_DATA_DIR"])
    write_compiled(compile_datasets(["edbo_mitsunobu"], data_dir, seed=0), questions)
    with Store(path) as store:
        for agent in ("random", "ranker"):
            labreplay.run(
                "conditions",
                [question_spec(questions, load_questions(questions))],
                agent,
                store,
                seed=0,
                questions=questions,
            )
        add_configsearch_runs(store)
    return path


class Structure(HTMLParser):
    """Tables (id -> body rows of cell texts), images (id, src) and every URL-bearing attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[dict[str, str]] = []
        self.urls: list[str] = []
        self.tags: set[str] = set()
        self._table: str | None = None
        self._in_body = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        self.urls.extend(a[k] for k in ("src", "href", "action", "data") if k in a)
        if tag == "table":
            self._table = a.get("id", f"table-{len(self.tables)}")
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def parse_html(text: str) -> Structure:
    parser = Structure()
    parser.feed(text)
    return parser


def columns(rows: list[list[str]], index: int) -> list[str]:
    return [r[index] for r in rows]


__all__: list[Any] = ["Structure", "columns", "parse_html"]
