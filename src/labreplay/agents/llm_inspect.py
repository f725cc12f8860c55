"""inspect_ai's model API as the transport of every LLM client (docs/agents/llm.md): only the
sending is inspect's (`Model.generate`, one attempt: `max_retries=0`); the request we hash and
cache, retries, Retry-After, deadlines, caps and call records stay ours (`llm_client`). Our
OpenAI-form body is translated here into inspect's messages and `GenerateConfig`, and every
provider's failure is raised as one `llm_faults.CallFault`, so all are classified alike. What
an endpoint is sent is only what its provider applies, and provenance says which.

inspect_ai is imported lazily: without it, or without its provider's package, the client is
refused in one line (exit 2) before any store exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib.util
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from labreplay.agents.inspect_offline import allow_mockllm_offline
from labreplay.agents.llm_faults import CallFault, fault_of
from labreplay.agents.llm_wire import Completion
from labreplay.errors import AgentError

if TYPE_CHECKING:
    from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput

    from labreplay.runtime.event_types import JsonObject, JsonValue

INSPECT_PIP = "pip install 'labreplay[llm]'"
# An inspect model string: provider "/" model (the model may hold more "/", e.g. openai-api's
# service prefix); the provider is a lower-case registry name.
_SPEC = re.compile(r"^([a-z][a-z0-9_-]*)/(\S+)$")
# inspect_ai 0.3.285's own providers: where a bare model name could be either ours or inspect's
# (`conditions run --agent llm --model M`), only these prefixes mean inspect.
BUILTIN_PROVIDERS = frozenset(
    {"groq", "openai", "openai-api", "openai-api-completions", "anthropic", "google", "hf",
     "vllm", "vllm-completions", "cloudflare", "mistral", "grok", "together", "fireworks",
     "moonshot", "meta", "litellm-proxy", "deepseek", "sambanova", "ollama", "openrouter",
     "perplexity", "llama-cpp-python", "azureai", "bedrock", "mockllm", "sagemaker", "sglang",
     "transformer_lens", "nnterp", "hf-inference-providers"}
)  # fmt: skip
# The package each provider needs, as (module to look for, pip name): a provider whose package
# is missing is refused before inspect is asked (inspect would raise at the first call).
PROVIDER_PACKAGES: dict[str, tuple[str, str]] = {
    "openai": ("openai", "openai"),
    "openai-api": ("openai", "openai"),
    "anthropic": ("anthropic", "anthropic"),
    "google": ("google.genai", "google-genai"),
    "mistral": ("mistralai", "mistralai"),
    "groq": ("groq", "groq"),
    "bedrock": ("aioboto3", "aioboto3"),
    "together": ("openai", "openai"),
    "fireworks": ("openai", "openai"),
    "vllm": ("openai", "openai"),
    "sglang": ("openai", "openai"),
    "ollama": ("openai", "openai"),
    "openrouter": ("openai", "openai"),
    "deepseek": ("openai", "openai"),
}
# Providers that pass `GenerateConfig.seed` and `response_schema` on to their API (read from
# inspect_ai 0.3.285's providers). To any other neither is sent, and provenance says so.
SEED_PROVIDERS = frozenset(
    {"openai", "openai-api", "vllm", "sglang", "ollama", "together", "fireworks", "groq",
     "grok", "mistral", "openrouter", "deepseek", "azureai", "hf"}
)  # fmt: skip
SCHEMA_PROVIDERS = frozenset(
    {"openai", "openai-api", "anthropic", "google", "vllm", "sglang", "ollama", "together",
     "fireworks", "groq", "grok", "mistral", "openrouter", "deepseek", "bedrock"}
)  # fmt: skip
# Providers to which inspect_ai sends no sampling parameters: its anthropic provider drops
# temperature, top_p and top_k (Anthropic API version 2026-10-21, anthropic SDK >= 2, rejects
# them on every model). Nothing is sent, and provenance says so rather than "temperature 0".
NO_SAMPLING_PROVIDERS = frozenset({"anthropic"})
_SAMPLING = frozenset({"temperature", "top_p", "top_k"})
# Providers whose SDK appends `/v1/...` itself: a `--base-url` given as on the native path
# (`https://api.anthropic.com/v1`) loses its `/v1`, so both layers reach the same URL.
_V1_APPENDED = frozenset({"anthropic"})
# Providers that send OpenAI chat completions through the `openai` SDK (inspect's
# OpenAICompatibleAPI family; `openai` with the Responses API off): our `response_format` goes
# to them exactly as on the native path, in the request's extra body, where inspect's
# `response_schema` model would drop what it has no field for (minItems, oneOf...).
CHAT_PROVIDERS = frozenset(
    {"openai", "openai-api", "vllm", "sglang", "ollama", "together", "fireworks", "openrouter",
     "deepseek"}
)  # fmt: skip
# The body fields inspect's chat providers build themselves (from the model string and the
# messages); every other field of our request is sent as is.
_BUILT_BY_INSPECT = frozenset({"model", "messages"})
# The chat providers that get our request body exactly (every field in the extra body). OpenAI's
# own API keeps inspect's rules for its models (the reasoning-model parameter swap).
EXACT_PROVIDERS = CHAT_PROVIDERS - {"openai"}
# The console markup inspect's messages carry ("[bold][blue]OPENAI_API_KEY[/blue][/bold]").
_RICH_MARKUP = re.compile(r"\[/?(?:bold|italic|underline|dim|red|green|blue|yellow|cyan|magenta)\]")
# inspect's stop reasons as chat-completion finish reasons (what `validate_reply` reads).
_STOP_REASONS = {"max_tokens": "length", "model_length": "length"}
# Local servers accept any key, but inspect's OpenAI-family providers insist on one: sent only
# when no key is set.
PLACEHOLDER_KEY = "no-key-needed"
# The variables inspect_ai 0.3.285's providers read their key from, first set wins (google's SDK
# reads GEMINI_API_KEY when GOOGLE_API_KEY is not set). openai-api's is per service (`_key_names`).
_KEY_VARIABLES = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
}


def split_spec(agent: str) -> tuple[str, str] | None:
    """(provider, model) of an inspect model string, or None for any other agent name."""
    found = _SPEC.match(agent.strip())
    return (found.group(1), found.group(2)) if found else None


def key_variables(model: str) -> tuple[str, ...]:
    """The environment variables the provider of the inspect model string `model` takes its
    key from, first set wins: `OPENAI_API_KEY` for `openai/...`, `<SERVICE>_API_KEY` for
    `openai-api/<service>/...` (upper case, `-` as `_`, as inspect_ai spells it),
    `ANTHROPIC_API_KEY`, `GOOGLE_API_KEY` then `GEMINI_API_KEY`; () for any other provider,
    which reads its own."""
    found = split_spec(model)
    if found is None:
        return ()
    provider, name = found
    if provider == "openai-api" and "/" in name:
        service = name.split("/", 1)[0]
        return (f"{service.upper().replace('-', '_')}_API_KEY",)
    return _KEY_VARIABLES.get(provider, ())


def is_inspect_spec(agent: str) -> bool:
    return split_spec(agent) is not None


def is_builtin_spec(agent: str) -> bool:
    """An inspect model string whose provider is one of inspect_ai's own."""
    found = split_spec(agent)
    return found is not None and found[0] in BUILTIN_PROVIDERS


