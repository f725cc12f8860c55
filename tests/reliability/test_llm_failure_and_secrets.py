"""A dead endpoint is a failed run, not a ranked one; the API key never reaches the store.

Real sockets on 127.0.0.1 throughout: a port nobody listens on, and the fault server
answering with what the test scripts (401s, or a 200 that echoes the Authorization header).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from tests.conftest import free_port

from labreplay.store.sqlite import Store
from labreplay.testing.fault_server import StubReply, StubServer, completion_body, ok

from .conftest import assert_one_line_error, run_cli, run_cli_in_process

KEY = "sk-labreplay-test-0123456789abcdefSECRET"


def _argv(specs: Path, store: Path, only: str, base_url: str, *extra: str) -> list[str]:
    return ["campaign", "run", "--specs", str(specs), "--store", str(store), "--only", only,
            "--agent", "openai:stub", "--base-url", base_url, "--timeout", "2", "--controls",
            "random", *extra]  # fmt: skip


def _run(specs: Path, store: Path, only: str, base_url: str, *extra: str) -> tuple[int, str]:
    """`campaign run` of the stub model, the key set, in a subprocess (the key tests read
    what a real process writes)."""
    argv = _argv(specs, store, only, base_url, *extra)
    proc = run_cli(*argv, env={"OPENAI_API_KEY": KEY}, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr


def _run_here(
    monkeypatch: pytest.MonkeyPatch, specs: Path, store: Path, only: str, base_url: str
) -> tuple[int, str]:
    """As `_run`, the CLI in this process (for the exit-code and message checks)."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    proc = run_cli_in_process(*_argv(specs, store, only, base_url))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr


def _board(store: Path) -> dict[str, object]:
    proc = run_cli_in_process("campaign", "leaderboard", "--store", str(store), "--json")
    assert proc.returncode == 0, proc.stderr
    board: dict[str, object] = json.loads(proc.stdout)
    return board


