"""Compatibility names: the protocol of talking to a chat model now lives in three modules,
`llm_config` (sampling, retries, endpoint), `llm_wire` (requests, replies, validation) and
`llm_faults` (failure classification). Import from those; this module re-exports them.
"""

from __future__ import annotations

from labreplay.agents.llm_config import (
    DEFAULT_ENDPOINT,
    STRUCTURED_FALLBACKS,
    RetryPolicy,
    Sampling,
    StructuredMode,
    check_base_url,
    public_endpoint,
    public_endpoint_safe,
    secret_query_values,
)
from labreplay.agents.llm_faults import (
    FailureKind,
    MalformedResponse,
    describe_failure,
    failure_kind,
    is_call_failure,
    retry_after_s,
)
from labreplay.agents.llm_wire import (
    SCHEMA_FAULT,
    Completion,
    JsonReply,
    build_request,
    cache_key,
    extract_json_object,
    repair_messages,
    request_hash,
    validate_reply,
    validator_for_schema,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "SCHEMA_FAULT",
    "STRUCTURED_FALLBACKS",
    "Completion",
    "FailureKind",
    "JsonReply",
    "MalformedResponse",
    "RetryPolicy",
    "Sampling",
    "StructuredMode",
    "build_request",
    "cache_key",
    "check_base_url",
    "describe_failure",
    "extract_json_object",
    "failure_kind",
    "is_call_failure",
    "public_endpoint",
    "public_endpoint_safe",
    "repair_messages",
    "request_hash",
    "retry_after_s",
    "secret_query_values",
    "validate_reply",
    "validator_for_schema",
]