def provider_of(model: str) -> str:
    found = split_spec(model)
    if found is None:
        raise AgentError(
            f"model {model!r} is not an inspect model string; expected PROVIDER/MODEL, e.g. "
            "openai/gpt-5 or openai-api/local/smollm2"
        )
    return found[0]


def check_available(model: str) -> str:
    """The provider of `model`, after checking inspect_ai and the provider's package are
    installed and inspect knows the provider (one `AgentError` line otherwise)."""
    provider = provider_of(model)
    if importlib.util.find_spec("inspect_ai") is None:
        raise AgentError(f"model {model!r} runs through inspect_ai: {INSPECT_PIP}")
    needed = PROVIDER_PACKAGES.get(provider)
    if needed is not None and not _installed(needed[0]):
        raise AgentError(
            f"model {model!r}: inspect_ai's {provider!r} provider needs the {needed[1]} "
            f"package: pip install {needed[1]}"
        )
    known = registered_providers()
    if provider not in known:
        raise AgentError(
            f"model {model!r}: inspect_ai has no provider {provider!r} (known: "
            f"{', '.join(sorted(known))})"
        )
    return provider


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ModuleNotFoundError, ValueError):  # a parent package missing, or unimportable
        return False


def registered_providers() -> set[str]:
    """The model API names in inspect's registry (its own providers and any plugin's)."""
    import inspect_ai.model  # noqa: F401 - registers the built-in providers
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    return {
        registry_unqualified_name(info)
        for info in registry_find(lambda info: info.type == "modelapi")
    }


