"""One rule for counting the tokens of a text no model has seen yet (every suite's dry run).

The rule, declared with every estimate (`token_rule()`): OpenAI's o200k_base encoding (GPT-4o,
GPT-5, o-series) through `tiktoken` when both are available on this machine (the encoding
file already in tiktoken's cache: a dry run never downloads anything), else characters /
`llm_caps.CHARS_PER_TOKEN_ESTIMATE` (4), the same estimate the caps use for a call whose
provider reported no usage. Neither is any other provider's tokeniser: small open models
that write every digit as a token (Llama, SmolLM2) count these number-dense prompts at
about 1.6-1.9 characters per token, so for them the estimate is low; a run's own `usage` is
what is billed.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from labreplay.agents.llm_caps import CHARS_PER_TOKEN_ESTIMATE

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K = "o200k_base (tiktoken)"
FALLBACK = f"characters / {CHARS_PER_TOKEN_ESTIMATE:g}"


def _tiktoken_cache_file() -> Path | None:
    """Where tiktoken keeps the o200k file (its own cache rule), or None if caching is off."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder == "":
        return None
    base = Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"
    return base / hashlib.sha1(_O200K_URL.encode()).hexdigest()


@lru_cache(maxsize=1)
def _encoding() -> Any:
    """The o200k encoding if it loads without the network, else None."""
    try:
        import tiktoken
    except ModuleNotFoundError:
        return None
    cached = _tiktoken_cache_file()
    if cached is None or not cached.is_file():
        return None
    try:
        return tiktoken.get_encoding("o200k_base")
    except Exception:
        return None


def token_rule() -> str:
    """The rule `count_tokens` follows on this machine (shown with every estimate)."""
    return O200K if _encoding() is not None else FALLBACK


def count_tokens(text: str) -> int:
    encoding = _encoding()
    if encoding is not None:
        return len(encoding.encode(text, disallowed_special=()))
    return math.ceil(len(text) / CHARS_PER_TOKEN_ESTIMATE)


# Tokens a chat request adds around its messages (role markers, separators), as OpenAI
# documents for its chat models: 3 per message and 3 to prime the reply.
PER_MESSAGE_TOKENS = 3


def chat_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """The prompt tokens of a chat request under `token_rule()`."""
    body = sum(count_tokens(m["content"]) + PER_MESSAGE_TOKENS for m in messages)
    return body + PER_MESSAGE_TOKENS
