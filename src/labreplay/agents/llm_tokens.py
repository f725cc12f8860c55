"""One rule for counting the tokens of a text no model has seen yet (every suite's dry run).

The rule, declared with every estimate (`token_rule()`): OpenAI's o200k_base encoding (GPT-4o,
GPT-5, o-series) through `tiktoken` when both are available on this machine (the encoding
file already in tiktoken's cache: a dry run never downloads anything), else `word_pieces`:
one token per word, digit, run of spaces or punctuation mark. That is how the tokenisers of
small open models (Llama, SmolLM2) count these number-dense prompts (about 1.6-1.9 characters
per token; a flat 4 characters per token counted under half of them), and an upper bound for
o200k, which groups up to three digits per token: a budget planned on it is not overrun by
the tokeniser. A run's own `usage` is what is billed.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K = "o200k_base (tiktoken)"
FALLBACK = "word pieces (one token per word, digit, space run or punctuation mark)"
_PIECE = re.compile(r"[A-Za-z_]+|\d|\s+|[^\w\s]")


def word_pieces(text: str) -> int:
    """The fallback count: one token per word, digit, run of spaces or punctuation mark."""
    return len(_PIECE.findall(text))


def _tiktoken_cache_file() -> Path | None:
    """Where tiktoken keeps the o200k file (its own cache rule), or None if caching is off."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder == "":
        return None
    base = Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"
    return base / hashlib.sha1(_O200K_URL.encode()).hexdigest()


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding | None:
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
    return word_pieces(text)


# Tokens a chat request adds around its messages (role markers, separators), as OpenAI
# documents for its chat models: 3 per message and 3 to prime the reply.
PER_MESSAGE_TOKENS = 3


def chat_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """The prompt tokens of a chat request under `token_rule()`."""
    body = sum(count_tokens(m["content"]) + PER_MESSAGE_TOKENS for m in messages)
    return body + PER_MESSAGE_TOKENS


# Providers cache a prompt prefix only from this many tokens on (OpenAI's automatic caching and
# Anthropic's cache breakpoints both start at 1,024 tokens for their main models).
MIN_CACHED_PREFIX_TOKENS = 1024


def cached_prefix_tokens(previous: str, current: str) -> int:
    """The tokens of `current` a provider's prefix cache would serve after `previous` was sent:
    their common prefix, under `token_rule()`, when it reaches MIN_CACHED_PREFIX_TOKENS."""
    low, high = 0, min(len(previous), len(current))
    while low < high:  # bisection on slices: prompts are tens of kB
        mid = (low + high + 1) // 2
        if previous[:mid] == current[:mid]:
            low = mid
        else:
            high = mid - 1
    tokens = count_tokens(current[:low]) if low else 0
    return tokens if tokens >= MIN_CACHED_PREFIX_TOKENS else 0