def test_closed_port_run_fails_is_unranked_and_resumes(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.sqlite"
    port = free_port()
    code, err = _run_here(
        monkeypatch, specs_dir, store, smallest_assignment, f"http://127.0.0.1:{port}/v1"
    )
    assert code == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "connection" in lines[0].lower(), err
    with Store(store, readonly=True) as db:
        runs = db.runs()
        assert {r.status for r in runs if r.agent == "openai:stub"} == {"failed"}
        failed = next(r for r in runs if r.status == "failed")
        assert failed.summary is not None and failed.summary["failed_call_share"] == 1.0
    # A working agent on the same store: the board ranks it, and not the failed run.
    done = run_cli_in_process(
        "campaign",
        "run",
        "--specs",
        str(specs_dir),
        "--store",
        str(store),
        "--only",
        smallest_assignment,
        "--agent",
        "bayes",
        "--random-replicates",
        "1",
    )
    assert done.returncode == 0, done.stderr
    board = _board(store)
    # (`random` and `no-evidence` are reference rows, never ranked: bayes stands in here.)
    systems = [row["system"] for row in board["rows"]]  # type: ignore[index]
    assert systems == ["bayes"], board
    assert board["failed"] == ["openai:stub"]
    report = run_cli_in_process("report", "--store", str(store), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert 'id="campaign-failed"' in html and "openai:stub" in html

    # The endpoint comes back (answering every schema, forecasts included: a run whose
    # checkpoints all fell back is failed too): the same command resumes the failed run and
    # completes it.
    from labreplay.testing.schema_server import schema_responder

    with StubServer(schema_responder(), model="stub", port=port) as stub:
        code, err = _run_here(monkeypatch, specs_dir, store, smallest_assignment, stub.base_url)
    assert code == 0, err
    with Store(store, readonly=True) as db:
        statuses = {r.status for r in db.runs() if r.agent == "openai:stub"}
    assert statuses == {"complete"}


@pytest.mark.parametrize("status", [401, 403])
def test_unauthorized_key_is_a_failed_run(
    status: int, specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    body = json.dumps({"error": {"message": "invalid api key", "type": "auth"}}).encode()
    with StubServer(lambda _r, _n: StubReply(status, body)) as stub:
        code, err = _run(specs_dir, tmp_path / "s.sqlite", smallest_assignment, stub.base_url)
        assert len(stub.chat_requests) == 1  # a dead key is not asked again and again
    assert code == 1 and str(status) in err, err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err
    board = run_cli_in_process(
        "campaign", "leaderboard", "--store", str(tmp_path / "s.sqlite"), "--json"
    )
    assert board.returncode == 0 and json.loads(board.stdout)["rows"] == []


def test_unresolvable_host_is_a_failed_run(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    # .invalid never resolves (RFC 6761): a DNS failure, not a hang.
    url = "http://labreplay.invalid/v1"
    code, err = _run(specs_dir, tmp_path / "s.sqlite", smallest_assignment, url)
    assert code == 1, err
    with Store(tmp_path / "s.sqlite", readonly=True) as db:
        assert {r.status for r in db.runs()} == {"failed"}


class _EchoHandler(BaseHTTPRequestHandler):
    """Any POST: even requests get a 200 completion whose text quotes the Authorization header
    and the full request path (with its query); odd ones a 400 whose message quotes both."""

    seen: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        type(self).seen.append(auth)
        echo = f"header was {auth}; url {self.path}"
        if len(self.seen) % 2:
            status, body = 200, completion_body(json.dumps({"type": "stop", "note": echo}))
        else:
            status, body = 400, json.dumps({"error": {"message": f"bad request: {echo}"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo_server() -> Iterator[str]:
    _EchoHandler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_echoed_key_leaves_no_trace(
    echo_server: str, specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    store = tmp_path / "s.sqlite"
    query_key = "QUERYSECRET-987654321"
    code, err = _run(specs_dir, store, smallest_assignment, echo_server)
    assert code in (0, 1), err
    # A key in the base URL's query (some gateways want one), echoed back in the reply path.
    code, err = _run(specs_dir, store, smallest_assignment, f"{echo_server}?api-key={query_key}")
    assert code in (0, 1), err
    seen = _EchoHandler.seen
    assert len(seen) >= 2 and all(KEY in h for h in seen)  # the server got (and echoed) it
    out = tmp_path / "export"
    proc = run_cli_in_process(
        "export", "--store", str(store), "--out", str(out), "--formats", "jsonl,csv,parquet"
    )
    assert proc.returncode == 0, proc.stderr
    report = run_cli_in_process("report", "--store", str(store), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    files = [store, *out.iterdir(), *(tmp_path / "report").iterdir()]
    files += [p for p in store.parent.iterdir() if p.name.startswith(store.name)]
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data, path
        assert query_key.encode() not in data, path
    with Store(store, readonly=True) as db:
        assert db.event_count() > 0
        assert any(
            "***" in json.dumps(e["payload"]) for r in db.runs() for e in db.events(r.run_id)
        )


def test_a_slow_endpoint_is_not_given_up_on_but_a_dead_one_is() -> None:
    """Timeouts mean busy: every call keeps its own retries. A refused connection means dead:
    after one failed call, later calls are recorded as failed without being sent."""
    from labreplay.agents.llm_client import LLMClient
    from labreplay.agents.llm_config import RetryPolicy
    from labreplay.testing.fault_server import scripted, slow

    schema = {"type": "object"}
    messages = [{"role": "user", "content": "answer {}"}]
    # 3 s: the prompt reply must come within the timeout on a loaded machine (0.3 s did not)
    policy = RetryPolicy(max_retries=0, timeout_s=3.0)
    with StubServer(scripted([slow("{}", delay_s=60.0), ok("{}")])) as server:
        client = LLMClient("stub", base_url=server.base_url, retry=policy)
        first, record = client.chat(messages, schema)
        assert first is None and "timed out" in str(record.get("error"))
        second, record = client.chat(messages, schema)
        assert second is not None and record.get("error") is None
        assert len(server.chat_requests) == 2
    dead = LLMClient("stub", base_url=f"http://127.0.0.1:{free_port()}/v1", retry=policy)
    assert dead.chat(messages, schema)[0] is None
    _, skipped = dead.chat(messages, schema)
    assert str(skipped.get("error")).startswith("not sent")


def test_conditions_run_against_a_dead_endpoint_fails_and_resumes(
    tmp_path: Path, buchwald_questions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = buchwald_questions  # `conditions compile` once per session: read only
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(full.read_text(encoding="utf-8").splitlines(True)[:4]))
    store = tmp_path / "s.sqlite"
    port = free_port()
    argv = [
        "conditions",
        "run",
        "--questions",
        str(questions),
        "--agent",
        "llm",
        "--model",
        "stub",
        "--store",
        str(store),
    ]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    dead = run_cli_in_process(*argv)
    line = assert_one_line_error(dead, code=1)
    assert "model calls failed" in line and "connection" in line
    with Store(store, readonly=True) as db:
        assert {r.status for r in db.runs()} == {"failed"}
    board = run_cli_in_process("conditions", "leaderboard", "--store", str(store), "--json")
    assert board.returncode == 0 and json.loads(board.stdout)["runs"] == []
    from labreplay.testing.schema_server import schema_responder

    # back, answering every schema (4 replies that all break it would be a failed run too)
    with StubServer(schema_responder(), port=port) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        back = run_cli_in_process(*argv)
    assert back.returncode == 0, back.stderr
    with Store(store, readonly=True) as db:
        assert {r.status for r in db.runs()} == {"complete"}


def _escaped(key: str) -> str:
    """The key as JSON text may spell it: every other character a `\\uXXXX` escape."""
    return "".join(f"\\u{ord(c):04x}" if i % 2 == 0 else c for i, c in enumerate(key))


def test_escaped_and_base64_echoed_key_is_stored_nowhere(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    """Defect: scrubbing ran before JSON decoding, so a key echoed as `\\u0073k-...` inside the
    reply's JSON text was decoded into events, the response cache and exports."""
    import base64

    b64 = base64.b64encode(f"user:{KEY}".encode()).decode()
    # Raw JSON text (not json.dumps'd): the agent's decoder turns the escapes into the key.
    answer = '{"type": "stop", "note": "' + _escaped(KEY) + " and " + b64 + '"}'
    store = tmp_path / "s.sqlite"
    with StubServer(lambda _r, _n: ok(answer), model="stub") as stub:
        code, err = _run(specs_dir, store, smallest_assignment, stub.base_url)
    assert code in (0, 1), err
    out = tmp_path / "export"
    proc = run_cli_in_process(
        "export", "--store", str(store), "--out", str(out), "--formats", "jsonl,csv"
    )
    assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for path in [store, *out.iterdir()]:
        data = path.read_bytes()
        decoded = data.decode("utf-8", errors="replace")
        assert KEY not in decoded and KEY.encode() not in data, path
        assert _escaped(KEY)[:30] not in decoded, path
        assert b64[8:30] not in decoded, path
    with Store(store, readonly=True) as db:
        texts = [json.dumps(e["payload"]) for r in db.runs() for e in db.events(r.run_id)]
    assert any("***" in t for t in texts)
    proc = run_cli_in_process("store", "verify", "--store", str(store))
    assert proc.returncode == 0, proc.stderr  # scrubbed before hashing: the chain verifies


def test_scrub_matches_every_spelling_of_a_key() -> None:
    from labreplay._provenance import register_secret, scrub_json_value, scrub_text

    register_secret(KEY)
    doubled = json.dumps(json.dumps({"note": KEY}), ensure_ascii=True)
    upper = "".join(f"\\u{ord(c):04X}" for c in KEY)
    for text in (KEY, _escaped(KEY), doubled, upper, base64_of(KEY), "x" + base64_of("ab" + KEY)):
        assert "***" in scrub_text(text), text
        assert KEY not in scrub_text(text)
    assert scrub_json_value({"a": [KEY], KEY: 1}) == {"a": ["***"], "***": 1}
    assert scrub_text("max_tokens=12, plain words") == "max_tokens=12, plain words"


def base64_of(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()
