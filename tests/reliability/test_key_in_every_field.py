"""An API key handed back in any field and any spelling is stored, exported and printed nowhere.

A server (the fault server on 127.0.0.1, `echo_key`) echoes the key it was sent in the reply's
`model` field, in the reply's content and in error bodies: plainly, `\\u`-escaped, percent-encoded
(upper, lower, partly, twice), base64, as HTML references, and split in two halves across fields.
An agent copies the key from its environment into its params, an exception and an action. Then
the SQLite file, every export and the command's stdout/stderr are searched for every spelling.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from labreplay.testing.fault_server import (
    StubReply,
    StubServer,
    completion_body,
    echo_key,
    error_reply,
)

from .conftest import run_cli, run_cli_in_process

KEY = "sk-proj-Zq8Xw3Vt6Ry1Lp0Mn5Kb2Jh7Gf4Dc9Sa"
HALF = len(KEY) // 2


def _percent(key: str, upper: bool = True, every: int = 1, twice: bool = False) -> str:
    out = []
    for i, c in enumerate(key):
        if i % every:
            out.append(c)
            continue
        code = f"{ord(c):02X}" if upper else f"{ord(c):02x}"
        out.append(("%25" if twice else "%") + code)
    return "".join(out)


def spellings(key: str) -> dict[str, str]:
    """Every spelling of `key` a server may hand back (as text inside a JSON string value)."""
    return {
        "plain": key,
        "json-escaped": "".join(f"\\u{ord(c):04x}" for c in key),
        "json-escaped-mixed": "".join(
            f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(key)
        ),
        "percent-upper": _percent(key),
        "percent-lower": _percent(key, upper=False),
        "percent-partial": _percent(key, every=3),
        "percent-twice": _percent(key, twice=True),
        "base64": base64.b64encode(f"user:{key}".encode()).decode(),
        "base64-urlsafe": base64.urlsafe_b64encode(key.encode()).decode(),
        "html": "".join(f"&#{ord(c)};" for c in key),
        "html-hex": "".join(f"&#x{ord(c):X};" for c in key),
        "upper-case": key.upper(),
    }


def forbidden(key: str) -> dict[str, str]:
    """What must appear nowhere: each spelling (its middle half, which holds only the key's
    characters), and each half of the key as the split echo sends it."""
    found = {}
    for name, text in spellings(key).items():
        found[name] = text
        found[name + " (middle)"] = text[len(text) // 4 : 3 * len(text) // 4]
    found["first half"], found["second half"] = key[:HALF], key[HALF:]
    return found


def assert_no_key(text: str, where: str, key: str = KEY) -> None:
    for name, needle in forbidden(key).items():
        assert needle not in text, f"{where}: the key ({name}) {needle!r}"


def _echo(key: str, n: int, answer: dict[str, object]) -> StubReply:
    """Even requests: a 400 whose error body quotes the key (every spelling, and its second
    half); odd ones: a 200 naming it (every spelling, and its first half) as its `model`, and
    quoting it in its content."""
    every = " ".join(spellings(key).values())
    if n % 2 == 0:
        return error_reply(400, f"bad request from {every} {key[HALF:]}")
    # Raw JSON text: the agent's decoder turns the `\\u` escapes into the key itself.
    content = json.dumps(answer)[:-1] + ', "note": "' + every + " " + key[HALF:] + '"}'
    model = every + " " + key[:HALF]
    return StubReply(200, completion_body(content, model=model))


def _check_outputs(store: Path, out: Path, *printed: str) -> None:
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    texts = [
        json.dumps(row, default=str)
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        for row in conn.execute(f"SELECT * FROM {table}")
    ]
    conn.close()
    assert_no_key("\n".join(texts), f"{store.name} rows")
    for path in [p for p in store.parent.iterdir() if p.name.startswith(store.name)]:
        assert_no_key(path.read_bytes().decode("utf-8", errors="replace"), path.name)
    import pandas as pd

    files = sorted(out.iterdir())
    assert {p.suffix for p in files} == {".jsonl", ".csv", ".parquet"}
    for path in files:
        if path.suffix == ".parquet":  # compressed: read back, then search its cells
            text = pd.read_parquet(path).to_csv(index=False)
        else:
            text = path.read_text(encoding="utf-8")
        assert_no_key(text, path.name)
    for i, text in enumerate(printed):
        assert_no_key(text, f"printed output {i}")


def _export(store: Path, out: Path) -> str:
    proc = run_cli_in_process(
        "export", "--store", str(store), "--out", str(out), "--formats", "jsonl,csv,parquet"
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


# --------------------------------------------------------------------------- the scrubber
def test_every_spelling_and_fragment_is_scrubbed() -> None:
    from labreplay._provenance import register_secret, scrub_text

    key = "sk-unit-Hq2Wn8Tz4Ys6Xv0Rb3"
    register_secret(key)
    for name, text in spellings(key).items():
        for wrapped in (text, f"model {text} echoed", json.dumps({"m": text})):
            clean = scrub_text(wrapped)
            assert "***" in clean, (name, wrapped)
            assert_no_key(clean, name, key)
    # a C-escaped key and a hex dump of its bytes (not sent by the echo server: `\x` would
    # make its JSON invalid)
    c_escaped = "".join(f"\\x{ord(c):02x}" for c in key)
    for text in (c_escaped, key.encode().hex(), key.encode().hex().upper()):
        assert scrub_text(f"dump {text} end") == "dump *** end", text
    # split across fields: each part alone is removed
    for part in (key[:13], key[13:], _percent(key[5:17], upper=False)):
        assert "***" in scrub_text(f"x {part} y"), part
    # JSON texts stay JSON, ordinary text is left alone
    doc = json.dumps({"a": spellings(key)["json-escaped"], "b": key[:12]})
    assert json.loads(scrub_text(doc)) == {"a": "***", "b": "***"}
    plain = "max_tokens=12, information retrieval %20 &amp; \\u0041 dXNlcjo="
    assert scrub_text(plain) == plain


def test_the_password_of_a_base_url_is_a_secret() -> None:
    from labreplay.agents.llm_config import secret_query_values

    url = "https://user:pw-Hd7Kq2Xz9@gateway.example/v1?api-key=qk-Lm4Nb8Vc1"
    assert sorted(secret_query_values(url)) == ["pw-Hd7Kq2Xz9", "qk-Lm4Nb8Vc1"]
    assert secret_query_values("http://127.0.0.1:8080/v1") == []


def test_credential_named_variables_are_scrubbed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from labreplay._provenance import scrub_text

    socket_path = str(tmp_path / "ssh-agent.sock")  # a path, not a credential
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-Fw7Qp2Lm9Zx4")
    monkeypatch.setenv("SSH_AUTH_SOCK", socket_path)
    assert scrub_text("a tok-Fw7Qp2Lm9Zx4 b") == "a *** b"
    assert scrub_text(socket_path) == socket_path


def test_scrubbed_event_still_verifies() -> None:
    from labreplay._provenance import register_secret
    from labreplay.runtime.trajectory import Trajectory

    key = "sk-chain-Pq3Rs8Tu1Vw6"
    register_secret(key)
    trajectory = Trajectory("0" * 64)
    event = trajectory.append("act", {"note": f"leaked {key}", "x": 1.5})
    assert event["payload"] == {"note": "leaked ***", "x": 1.5}
    assert key not in trajectory.texts[0]
    Trajectory.verify(trajectory.events, "0" * 64)


def test_printed_output_is_scrubbed() -> None:
    import io

    from labreplay._provenance import register_secret
    from labreplay._scrubbed_io import scrubbed_output

    key = "sk-print-Kd8Lf2Mg5Nh9"
    register_secret(key)
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with scrubbed_output():
            print(f"model {_percent(key)}")
            print(f"error {key}", file=sys.stderr)
    finally:
        sys.stdout, sys.stderr = saved
    assert out.getvalue() == "model ***\n" and err.getvalue() == "error ***\n"


# --------------------------------------------------------------------------- end to end
def test_campaign_key_echoed_in_model_content_and_errors(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    """Was: the key in the reply's `model` landed in llm_calls.resolved_model, the exports
    and stdout; a percent-encoded key was kept in errors, events and exports."""
    store = tmp_path / "s.sqlite"
    reply = echo_key(lambda key, n: _echo(key, n, {"type": "stop"}))
    with StubServer(reply) as stub:
        proc = run_cli(
            "campaign",
            "run",
            "--specs",
            str(specs_dir),
            "--store",
            str(store),
            "--only",
            smallest_assignment,
            "--agent",
            "openai:stub",
            "--base-url",
            stub.base_url,
            "--api-key-env",
            "GATEWAY_ACCESS",  # any name: its value is the key
            "--timeout",
            "5",
            "--max-retries",
            "0",
            "--controls",
            "random",
            env={"GATEWAY_ACCESS": KEY, "OPENAI_API_KEY": ""},
            timeout=300,
        )
        carried = [r for r in stub.chat_requests if KEY in str(r.headers)]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    assert len(carried) >= 2  # the server got the key, and answered with it and with errors
    with sqlite3.connect(store) as conn:
        models = [m for (m,) in conn.execute("SELECT resolved_model FROM llm_calls") if m]
    assert models and all("***" in m for m in models), models  # the field was written
    printed = _export(store, tmp_path / "export")
    report = run_cli_in_process("report", "--store", str(store), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    for path in (tmp_path / "report").rglob("*"):
        if path.is_file():
            assert_no_key(path.read_bytes().decode("utf-8", errors="replace"), path.name)
    _check_outputs(store, tmp_path / "export", proc.stdout, proc.stderr, printed, report.stdout)


def test_conditions_key_echoed_in_model_content_and_errors(
    tmp_path: Path, buchwald_questions: Path
) -> None:
    full = buchwald_questions  # `conditions compile` once per session: read only
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(full.read_text(encoding="utf-8").splitlines(True)[:6]))
    store = tmp_path / "s.sqlite"
    reply = echo_key(lambda key, n: _echo(key, n, {"option": 1}))
    with StubServer(reply) as stub:
        proc = run_cli(
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
            "--max-retries",
            "0",
            env={"OPENAI_BASE_URL": stub.base_url, "OPENAI_API_KEY": KEY},
            timeout=300,
        )
        assert any(KEY in str(r.headers) for r in stub.chat_requests)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    with sqlite3.connect(store) as conn:
        models = [m for (m,) in conn.execute("SELECT resolved_model FROM llm_calls") if m]
    assert models and all("***" in m for m in models), models
    printed = _export(store, tmp_path / "export")
    _check_outputs(store, tmp_path / "export", proc.stdout, proc.stderr, printed)


SPY = """
import os
from urllib.parse import quote

