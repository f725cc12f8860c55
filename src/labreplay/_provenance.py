"""What every stored run records about where it came from."""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from labreplay._secret_forms import scrub_decoded as _scrub_decoded
from labreplay._secret_forms import scrub_forms
from labreplay._version import __version__

if TYPE_CHECKING:  # (runtime imports this module: no import at run time)
    from labreplay.runtime.event_types import JsonObject, JsonValue

# Parameter names that must never be persisted, whatever an agent puts in its params. Matched
# against the words of a name (api_key -> api, key; accessToken -> access, token), not
# substrings: a substring match also dropped `max_tokens` or `n_keys`, and since run ids hash
# the scrubbed params, runs differing only in those collided on one run id.
_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwords",
        "passwd",
        "authorization",
        "auth",
        "bearer",
        "credential",
        "credentials",
    }
)
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for names like api_key, OPENAI_API_KEY, accessToken, Authorization, client-secret."""
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


# Credential VALUES seen by this process (API keys handed to an LLM client, secret query
# parameters of a base URL). Every text the store writes is passed through `scrub_text`, so a
# server that echoes the key back (in a reply, an error, a redirect URL) cannot get it stored.
_SECRET_VALUES: set[str] = set()
_MIN_SECRET_LEN = 6  # shorter values would blank ordinary words
# `?api-key=...`, `&key=...`, `;token=...`, `access_token=...` in any URL-like text.
_SECRET_QUERY = re.compile(
    r"(?i)(?<![A-Za-z0-9])((?:[A-Za-z0-9_-]*[-_])?(?:api[-_]?key|key|token|secret|password|sig)=)"
    r"[^&#\s\"'<>,;)\\]+"  # stops at a backslash too: never eats the escape of a JSON quote
)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}")
REDACTED = "***"


def register_secret(value: str | None) -> None:
    """Remember a credential value so that no stored text can contain it."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _SECRET_VALUES.add(value)


# Values that are not credentials even under a credential-like name: a path (SSH_AUTH_SOCK,
# HF_TOKEN_PATH), a flag or a number. Scrubbing them would blank ordinary stored text.
_NOT_A_CREDENTIAL = re.compile(
    r"(?i)[/~.]|[a-z]:[\\/]|(?:true|false|yes|no|on|off|none|null)$|\d+$"
)


def _looks_like_credential(value: str) -> bool:
    return (
        len(value) >= _MIN_SECRET_LEN
        and not any(c.isspace() for c in value)
        and not _NOT_A_CREDENTIAL.match(value)
    )


_ENV_SEEN: list[Any] = [None, frozenset()]  # (environment snapshot, its secrets)


def environment_secrets() -> frozenset[str]:
    """The values of this process's environment variables whose names look like credentials
    (OPENAI_API_KEY, HF_TOKEN, DB_PASSWORD, ...): an agent or a server can copy any of them
    into what we store, so they are scrubbed like registered keys. Follows the environment:
    a variable set later (a test, `--api-key-env`) is covered too."""
    data = getattr(os.environ, "_data", None)  # the raw mapping: a snapshot without decoding
    snapshot = tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())
    if snapshot != _ENV_SEEN[0]:
        _ENV_SEEN[:] = [
            snapshot,
            frozenset(
                value
                for name, value in os.environ.items()
                if is_secret_name(name) and _looks_like_credential(value)
            ),
        ]
    found: frozenset[str] = _ENV_SEEN[1]
    return found


def scrub_text(text: str) -> str:
    """`text` without any registered secret value, credential-named environment variable's
    value, secret query parameter or bearer token."""
    # Every spelling of each value: literal, `\u`-escaped, percent-encoded, base64, and its long
    # fragments (`_secret_forms`).
    text = scrub_forms(text, _SECRET_VALUES | environment_secrets(), REDACTED)
    if "=" in text:  # (the query pattern is the slow one: skipped where it cannot match)
        text = _SECRET_QUERY.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: m.group(1) + " " + REDACTED, text)


@overload
def scrub_json_value(value: Mapping[str, object]) -> dict[str, object]: ...


@overload
def scrub_json_value(value: object) -> object: ...


def scrub_json_value(value: object) -> object:
    """A decoded JSON value with every string in it scrubbed (`scrub_text`): the key is
    removed after decoding as well as from the raw text."""
    return _scrub_decoded(value, scrub_text)


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def git_state(start: Path | None = None) -> dict[str, str | bool | None]:
    """Commit and dirty flag of the labreplay source tree, or nulls outside a checkout."""
    where = start or Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return {"git_commit": None, "git_dirty": None}
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"git_commit": commit.stdout.strip(), "git_dirty": bool(status.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": None, "git_dirty": None}


def scrub_secrets(params: Mapping[str, JsonValue]) -> JsonObject:
    """Drop any parameter whose name looks like a credential (recursively, through lists too)."""
    clean: JsonObject = {}
    for name, value in params.items():
        if is_secret_name(str(name)):
            continue
        clean[name] = _scrub_value(value)
    return clean


def _scrub_value(value: JsonValue) -> JsonValue:
    if isinstance(value, dict):
        return scrub_secrets(value)
    if isinstance(value, list | tuple):
        return [_scrub_value(item) for item in value]
    return value


# Packages whose version is provenance when a run loaded them: the model layer that carried an
# LLM agent's calls (inspect_ai and the provider SDK under it). Not part of any run id: the
# same request through a newer layer is the same work.
MODEL_LAYER_PACKAGES = ("inspect_ai", "openai", "anthropic", "google.genai")


def loaded_package_versions() -> dict[str, str]:
    """Versions of the MODEL_LAYER_PACKAGES this process has imported (none: no LLM agent)."""
    from importlib import metadata

    found: dict[str, str] = {}
    for module in MODEL_LAYER_PACKAGES:
        if module in sys.modules:
            dist = {"inspect_ai": "inspect-ai", "google.genai": "google-genai"}.get(module, module)
            try:
                found[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
    return found


def base_provenance() -> dict[str, str | bool | None]:
    layer = loaded_package_versions()
    return {
        "labreplay_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        **git_state(),
        **({"model_layer": ", ".join(f"{k} {v}" for k, v in layer.items())} if layer else {}),
    }