# ---------------------------------------------------------------------- response schemas
def inspect_schema(schema: Mapping[str, JsonValue]) -> JsonObject | None:
    """Our JSON Schema in the form inspect's `JSONSchema` model holds, or None when it cannot
    hold it without loss (then no response_schema is sent: the reply is validated as always).
    `const: v` becomes `enum: [v]` (the same constraint); `oneOf` becomes `anyOf` only when its
    branches are told apart by one property's distinct constants (then exactly one can match)."""
    converted = _convert(dict(schema))
    if converted is None:
        return None
    from inspect_ai.util import JSONSchema
    from inspect_ai.util._json import json_schema_dump

    try:
        dumped = json_schema_dump(JSONSchema.model_validate(converted))
    except ValueError:  # pydantic's ValidationError
        return None
    return dumped if dumped == converted else None


def _convert(node: JsonValue) -> JsonValue:
    """`node` in inspect's form, None where it cannot be held without loss."""
    if isinstance(node, list):
        items = [_convert(v) for v in node]
        return None if any(v is None for v in items) else items
    if not isinstance(node, Mapping):
        return node
    out: JsonObject = {}
    for key, value in node.items():
        if key == "const":
            out["enum"] = [value]
            continue
        if key == "oneOf":
            if not _exclusive(value):
                return None
            key = "anyOf"
        if key in ("enum", "default", "examples", "required"):
            out[key] = value
            continue
        if key == "properties" and isinstance(value, Mapping):
            props = {k: _convert(v) for k, v in value.items()}
            if any(v is None for v in props.values()):
                return None
            out[key] = props
            continue
        converted = _convert(value)
        if converted is None and value is not None:
            return None
        out[key] = converted
    return out


def _exclusive(branches: JsonValue) -> bool:
    """True when `branches` are objects each fixing one shared property to a distinct value."""
    if not isinstance(branches, list) or not branches:
        return False
    for key in _fixed_keys(branches[0]):
        values = [_fixed(b, key) for b in branches]
        if all(v is not None for v in values) and len(set(values)) == len(values):
            return True
    return False


def _fixed_keys(branch: JsonValue) -> list[str]:
    props = branch.get("properties") if isinstance(branch, Mapping) else None
    return [k for k in props if _fixed(branch, k) is not None] if isinstance(props, Mapping) else []


def _fixed(branch: JsonValue, key: str) -> str | None:
    """The one value `branch` requires for property `key` (JSON text), else None."""
    if not isinstance(branch, Mapping):
        return None
    required, props = branch.get("required"), branch.get("properties")
    if not isinstance(required, list) or key not in required or not isinstance(props, Mapping):
        return None
    prop = props.get(key)
    if not isinstance(prop, Mapping):
        return None
    if "const" in prop:
        return repr(prop["const"])
    enum = prop.get("enum")
    return repr(enum[0]) if isinstance(enum, list) and len(enum) == 1 else None


