"""A real loopback HTTP server that speaks the Responses API wire format, for transport tests.

Replies are scripted in order with `enqueue`; when the script runs out the server answers 500
with an error body, so a test that asks for more than it scripted fails instead of hanging.
Handler threads are daemons with socket timeouts, and leaving the `with` block stops it.

Every request body is checked against the official SDK's request types and the strict schema
rules (tests/agent/conformance.py); leaving the block fails the test if any broke them. The
builders below make responses shaped as a reasoning model's: reasoning items (their
`encrypted_content` sent only when the request's `include` asks), usage with cached and
reasoning tokens, `incomplete`, refusals, commentary messages and parallel calls.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

from tests.agent.conformance import request_validator, request_violations

ENCRYPTED_REASONING = "reasoning.encrypted_content"


def usage_body(
    input_tokens: int = 100,
    output_tokens: int = 20,
    *,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """`usage` as the API reports it: cached tokens are part of the input, reasoning tokens
    part of the output."""
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": input_tokens + output_tokens,
    }


DEFAULT_USAGE = usage_body()


class Received(NamedTuple):
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hang_up: bool = False  # close the connection after reading the request, answering nothing
    drip_s: float = 0.0  # send the body one byte at a time, this long apart
    held: threading.Event | None = None  # answer only once the test sets it

    def encoded(self, request: Any) -> tuple[bytes, str]:
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(served(self.body, request)).encode(), "application/json"


def message_item(text: str, item_id: str = "msg_1", *, phase: str | None = None) -> dict[str, Any]:
    """An assistant message; `phase` "commentary" marks one said on the way, not the answer."""
    item = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return item | ({"phase": phase} if phase else {})


def refusal_item(text: str, item_id: str = "msg_refusal") -> dict[str, Any]:
    """An assistant message whose content is a refusal part instead of text."""
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": text}],
    }


def reasoning_item(summary: str = "", item_id: str = "rs_1") -> dict[str, Any]:
    """A reasoning item; the server adds its `encrypted_content` when the request asks."""
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "id": item_id, "summary": parts}


def function_call_item(
    name: str,
    arguments: dict[str, Any] | str,
    call_id: str = "call_1",
    *,
    status: str = "completed",
) -> dict[str, Any]:
    """A function call; `arguments` as a str is sent as is (a truncated call's, say)."""
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        "status": status,
    }


def response_body(
    output: list[dict[str, Any]], *, response_id: str = "resp_1", **fields: Any
) -> dict[str, Any]:
    """A response object as the API sends it; `fields` override status, usage and the rest.
    Several function calls in `output` are parallel calls."""
    body = {
        "id": response_id,
        "object": "response",
        "created_at": 1_767_225_600,
        "status": "completed",
        "model": "gpt-6-astra",
        "output": output,
        "usage": usage_body(),
        "parallel_tool_calls": False,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
    }
    return body | fields


def incomplete_body(
    output: list[dict[str, Any]], reason: str = "max_output_tokens", **fields: Any
) -> dict[str, Any]:
    """A response cut short: status "incomplete" and the reason in `incomplete_details`."""
    return response_body(
        output, status="incomplete", incomplete_details={"reason": reason}, **fields
    )


def served(body: Any, request: Any) -> Any:
    """The reply as sent for this request: reasoning items carry `encrypted_content` only when
    the request's `include` asked for it, as the API does."""
    if not isinstance(body, dict) or not isinstance(body.get("output"), list):
        return body
    asked = isinstance(request, dict) and ENCRYPTED_REASONING in (request.get("include") or [])
    output = []
    for item in body["output"]:
        if isinstance(item, dict) and item.get("type") == "reasoning":
            item = {key: value for key, value in item.items() if key != "encrypted_content"}
            if asked:
                item["encrypted_content"] = f"encrypted:{item.get('id')}"
        output.append(item)
    return body | {"output": output}


def error_body(
    message: str,
    error_type: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    timeout = 5

    def __init__(self, *args: Any, owner: ResponsesServer, **kwargs: Any) -> None:
        self.owner = owner
        super().__init__(*args, **kwargs)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.owner.take(Received(self.path, headers, body))
        time.sleep(reply.delay_s)
        if reply.held is not None:
            reply.held.wait(timeout=30)
        if reply.hang_up:
            self.close_connection = True
            return
        data, content_type = reply.encoded(body)
        # A client that gave up waiting (the timeout tests) has closed the socket by now.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(reply.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            step = 1 if reply.drip_s else max(len(data), 1)
            for start in range(0, len(data), step):
                self.wfile.write(data[start : start + step])
                self.wfile.flush()
                time.sleep(reply.drip_s)

    def do_GET(self) -> None:
        """`/models`, as the API lists them; 401 when the server has a key and this is not it."""
        owner = self.owner
        owner.gets.append(self.path)
        if self.path.rstrip("/") != "/v1/models":
            status, body = 404, error_body(f"no route {self.path}")
        elif owner.key is not None and self.headers.get("Authorization") != f"Bearer {owner.key}":
            status, body = 401, error_body("Incorrect API key provided", code="invalid_api_key")
        else:
            listed = [
                {"id": m, "object": "model", "created": 0, "owned_by": "astra"}
                for m in owner.models
            ]
            status, body = 200, {"object": "list", "data": listed}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ResponsesServer:
    """`with ResponsesServer() as server:` serves `server.base_url` until the block ends."""

    def __init__(self, *, models: tuple[str, ...] = ("gpt-6-astra",), key: str | None = None):
        request_validator()  # built once per process (seconds), before any timed request
        self.models = models  # what GET /models lists
        self.key = key  # when set, GET /models refuses any other
        self.gets: list[str] = []  # the paths of GET requests: unpaid, kept apart
        self.requests: list[Received] = []
        self.violations: list[str] = []  # how request bodies broke the API's types
        self._replies: deque[Reply] = deque()
        self._built = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, owner=self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.base_url = f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> ResponsesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
        if self.violations and exc_info[0] is None:
            raise AssertionError(
                "requests that break the Responses API's types:\n" + "\n".join(self.violations)
            )

    def enqueue(
        self,
        body: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        *,
        delay_s: float = 0.0,
        hang_up: bool = False,
        drip_s: float = 0.0,
        held: threading.Event | None = None,
    ) -> None:
        """Script the next reply: a JSON body (or raw text for a str), after `delay_s` and
        once `held` is set, its bytes `drip_s` apart; or, with `hang_up`, read the request
        and close the connection without an answer."""
        with self._lock:
            self._replies.append(Reply(status, body, headers or {}, delay_s, hang_up, drip_s, held))

    def enqueue_response(self, output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        """Script a completed response with the next id (resp_1, resp_2, ...) and return it."""
        with self._lock:
            self._built += 1
            body = response_body(output, response_id=f"resp_{self._built}", **fields)
        self.enqueue(body)
        return body

    def take(self, received: Received) -> Reply:
        problems = request_violations(received.body)
        with self._lock:
            self.requests.append(received)
            number = len(self.requests)
            self.violations += [f"request {number}: {problem}" for problem in problems]
            if self._replies:
                return self._replies.popleft()
        message = f"the test server has no scripted reply left for request {number}"
        return Reply(500, error_body(message, "server_error"))
