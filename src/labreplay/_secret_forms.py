"""Every form in which a credential value can hide inside a text we store.

A server that echoes the API key back does not have to echo it verbatim: inside a JSON text the
key can arrive with any of its characters written as `\\uXXXX` escapes (`\\u0073k-...`), doubly
escaped once the JSON is itself quoted in JSON, with `/` written `\\/`, or base64-encoded (an
echoed `Authorization: Basic` header, a data URL); inside a URL or a form body its characters
can be percent-encoded (`%73%6B%2D...`, hex in either case, any mix of encoded and literal
characters, or encoded twice: `%2573`), and in HTML written as character references (`&#115;`,
`&#x73;`), as C escapes (`\\x73`) or a hex dump of its bytes; and any of it in another letter
case. Matching only the literal value missed all of
these, and the escaped key was decoded into events, the response cache and exports. One regular
expression per secret matches every such spelling; `scrub_forms` replaces each match.

A server can also split the key across fields (half in the reply's `model`, half in an error
body), or cut it short. So every run of at least `MIN_FRAGMENT` consecutive characters of a
long secret is removed too, in any of the spellings above but base64: what is left of the key
in any one text is shorter than that.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

_MIN_BASE64_CORE = 8  # shorter base64 runs would blank ordinary words
# A secret's fragments this long are removed wherever they appear (secrets at least
# `_MIN_FRAGMENT_SECRET` long): ten characters of a random key do not occur in ordinary text.
MIN_FRAGMENT = 10
_MIN_FRAGMENT_SECRET = 16


def _any_case(hex_digits: str) -> str:
    return "".join(f"[{h.lower()}{h.upper()}]" if h.isalpha() else h for h in hex_digits)


def _char_pattern(char: str) -> str:
    """The character literally, or as a JSON `\\uXXXX` escape behind any number of backslashes
    (hex in either case), a C escape (`\\x73`), `\\/` for a slash, percent-encoded (its UTF-8
    bytes as `%XX`, hex in either case, `%25XX` when encoded twice), `+` for a space, or an
    HTML character reference (`&#115;`, `&#x73;`)."""
    code = ord(char)
    # in either letter case: a key echoed upper-cased still gives most of it away
    swapped = char.swapcase()
    same_length = len(swapped) == 1 and swapped != char
    forms = [f"[{re.escape(char)}{re.escape(swapped)}]" if same_length else re.escape(char)]
    if code <= 0xFFFF:
        forms.append(r"\\+u" + _any_case(f"{code:04x}"))
    if code <= 0xFF:  # a C or Python escape
        forms.append(r"\\+x" + _any_case(f"{code:02x}"))
    if char == "/":
        forms.append(r"\\+/")
    if char == " ":
        forms.append(r"\+")
    forms.append("".join("%(?:25)*" + _any_case(f"{b:02x}") for b in char.encode("utf-8")))
    forms.append(f"&#0*{code};")
    forms.append("&#[xX]0*" + _any_case(f"{code:x}") + ";")
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
    hex_dump = _any_case(secret.encode("utf-8").hex())  # the bytes as hex digits (a dump)
    alternatives = [escaped, hex_dump, *(re.escape(core) for core in _base64_cores(secret))]
    return re.compile("|".join(alternatives))


_CACHE: dict[str, re.Pattern[str]] = {}

# One character in any spelling `_char_pattern` knows (except `+` for a space), for fragments.
_UNIT = (
    r"\\+u[0-9a-fA-F]{4}|\\+x[0-9a-fA-F]{2}|%(?:25)*[0-9a-fA-F]{2}"
    r"|&#[xX]0*[0-9a-fA-F]{1,6};|&#0*[0-9]{1,7};|\\+/"
)
_UNIT_OR_CHAR = re.compile(f"(?:{_UNIT})|.", re.DOTALL)


def _decode_unit(unit: str) -> str:
    """The character one spelling stands for (NUL for one that stands for none)."""
    if len(unit) == 1:
        return unit
    digits = unit.rstrip(";").lstrip("\\")
    if unit.startswith("&#"):
        body = unit[2:-1]
        code = int(body[1:], 16) if body[:1] in "xX" else int(body)
    elif unit.startswith("%"):
        code = int(unit[-2:], 16)
    elif digits.startswith(("u", "x")):
        code = int(digits[1:], 16)
    else:  # `\/`
        return "/"
    return chr(code) if 0 < code < 0x110000 else "\0"


class _Fragments:
    """Removes every run of at least MIN_FRAGMENT consecutive characters of one secret."""

    def __init__(self, secret: str) -> None:
        self.secret = secret = secret.lower()  # compared in lower case: any letter case
        self.grams = {secret[i : i + MIN_FRAGMENT] for i in range(len(secret) - MIN_FRAGMENT + 1)}
        alphabet = "".join(sorted({re.escape(c) for c in secret + secret.upper()}))
        self.runs = re.compile(f"(?:[{alphabet}]|{_UNIT}){{{MIN_FRAGMENT},}}")
        self.literal_runs = re.compile(f"[{alphabet}]{{{MIN_FRAGMENT},}}")  # the fast path

    def sub(self, replacement: str, text: str) -> str:
        encoded = "%" in text or "\\" in text or "&#" in text
        runs = self.runs if encoded else self.literal_runs
        return runs.sub(lambda m: self._scrub_run(m.group(), replacement), text)

    def _scrub_run(self, run: str, replacement: str) -> str:
        if "\\" in run or "%" in run or "&" in run:
            units = [m.span() for m in _UNIT_OR_CHAR.finditer(run)]
            decoded = "".join(_decode_unit(run[a:b]) for a, b in units)
        else:
            units, decoded = [(i, i + 1) for i in range(len(run))], run
        decoded = decoded.lower()
        out, done, i = [], 0, 0
        while i <= len(decoded) - MIN_FRAGMENT:
            if decoded[i : i + MIN_FRAGMENT] not in self.grams:
                i += 1
                continue
            j = i + MIN_FRAGMENT
            while j < len(decoded) and decoded[i : j + 1] in self.secret:
                j += 1
            out += [run[done : units[i][0]], replacement]
            done, i = units[j - 1][1], j
        return "".join(out) + run[done:] if out else run


_FRAGMENTS: dict[str, _Fragments] = {}


def scrub_forms(text: str, secrets: Iterable[str], replacement: str) -> str:
    """`text` with every spelling of every secret, and of every long fragment of one,
    replaced (longest secrets first)."""
    ordered = sorted(secrets, key=len, reverse=True)
    for secret in ordered:
        pattern = _CACHE.get(secret)
        if pattern is None:
            pattern = _CACHE[secret] = secret_pattern(secret)
        text = pattern.sub(replacement, text)
    for secret in ordered:
        if len(secret) < _MIN_FRAGMENT_SECRET:
            continue
        fragments = _FRAGMENTS.get(secret)
        if fragments is None:
            fragments = _FRAGMENTS[secret] = _Fragments(secret)
        text = fragments.sub(replacement, text)
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


__all__ = ["MIN_FRAGMENT", "scrub_decoded", "scrub_forms", "secret_pattern"]
