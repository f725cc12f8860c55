"""Testing kit for labreplay users and suite authors.

`fault_server` is an OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on purpose
(rate limits, server errors, garbage bodies), for exercising LLM fault handling without a model.
"""