KEY = os.environ.get("OPENAI_API_KEY", "")

class Spy:
    name = "spy"

    def __init__(self):
        self.calls = 0

    def params(self):
        return {"seen": KEY, "nested": [quote(KEY, safe="")], "api_key": KEY}

    def reset(self, seed):
        self.calls = 0

    def act(self, observation):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("cannot act with " + KEY)
        if self.calls == 2:
            return {"type": "bogus", "note": "".join("%%%02x" % ord(c) for c in KEY)}
        return {"type": "stop"}

    def forecast(self, snapshot):
        return {"forecasts": [], "note": KEY}
"""


def test_an_agent_copying_the_key_from_its_environment_stores_none_of_it(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    """Was: an agent that put OPENAI_API_KEY in params(), an exception and an action left
    the literal key in the store ten times."""
    (tmp_path / "spy_agent.py").write_text(SPY, encoding="utf-8")
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "campaign",
        "run",
        "--specs",
        str(specs_dir),
        "--store",
        str(store),
        "--only",
        smallest_assignment,
        "--agent",
        "spy_agent:Spy",
        "--controls",
        "random",
        env={
            "OPENAI_API_KEY": KEY,
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        },
        timeout=300,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    with sqlite3.connect(store) as conn:
        params = {
            p for (a, p) in conn.execute("SELECT agent, agent_params FROM runs") if a == "spy"
        }
        payloads = [p for (p,) in conn.execute("SELECT payload FROM events")]
    # every path was taken, and written scrubbed: params, the exception, the bogus action
    assert params and all('"seen":"***"' in p for p in params), params
    assert any("cannot act with ***" in p for p in payloads)
    assert any("bogus" in p and "***" in p for p in payloads)
    printed = _export(store, tmp_path / "export")
    _check_outputs(store, tmp_path / "export", proc.stdout, proc.stderr, printed)
    verify = run_cli_in_process("store", "verify", "--store", str(store))
    assert verify.returncode == 0, verify.stdout + verify.stderr  # scrubbed before hashing


# --------------------------------------------------------------------------- isolation
ENV_AGENT = """
import os

