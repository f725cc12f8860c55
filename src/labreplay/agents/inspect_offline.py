"""inspect's `mockllm/model`, offline.

With its default output (no usage set), mockllm fills in usage by counting the prompt's tokens
with tiktoken's `o200k_base` encoding, whose file tiktoken downloads on first use (from
openaipublic.blob.core.windows.net, cached under `TIKTOKEN_CACHE_DIR`, else the temporary
directory's `data-gym-cache`). Offline and without that cached file, `inspect eval ... --model
mockllm/model` ends in a ConnectionError traceback before any sample is scored.

`allow_mockllm_offline()` (called by each labreplay inspect task and by the LLM agents'
inspect route) makes mockllm, and only mockllm, fall
back to an estimate of one token per 4 UTF-8 bytes when the encoding cannot be fetched: the
figures only fill mockllm's usage (whose output count is a character count anyway); nothing of
ours reads them. Every other model counts as before, and a cached encoding is still used.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # inspect_ai stays a lazy import
    from inspect_ai.model import ModelAPI

log = logging.getLogger(__name__)

BYTES_PER_TOKEN = 4
_state = {"installed": False, "unavailable": False}
mockllm_offline_state = _state  # public name: the suites reach it through labreplay.sdk.agents


def estimate_tokens(text: str) -> int:
    """The stand-in count: one token per 4 UTF-8 bytes, at least 1."""
    return max(1, math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN))


def allow_mockllm_offline() -> None:
    """Let mockllm count tokens without tiktoken's download when it cannot be fetched (once per
    process; a no-op where inspect_ai's mockllm is not where this expects it)."""
    if _state["installed"]:
        return
    try:
        from inspect_ai.model._providers.mockllm import MockLLM
    except ImportError:  # another inspect_ai layout: mockllm keeps its own behaviour
        return
    original = MockLLM.count_text_tokens

    async def count_text_tokens(self: ModelAPI, text: str) -> int:
        if not _state["unavailable"]:
            try:
                return int(await original(self, text))
            except OSError as exc:  # requests' ConnectionError, HTTPError, ...: no download
                _state["unavailable"] = True  # asked once per process, not once per sample
                log.warning(
                    "mockllm: tiktoken's o200k_base could not be fetched (%s); its usage "
                    "figures count one token per %d bytes instead",
                    type(exc).__name__,
                    BYTES_PER_TOKEN,
                )
        return estimate_tokens(text)

    MockLLM.count_text_tokens = count_text_tokens  # type: ignore[method-assign]
    _state["installed"] = True
