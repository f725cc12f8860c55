"""The API key reaches the provider for every model string, with or without `--base-url`
(issue 46): `--api-key-env NAME`, else the provider's own variable (`OPENAI_API_KEY`,
`<SERVICE>_API_KEY` for `openai-api/<service>/...`, `ANTHROPIC_API_KEY`, `GOOGLE_API_KEY` /
`GEMINI_API_KEY`). A placeholder is sent only when no key is set. The key is never stored.

Was: `openai/MODEL --base-url URL` and `openai-api/<service>/MODEL --base-url URL` sent
`Bearer no-key-needed` although the variable was set, so every call to a server that needs a
key failed with 401.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from labreplay.agents import llm_inspect
from labreplay.agents.llm_client import LLMClient
from labreplay.testing.fault_server import StubServer, key_required, request_key
from labreplay.testing.schema_server import SchemaAnswerer

pytest.importorskip("openai")
pytest.importorskip("inspect_ai")

KEY = "sk-keytest-Vb7Nm2Qw9Er4Ty6Ui1Op3As"
WRONG = "sk-wrongkey-Lk8Jh3Gf5Ds1Az0Xc4Vb"
VARIABLES = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ACME_LAB_API_KEY", "LOCAL_API_KEY", "GATEWAY_ACCESS",
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "GOOGLE_API_KEY", "GEMINI_API_KEY",
)  # fmt: skip


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _run(*args: str) -> tuple[int, str]:
    from labreplay.cli.main import run

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = run(list(args))
    return code, err.getvalue()


def test_each_provider_reads_its_own_variable() -> None:
    assert llm_inspect.key_variables("openai/gpt-5") == ("OPENAI_API_KEY",)
    assert llm_inspect.key_variables("openai-api/acme-lab/m1") == ("ACME_LAB_API_KEY",)
    assert llm_inspect.key_variables("anthropic/claude-sonnet-4-5") == ("ANTHROPIC_API_KEY",)
    assert llm_inspect.key_variables("google/gemini-2.5-pro") == (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
    )
    assert llm_inspect.key_variables("groq/llama") == ()  # inspect's provider reads its own


@pytest.mark.parametrize(
    ("agent", "env", "extra"),
    [
        pytest.param("openai/gpt-5", {"OPENAI_API_KEY": KEY}, [], id="openai/MODEL"),
        pytest.param(
            "openai-api/acme-lab/m1", {"ACME_LAB_API_KEY": KEY}, [], id="openai-api/SERVICE/MODEL"
        ),
        pytest.param("openai:m1", {"OPENAI_API_KEY": KEY}, [], id="openai:MODEL"),
        pytest.param(
            "openai-api/acme-lab/m1",
            {"GATEWAY_ACCESS": KEY, "ACME_LAB_API_KEY": WRONG},
            ["--api-key-env", "GATEWAY_ACCESS"],
            id="--api-key-env over the provider's variable",
        ),
        pytest.param(
            "openai/gpt-5",
            {"GATEWAY_ACCESS": KEY},
            ["--api-key-env", "GATEWAY_ACCESS"],
            id="--api-key-env",
        ),
    ],
)
def test_a_run_against_a_server_that_needs_the_key_succeeds(
    agent: str,
    env: dict[str, str],
    extra: list[str],
    no_keys: pytest.MonkeyPatch,
    tmp_path: Path,
    buchwald_questions: Path,
) -> None:
    for name, value in env.items():
        no_keys.setenv(name, value)
    store = tmp_path / "s.sqlite"
    with StubServer(key_required(KEY, SchemaAnswerer())) as server:
        code, err = _run(
            "conditions", "run", "--questions", str(buchwald_questions), "--limit", "2",
            "--agent", agent, "--base-url", server.base_url, "--store", str(store),
            "--max-retries", "0", "--timeout", "10", *extra,
        )  # fmt: skip
        sent = [request_key(r) for r in server.chat_requests]
    assert "Traceback" not in err
    assert sent and set(sent) == {KEY}, sent  # never the placeholder, never another key
    assert code == 0, err
    for path in tmp_path.iterdir():  # the store, its provenance and cached replies
        assert KEY.encode() not in path.read_bytes(), path.name


def test_the_placeholder_goes_only_where_no_key_is_set(no_keys: pytest.MonkeyPatch) -> None:
    messages = [{"role": "user", "content": "answer"}]
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    with StubServer(SchemaAnswerer()) as server:
        LLMClient("openai-api/local/m", base_url=server.base_url, provider="inspect").chat(
            messages, schema, "reply"
        )
        no_keys.setenv("LOCAL_API_KEY", KEY)
        LLMClient("openai-api/local/m", base_url=server.base_url, provider="inspect").chat(
            messages, schema, "reply"
        )
        sent = [request_key(r) for r in server.chat_requests]
    assert sent == [llm_inspect.PLACEHOLDER_KEY, KEY]


def test_anthropic_and_google_take_their_own_variables_with_a_base_url(
    no_keys: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through their stand-ins: the key in the provider SDK's own header, and nowhere in what
    the client records."""
    pytest.importorskip("anthropic")
    pytest.importorskip("google.genai")
    from tests.agents.test_llm_inspect import gemini_reply
    from tests.agents.test_llm_providers import PICK, TALK, MessagesServer, message

    seen: dict[str, str] = {}
    no_keys.setenv("ANTHROPIC_API_KEY", KEY)
    with MessagesServer([(200, message('{"pick": "b"}'), {})]) as server:
        client = LLMClient(
            "anthropic/claude-sonnet-4-5", base_url=server.base_url, provider="inspect"
        )
        assert client.complete_json(TALK, PICK).value == {"pick": "b"}
        headers = {k.lower(): v for k, v in server.seen[0][1].items()}
    # (the SDK's header: x-api-key, or a bearer token)
    seen["anthropic"] = headers.get("x-api-key") or headers["authorization"].removeprefix("Bearer ")
    for variable in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        no_keys.delenv("GOOGLE_API_KEY", raising=False)
        no_keys.setenv(variable, KEY)
        with MessagesServer([(200, gemini_reply('{"pick": "b"}'), {})]) as server:
            root = server.base_url.removesuffix("/v1")
            client = LLMClient("google/gemini-2.5-pro", base_url=root, provider="inspect")
            assert client.complete_json(TALK, PICK).value == {"pick": "b"}
            headers = {k.lower(): v for k, v in server.seen[0][1].items()}
        seen[variable] = headers.get("x-goog-api-key", "")
        assert KEY not in json.dumps(client.params())
    assert seen == {"anthropic": KEY, "GOOGLE_API_KEY": KEY, "GEMINI_API_KEY": KEY}
