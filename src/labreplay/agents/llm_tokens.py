"""How a dry run counts the tokens of a text no model has seen yet: the model's own tokenizer
where this machine has it (o200k_base through tiktoken, its file from tiktoken's cache or,
without a download, the `bpe-openai` package's), else `word_pieces`: how small open models'
tokenisers count these number-dense prompts, and an upper bound for o200k. The rule is named
with every estimate (docs/agents/llm.md, "Dry run").
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # tiktoken's
INSTALL_TOKENS = "pip install 'labreplay[tokens]'"
O200K = "o200k_base (tiktoken)"
FALLBACK = "word pieces (one token per word, digit, space run or punctuation mark)"
_PIECE = re.compile(r"[A-Za-z_]+|\d|\s+|[^\w\s]")


def word_pieces(text: str) -> int:
    """The fallback count: one token per word, digit, run of spaces or punctuation mark."""
    return len(_PIECE.findall(text))


# Tokens a chat request adds around its messages (role markers, separators), as OpenAI
# documents for its chat models: 3 per message and 3 to prime the reply.
PER_MESSAGE_TOKENS = 3
# Providers cache a prompt prefix only from this many tokens on (OpenAI's automatic caching and
# Anthropic's cache breakpoints both start at 1,024 tokens for their main models).
MIN_CACHED_PREFIX_TOKENS = 1024


@dataclass(frozen=True)
class TokenRule:
    """One way of counting, named as every estimate declares it."""

    name: str
    count: Callable[[str], int]

    def chat(self, messages: Sequence[Mapping[str, str]]) -> int:
        """The prompt tokens of a chat request."""
        body = sum(self.count(m["content"]) + PER_MESSAGE_TOKENS for m in messages)
        return body + PER_MESSAGE_TOKENS

    def cached_prefix(self, previous: str, current: str) -> int:
        """The tokens of `current` a provider's prefix cache would serve after `previous` was
        sent: their common prefix, when it reaches MIN_CACHED_PREFIX_TOKENS."""
        low, high = 0, min(len(previous), len(current))
        while low < high:  # bisection on slices: prompts are tens of kB
            mid = (low + high + 1) // 2
            if previous[:mid] == current[:mid]:
                low = mid
            else:
                high = mid - 1
        tokens = self.count(current[:low]) if low else 0
        return tokens if tokens >= MIN_CACHED_PREFIX_TOKENS else 0


WORD_PIECES = TokenRule(FALLBACK, word_pieces)


@cache
def rule_for(model: str) -> TokenRule:
    """The model's tokenizer where this machine has it (o200k for OpenAI's models), else the
    word-piece fallback, its name saying why and, for an OpenAI model, how to get o200k."""
    try:
        from tiktoken.model import encoding_name_for_model
    except ModuleNotFoundError:
        return TokenRule(f"{FALLBACK}; tiktoken not installed ({INSTALL_TOKENS})", word_pieces)
    name = model.rsplit("/", 1)[-1].rsplit(":", 1)[-1]  # openai/gpt-5, openai:gpt-5
    try:
        o200k_model = encoding_name_for_model(name).startswith("o200k")
    except KeyError:
        return WORD_PIECES  # no tokenizer of its own on this machine
    encoding = _o200k() if o200k_model else None
    if encoding is None:
        hint = f"; o200k_base not available offline: {INSTALL_TOKENS}" if o200k_model else ""
        return TokenRule(FALLBACK + hint, word_pieces)

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return TokenRule(O200K, count)


@lru_cache(maxsize=1)
def _o200k() -> tiktoken.Encoding | None:
    """o200k_base from tiktoken's cache, else from bpe-openai's packaged file, checked against
    tiktoken's hash and read through a private folder: never downloaded, the user's cache never
    changed (tiktoken deletes a cached file that fails its check), tiktoken's registry untouched."""
    import tiktoken
    from tiktoken_ext.openai_public import o200k_base

    data = next((d for d in _o200k_files() if hashlib.sha256(d).hexdigest() == _O200K_SHA256), None)
    if data is None:
        return None
    with tempfile.TemporaryDirectory() as folder, _tiktoken_cache(folder):
        (Path(folder) / _cache_name()).write_bytes(data)
        return tiktoken.Encoding(**o200k_base())


def _o200k_files() -> Iterator[bytes]:
    """The o200k encoding files this machine has: tiktoken's cached one, bpe-openai's."""
    cache = _tiktoken_cache_dir()
    if cache is not None and (cache / _cache_name()).is_file():
        yield (cache / _cache_name()).read_bytes()
    packaged = _packaged_o200k()
    if packaged is not None:
        yield gzip.decompress(packaged.read_bytes())


def _cache_name() -> str:
    """tiktoken's name for a cached encoding file: the sha1 of its download address."""
    return hashlib.sha1(_O200K_URL.encode()).hexdigest()


def _tiktoken_cache_dir() -> Path | None:
    """Where tiktoken keeps encoding files (its own rule), or None if caching is off."""
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder == "":
        return None
    return Path(folder) if folder else Path(tempfile.gettempdir()) / "data-gym-cache"


def _packaged_o200k() -> Path | None:
    """bpe-openai's o200k_base.tiktoken.gz, found without importing the package."""
    try:
        found = importlib.metadata.distribution("bpe-openai").locate_file(
            "bpe_openai/data/o200k_base.tiktoken.gz"
        )
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(str(found))
    return path if path.is_file() else None


@contextmanager
def _tiktoken_cache(folder: str) -> Iterator[None]:
    """tiktoken reads its cache folder from the environment: point it at `folder` meanwhile."""
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before