# ---------------------------------------------------------------------- requests and replies
def generate_args(
    body: Mapping[str, Any], provider: str
) -> tuple[list[ChatMessage], GenerateConfig]:
    """inspect's (input messages, GenerateConfig) of our request body for `provider`."""
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        GenerateConfig,
        ResponseSchema,
    )
    from inspect_ai.util import JSONSchema

    kinds: dict[str, Any] = {
        "system": ChatMessageSystem,
        "user": ChatMessageUser,
        "assistant": ChatMessageAssistant,
    }
    messages = [kinds[m["role"]](content=m["content"]) for m in body["messages"]]
    fields: dict[str, Any] = {"max_retries": 0}  # our loop retries, bounded and seeded
    if provider in EXACT_PROVIDERS:
        # Every field of our body as is, in the request's extra body: the server gets exactly
        # the request we hashed (the budget under the name we chose, our response_format),
        # byte for byte what the openai SDK sent before inspect carried the calls. (OpenAI's
        # own API keeps inspect's rules for its models: the reasoning-model parameter swap.)
        exact = {k: v for k, v in body.items() if k not in _BUILT_BY_INSPECT and v is not None}
        return messages, GenerateConfig(**fields, extra_body=exact)
    budget = body.get("max_tokens", body.get("max_completion_tokens"))
    if budget is not None:
        fields["max_tokens"] = budget
    # Every body field inspect's GenerateConfig has by that name goes as is: an option sent in
    # our request needs no line here.
    for name in GenerateConfig.model_fields.keys() & body.keys() - {"max_tokens"}:
        if name in _SAMPLING and provider in NO_SAMPLING_PROVIDERS:
            continue  # the provider would drop it (with a warning): not sent, and recorded so
        if body[name] is not None:
            fields[name] = body[name]
    found = body.get("response_format")
    if isinstance(found, Mapping) and provider in CHAT_PROVIDERS:
        fields["extra_body"] = {"response_format": dict(found)}  # sent as is
    elif isinstance(found, Mapping) and found.get("type") == "json_schema":
        spec = found["json_schema"]
        fields["response_schema"] = ResponseSchema(
            name=spec["name"],
            json_schema=JSONSchema.model_validate(spec["schema"]),
            strict=bool(spec.get("strict")),
        )
    return messages, GenerateConfig(**fields)


# Provider-cached prompt tokens in the flat forms inspect's OpenAI-compatible providers do not
# read (they read `prompt_tokens_details` only): DeepSeek's `prompt_cache_hit_tokens`, and
# Anthropic's `cache_read_input_tokens` as proxies pass it through. Both are part of
# `prompt_tokens`. Without them a cache hit is priced as a full prompt token.
_FLAT_CACHE_READ = ("prompt_cache_hit_tokens", "cache_read_input_tokens")


def flat_cache_read(raw_usage: Mapping[str, JsonValue] | None) -> int | None:
    """The cached prompt tokens a raw OpenAI-form `usage` reports in a flat field, if any."""
    for field in _FLAT_CACHE_READ:
        value = (raw_usage or {}).get(field)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def completion_of(
    output: ModelOutput, raw_usage: Mapping[str, JsonValue] | None = None
) -> Completion:
    """Our Completion of inspect's ModelOutput (an unusable one raises a malformed CallFault);
    `raw_usage` is the provider's own usage object where inspect's provider hands it over."""
    if not getattr(output, "choices", None):
        error = getattr(output, "error", None) or "no choices"
        raise CallFault("malformed", f"malformed response: inspect_ai returned no reply ({error})")
    usage = getattr(output, "usage", None)
    prompt = completion_tokens = read = written = None
    if usage is not None:
        read, written = usage.input_tokens_cache_read, usage.input_tokens_cache_write
        # inspect's input_tokens excludes the cache reads and writes (its ModelUsage docs).
        prompt = usage.input_tokens + (read or 0) + (written or 0)
        completion_tokens = usage.output_tokens
        flat = flat_cache_read(raw_usage)
        if not read and flat:  # inspect counted them as uncached input: prompt is unchanged
            read = min(flat, prompt)
    stop = str(output.stop_reason)
    model = getattr(output, "model", None)
    return Completion(
        text=output.completion or "",
        finish_reason=_STOP_REASONS.get(stop, stop),
        prompt_tokens=prompt,
        completion_tokens=completion_tokens,
        cached_tokens=read,
        resolved_model=model if isinstance(model, str) and model else None,
        cache_write_tokens=written or None,
    )


