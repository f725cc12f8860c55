"""Every form in which a credential value can hide inside a text we store.

A server that echoes the API key back does not have to echo it verbatim: inside a JSON text the
key can arrive with any of its characters written as `\\uXXXX` escapes (`\\u0073k-...`), doubly
escaped once the JSON is itself quoted in JSON, with `/` written `\\/`, or base64-encoded (an
echoed `Authorization: Basic` header, a data URL). Matching only the literal value missed all of
these, and the escaped key was decoded into events, the response cache and exports. One regular
expression per secret matches every such spelling; `scrub_forms` replaces each match.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

_MIN_BASE64_CORE = 8  # shorter base64 runs would blank ordinary words


def _char_pattern(char: str) -> str:
    """The character literally, or as a JSON `\\uXXXX` escape behind any number of backslashes
    (hex in either case), or `\\/` for a slash."""
    code = ord(char)
    forms = [re.escape(char)]
    if code <= 0xFFFF:
        hex4 = f"{code:04x}"
        forms.append(r"\\+u" + "".join(f"[{h.lower()}{h.upper()}]" for h in hex4))
    if char == "/":
        forms.append(r"\\+/")
    return "(?:" + "|".join(forms) + ")"


def _base64_cores(secret: str) -> list[str]:
    """The base64 characters that depend only on the secret's bytes, for each of the three byte
    alignments it can have inside a longer base64 text (standard and URL-safe alphabets)."""
    raw = secret.encode("utf-8")
    cores: set[str] = set()
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * offset + raw + b"\0\0\0").decode("ascii")
            start = -(-8 * offset // 6)  # ceil: first char wholly inside the secret's bits
            stop = (8 * (offset + len(raw))) // 6
            core = text[start:stop]
            if len(core) >= _MIN_BASE64_CORE:
                cores.add(core)
    return sorted(cores, key=len, reverse=True)


def secret_pattern(secret: str) -> re.Pattern[str]:
    """One pattern matching `secret` literally, JSON-escaped (any mix) or base64-encoded."""
    escaped = "".join(_char_pattern(c) for c in secret)
    alternatives = [escaped, *(re.escape(core) for core in _base64_cores(secret))]
    return re.compile("|".join(alternatives))


_CACHE: dict[str, re.Pattern[str]] = {}


def scrub_forms(text: str, secrets: Iterable[str], replacement: str) -> str:
    """`text` with every spelling of every secret replaced (longest secrets first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        pattern = _CACHE.get(secret)
        if pattern is None:
            pattern = _CACHE[secret] = secret_pattern(secret)
        text = pattern.sub(replacement, text)
    return text


def scrub_decoded(value: object, scrub: object) -> object:
    """A decoded JSON value with `scrub` (str -> str) applied to every string in it, keys too:
    what a JSON text decodes to is scrubbed as well as the text itself."""
    if not callable(scrub):
        raise TypeError("scrub must be callable")
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_decoded(k, scrub): scrub_decoded(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_decoded(v, scrub) for v in value]
    return value


__all__ = ["scrub_decoded", "scrub_forms", "secret_pattern"]