class EnvReader:
    name = "env-reader"

    def params(self):
        return {"env": dict(os.environ)}

    def answer(self, question_view):
        return {"option": 0}
"""


def test_isolated_child_environment_is_allow_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labreplay.agents.isolated import AGENT_ENV_VARIABLE, IsolatedAgent

    (tmp_path / "env_agent.py").write_text(ENV_AGENT, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    secrets = {
        "OPENAI_API_KEY": KEY,
        "HF_TOKEN": "hf_Qw8Er5Ty2Ui9",
        "DB_PASSWORD": "pw-Zx4Cv7Bn1",
        "MY_CLIENT_SECRET": "cs-Lk3Jh6Gf9",
        "GATEWAY_ACCESS": "gw-Po2Iu5Yt8",  # what --api-key-env named: not on the list either
        "LABREPLAY_SEALED_DIR": str(tmp_path / "sealed"),
        "LABREPLAY_DATA_DIR": str(tmp_path / "data"),
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv(AGENT_ENV_VARIABLE, raising=False)

    def child_env(**kwargs: object) -> dict[str, str]:
        agent = IsolatedAgent(
            "env_agent:EnvReader", "labreplay.agents.contracts:QuestionAgent", **kwargs
        )
        try:
            env: dict[str, str] = agent.params()["env"]
        finally:
            agent.close()
        return env

    env = child_env()
    assert not set(secrets) & set(env), sorted(env)
    assert not [v for v in env.values() if any(s in v for s in secrets.values())]
    assert env.get("LANG") == "C.UTF-8" and "PATH" in env
    # passed on only when the user names it: as a parameter, or in LABREPLAY_AGENT_ENV
    assert child_env(pass_env=["HF_TOKEN"])["HF_TOKEN"] == secrets["HF_TOKEN"]
    monkeypatch.setenv(AGENT_ENV_VARIABLE, "GATEWAY_ACCESS, DB_PASSWORD")
    named = child_env()
    assert named["GATEWAY_ACCESS"] == secrets["GATEWAY_ACCESS"]
    assert named["DB_PASSWORD"] == secrets["DB_PASSWORD"] and "OPENAI_API_KEY" not in named


ISOLATED_SPY = """
import os

