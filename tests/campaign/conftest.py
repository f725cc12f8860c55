"""Shared fixtures for the campaign suite tests: the real records, compiled once; the live
service's helpers (the CLI in this process, a free port, a lab's request, `serve_with_lab`)."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import free_port
from tests.reliability.conftest import run_cli_in_process

from labreplay.cli.main import run
from labreplay.compile.spec import EnvironmentSpec
from labreplay.records import Record


@pytest.fixture(scope="session")
def data_dir() -> Path:
    value = os.environ.get("LABREPLAY_DATA_DIR")
    if not value:
        pytest.fail("LABREPLAY_DATA_DIR must point at the shared real data")
    return Path(value)


@pytest.fixture(scope="session")
def pg_records(data_dir: Path) -> list[Record]:
    from labreplay.suites.campaign.api import load_records

    return load_records("precursor-genome", data_dir)


@pytest.fixture(scope="session")
def pg_compiled(
    compiled_campaign: Callable[..., tuple[Any, list[EnvironmentSpec], dict[str, Any]]],
) -> tuple[Any, list[EnvironmentSpec], dict[str, Any]]:
    return compiled_campaign(record="precursor-genome", seed=0)


@pytest.fixture(scope="session")
def pg_specs(
    pg_compiled: tuple[Any, list[EnvironmentSpec], dict[str, Any]],
) -> list[EnvironmentSpec]:
    return pg_compiled[1]


@pytest.fixture
def modified_data_dir(data_dir: Path, tmp_path: Path) -> Path:
    """A data dir whose Precursor Genome file has one outcome changed; the (large, untouched)
    pipeline folder is linked, not copied."""
    root = tmp_path / "data"
    (root / "precursor_genome").mkdir(parents=True)
    (root / "alab_pipeline").symlink_to(data_dir / "alab_pipeline", target_is_directory=True)
    from labreplay.suites.campaign.datafiles import PG_FILE

    lines = (data_dir / PG_FILE).read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["reaction_category"] = (
        "unreacted" if row["reaction_category"] != "unreacted" else "transformed"
    )
    lines[0] = json.dumps(row)
    (root / PG_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def plate_card(name: str, rest: str) -> str:
    """A card template for a generated `plate.csv` grouped by ligand: the card's head, with
    `{sha}` (the file's sha256) and `{table}` (lines of [table]) left to fill, then `rest`
    (from [experiment] on, braces doubled as `str.format` reads them)."""
    return f'card_version = 1\nname = "{name}"\n' + _PLATE_HEAD + rest


_PLATE_HEAD = """\
grouping = ["ligand"]

[[sources]]
path = "plate.csv"
sha256 = "{sha}"

[table]
file = "plate.csv"
{table}
"""


TOKEN = "a-test-token-of-the-lab-0123456789"  # the live service's bearer token in the tests

# A lab posting to `campaign live serve` from a thread: lab(spec, base url, answers), where it
# appends the (status, error) of each post it means to count.
LabThread = Callable[[EnvironmentSpec, str, list[tuple[int, str]]], None]

# `serve_with_lab`: serve(lab, *argv) -> (refusals, events)
ServeWithLab = Callable[..., tuple[list[tuple[int, str]], list[dict[str, Any]]]]


def cli(*args: str) -> tuple[int, str, str]:
    """The CLI in this process: exit code, stdout, stderr."""
    proc = run_cli_in_process(*args)
    return proc.returncode, proc.stdout, proc.stderr


def lab_request(url: str, token: str, body: bytes | None = None) -> tuple[int, Any]:
    """A lab's GET (no body) or POST to the live service: (status, JSON answer); (0, {}) when
    nothing answers (not serving yet, or no more)."""
    request = urllib.request.Request(url, data=body, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return int(refused.code), json.loads(refused.read())
    except OSError:
        return 0, {}


@pytest.fixture
def serve_with_lab(
    campaign_specs_source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ServeWithLab:
    """serve(lab, *argv) -> (refusals, events): `campaign live serve --only short-1 ... *argv`
    in this process while `lab` posts from a thread; checks that the service exits 0, that
    every refusal the lab counted is recorded in the run, in order, and that the store
    verifies. `refusals`: the lab's (status, error) answers other than 200."""
    from labreplay.store.sqlite import Store
    from labreplay.suites.campaign.api import load_specs, select_specs

    def serve(lab: LabThread, *argv: str) -> tuple[list[tuple[int, str]], list[dict[str, Any]]]:
        [spec] = select_specs(load_specs(campaign_specs_source), "short-1")
        port, store = free_port(), tmp_path / "live.sqlite"
        campaign = urllib.parse.quote(spec.spec_id, safe="")
        answers: list[tuple[int, str]] = []
        thread = threading.Thread(
            target=lab,
            args=(spec, f"http://127.0.0.1:{port}/v1/campaigns/{campaign}", answers),
            daemon=True,
        )
        thread.start()
        monkeypatch.setenv("LABREPLAY_LIVE_TOKEN", TOKEN)
        code, out, err = cli("campaign", "live", "serve", "--specs", str(campaign_specs_source),
                             "--only", "short-1", "--store", str(store), "--port", str(port),
                             "--result-wait-s", "20", "--json", *argv)  # fmt: skip
        thread.join(timeout=30)
        assert code == 0, err
        [result] = json.loads(out)
        with Store(store) as db:
            events = db.events(result["run_id"])
        refusals = [a for a in answers if a[0] != 200]
        recorded = [e["payload"]["error"] for e in events
                    if e["kind"] == "lab" and not e["payload"]["accepted"]]  # fmt: skip
        assert recorded == [error for _, error in refusals]
        assert cli("store", "verify", "--store", str(store))[0] == 0
        return refusals, events

    return serve


def refused_card(card: Path, field: str, value: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Compile `card`: exit 2, one line naming the card, the field and the value, nothing
    written and the card unchanged. Returns the line."""
    before = card.read_bytes()
    out = card.parent / "specs"
    code = run(["campaign", "compile", "--record-card", str(card), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    shown = value if len(value) <= 80 else value[:70]  # a long value is cut to 80 characters
    assert card.name in err and field in err and shown in err, err
    assert not out.exists() and card.read_bytes() == before
    return err
