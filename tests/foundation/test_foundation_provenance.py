"""Run provenance: credentials never stored, and run ids keyed by every real parameter."""

from __future__ import annotations

from pathlib import Path

import pytest

from labreplay._provenance import base_provenance, is_secret_name, scrub_secrets
from labreplay.store import Store, run_key


@pytest.mark.parametrize(
    "name",
    ["api_key", "OPENAI_API_KEY", "apiKey", "x-api-key", "accessToken", "Authorization",
     "client_secret", "password", "key", "bearer_token", "credentials"],
)  # fmt: skip
def test_credential_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "max_completion_tokens", "n_keys", "tokenizer", "temperature", "model",
     "keyboard_layout", "evidence_budget"],
)  # fmt: skip
def test_ordinary_parameters_are_kept(name: str) -> None:
    assert not is_secret_name(name)


def test_scrub_recurses_through_dicts_and_lists() -> None:
    params = {
        "model": "qwen",
        "api_key": "sk-1",
        "endpoint": {"url": "http://127.0.0.1:8000/v1", "Authorization": "Bearer x"},
        "fallbacks": [{"model": "b", "api_key": "sk-2"}, "plain"],
        "max_tokens": 512,
    }
    assert scrub_secrets(params) == {
        "model": "qwen",
        "endpoint": {"url": "http://127.0.0.1:8000/v1"},
        "fallbacks": [{"model": "b"}, "plain"],
        "max_tokens": 512,
    }
    assert "sk-" not in repr(scrub_secrets(params))


def test_runs_differing_only_in_max_tokens_get_different_ids() -> None:
    short = run_key("s" * 64, "llm", {"max_tokens": 256}, 0, "adaptive")
    long = run_key("s" * 64, "llm", {"max_tokens": 4096}, 0, "adaptive")
    assert short != long
    # ...while a credential never changes the id (the same work with another key resumes)
    assert run_key("s" * 64, "llm", {"api_key": "a"}, 0, "adaptive") == run_key(
        "s" * 64, "llm", {"api_key": "b"}, 0, "adaptive"
    )


def test_stored_run_records_provenance_without_secrets(tmp_path: Path) -> None:
    with Store(tmp_path / "p.sqlite") as store:
        run_id, _ = store.open_run(
            suite="campaign",
            spec_hash="s" * 64,
            spec_id="demo",
            branch="adaptive",
            agent="llm",
            agent_params={"model": "m", "api_key": "sk-secret", "max_tokens": 64},
            seed=3,
            model="m",
            endpoint="http://127.0.0.1:9/v1",
            extra_provenance={"dataset_sha256": {"precursor-genome": "d" * 64}, "token": "t"},
        )
        run = store.run(run_id)
        raw = (tmp_path / "p.sqlite").read_bytes() + (tmp_path / "p.sqlite-wal").read_bytes()
    assert run.agent_params == {"model": "m", "max_tokens": 64}
    assert run.provenance["dataset_sha256"] == {"precursor-genome": "d" * 64}
    assert "token" not in run.provenance
    for field in ("labreplay_version", "python", "platform", "git_commit", "git_dirty"):
        assert field in run.provenance
    assert b"sk-secret" not in raw


def test_base_provenance_names_the_checkout() -> None:
    prov = base_provenance()
    assert prov["labreplay_version"]
    # inside this repository the commit is a 40-hex sha; outside a checkout it is None
    assert prov["git_commit"] is None or len(prov["git_commit"]) == 40