class IsolatedSpy:
    name = "isolated-spy"

    def params(self):
        return {"variables": sorted(os.environ)}

    def reset(self, seed):
        pass

    def act(self, observation):
        return {"type": "stop", "found": os.environ.get("OPENAI_API_KEY", "none")}

    def forecast(self, snapshot):
        return {"forecasts": []}
"""


def test_an_isolated_spy_finds_no_key_and_no_sealed_path(
    specs_dir: Path, smallest_assignment: str, tmp_path: Path
) -> None:
    """Was: the --isolate child inherited the whole environment, OPENAI_API_KEY and
    LABREPLAY_SEALED_DIR (where the sealed evaluator files are) included."""
    (tmp_path / "isolated_spy.py").write_text(ISOLATED_SPY, encoding="utf-8")
    sealed = tmp_path / "sealed-elsewhere"
    import shutil

    shutil.copytree(specs_dir / "sealed", sealed)
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "campaign",
        "run",
        "--specs",
        str(specs_dir),
        "--store",
        str(store),
        "--only",
        smallest_assignment,
        "--agent",
        "isolated_spy:IsolatedSpy",
        "--isolate",
        "--controls",
        "random",
        env={
            "OPENAI_API_KEY": KEY,
            "SERVICE_TOKEN": "tok-Rb6Yn1Qa4Ws8",
            "LABREPLAY_SEALED_DIR": str(sealed),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        },
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(store) as conn:
        rows = [json.loads(p) for (a, p) in conn.execute("SELECT agent, agent_params FROM runs")]
        payloads = [p for (p,) in conn.execute("SELECT payload FROM events")]
    seen = [set(r["variables"]) for r in rows if "variables" in r]
    assert seen, rows  # the spy ran, isolated, and reported what its environment holds
    for names in seen:
        assert {"OPENAI_API_KEY", "SERVICE_TOKEN", "LABREPLAY_SEALED_DIR"}.isdisjoint(names)
        assert not [n for n in names if n.startswith("LABREPLAY_")], names
    assert any('"found":"none"' in p for p in payloads)