# ---------------------------------------------------------------------- the event loop
# The raw `usage` of the response to the request in flight, per asyncio task.
_RAW_USAGE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "labreplay_raw_usage", default=None
)
_LOOP: dict[str, asyncio.AbstractEventLoop] = {}
_LOOP_LOCK = threading.Lock()


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop thread for every inspect model of the process: a model's HTTP client is
    bound to the loop of its first request, and our sync client has none, while `run_many`
    starts a fresh loop per batch. Every request runs here; callers wait on it."""
    with _LOOP_LOCK:
        loop = _LOOP.get("loop")
        if loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="labreplay-inspect", daemon=True
            )
            thread.start()
            _LOOP["loop"] = loop
        return loop


class InspectEndpoint:
    """inspect_ai's `Model.generate` for one model string, as our clients send: our request body
    in, a `Completion` out (`create_sync` waits in the calling thread, `create_async` is
    awaited); every request runs on one event loop thread under a wall-clock deadline."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None) -> None:
        from inspect_ai.model import get_model

        self.provider = check_available(model)
        if self.provider == "mockllm":
            allow_mockllm_offline()
        args: dict[str, Any] = {}
        if PROVIDER_PACKAGES.get(self.provider, ("",))[0] in ("openai", "anthropic"):
            args["max_retries"] = 0  # the SDK's own retries too: ours are the only ones
        if self.provider == "openai":
            # Chat completions, as for OpenAI-compatible servers (inspect would use the Responses API
            # for reasoning models, which OpenAI-compatible servers lack).
            args["responses_api"] = False
        key = api_key  # the caller's (`--api-key-env`, else the provider's own variable)
        if not key and self.provider in ("openai-api", "openai") and base_url:
            key = PLACEHOLDER_KEY  # no key set: a local server takes any; the provider wants one
        if base_url and self.provider in _V1_APPENDED:
            base_url = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
        try:
            self._model = get_model(model, base_url=base_url, api_key=key, **args)
        except Exception as exc:  # inspect's own refusal (a missing key, a bad name): one line
            text = _RICH_MARKUP.sub("", " ".join(str(exc).split()))[:300] or type(exc).__name__
            raise AgentError(f"model {model!r}: inspect_ai refused it ({text})") from None
        # inspect reads its model database (YAML, seconds on a busy machine) on the first
        # request: read it now, so no request's timeout pays for it.
        with contextlib.suppress(Exception):  # a warm-up only: a request says what is wrong
            self._model.api.model_family()
        self._keep_raw_usage()

    def _keep_raw_usage(self) -> None:
        """inspect's OpenAI-compatible providers hand every raw response to `on_response` (a
        hook for subclasses): this instance's hook also keeps the response's `usage` for the
        request in flight (a context variable: concurrent requests each keep their own)."""
        api = self._model.api
        hook = getattr(api, "on_response", None)
        if hook is None:
            return

        def on_response(response: JsonObject) -> None:
            kept = _RAW_USAGE.get()
            usage = response.get("usage") if isinstance(response, dict) else None
            if kept is not None and isinstance(usage, dict):
                kept.update(usage)
            hook(response)

        setattr(api, "on_response", on_response)  # noqa: B010 - an instance hook, not typed

    async def _generate(self, body: Mapping[str, JsonValue], timeout: float) -> Completion:
        messages, config = generate_args(body, self.provider)
        raw_usage: dict[str, Any] = {}
        _RAW_USAGE.set(raw_usage)  # this task's own context (run_coroutine_threadsafe)
        try:
            output = await asyncio.wait_for(
                self._model.generate(input=messages, config=config), timeout
            )
        except Exception as exc:
            fault = fault_of(exc)
            if fault is None:
                # Not a timeout, connection or HTTP failure: the provider could not read what
                # came back (a body that is not a chat completion). Data, like any bad reply.
                text = " ".join(str(exc).split())[:200]
                fault = CallFault("malformed", f"malformed response: {type(exc).__name__}: {text}")
            raise fault from exc
        return completion_of(output, raw_usage)

    def create_sync(self, body: Mapping[str, JsonValue], timeout: float) -> Completion:
        future = asyncio.run_coroutine_threadsafe(self._generate(body, timeout), _loop())
        return future.result()

    async def create_async(self, body: Mapping[str, JsonValue], timeout: float) -> Completion:
        future = asyncio.run_coroutine_threadsafe(self._generate(body, timeout), _loop())
        return await asyncio.wrap_future(future)
