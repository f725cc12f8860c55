"""What inspect_ai's own transport policy does, for the decision in issue 50 (could inspect
own retries and prices?): (1) how long its retry loop waits after a 429 that carries
`Retry-After: 12`, against a local OpenAI-compatible server on 127.0.0.1; (2) whether its model
database ships a price (`ModelInfo.cost`) for the models the docs name. About 15 s.

    python scripts/inspect_transport_probe.py
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ASKED_WAIT_S = 12
DOC_MODELS = (
    "anthropic/claude-sonnet-4-5",
    "openai/gpt-5",
    "openai/o3-mini",
    "google/gemini-2.5-pro",
)
REPLY = {
    "id": "probe", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}  # fmt: skip
arrivals: list[float] = []


class RateLimitedOnce(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        arrivals.append(time.monotonic())
        first = len(arrivals) == 1
        body = json.dumps({"error": {"message": "slow down"}} if first else REPLY).encode()
        self.send_response(429 if first else 200)
        if first:
            self.send_header("Retry-After", str(ASKED_WAIT_S))
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    from inspect_ai.model import GenerateConfig, get_model
    from inspect_ai.model._model_info import get_model_info

    server = ThreadingHTTPServer(("127.0.0.1", 0), RateLimitedOnce)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    model = get_model("openai-api/probe/m", base_url=url, api_key="probe", max_retries=0)
    config = GenerateConfig(max_retries=3, timeout=120)
    asyncio.run(model.generate("hi", config=config))
    server.shutdown()
    waited = arrivals[1] - arrivals[0]
    print(f"retry after a 429 asking Retry-After: {ASKED_WAIT_S} s: inspect waited {waited:.1f} s")
    for name in DOC_MODELS:
        info = get_model_info(name)
        print(f"{name}: price in inspect's model database: {info.cost if info else 'no entry'}")


if __name__ == "__main__":
    main()
