"""Fixtures of the report tests: a real store with three reference agents on four sdl1
assignments (adaptive + both controls each), and an HTML structure reader."""

from __future__ import annotations

import os
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from labreplay.compile.spec import EnvironmentSpec


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
