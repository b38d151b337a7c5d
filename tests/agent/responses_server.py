"""A real loopback HTTP server that speaks the Responses API wire format, for transport tests.

Replies are scripted in order with `enqueue`; when the script runs out the server answers 500
with an error body, so a test that asks for more than it scripted fails instead of hanging.
Handler threads are daemons with socket timeouts, and leaving the `with` block stops it.
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

DEFAULT_USAGE = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}


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

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return json.dumps(self.body).encode(), "application/json"


def message_item(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call_item(
    name: str, arguments: dict[str, Any], call_id: str = "call_1"
) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def response_body(
    output: list[dict[str, Any]], *, response_id: str = "resp_1", **fields: Any
) -> dict[str, Any]:
    """A response object as the API sends it; `fields` override status, usage and the rest."""
    body = {
        "id": response_id,
        "object": "response",
        "status": "completed",
        "model": "gpt-6-astra",
        "output": output,
        "usage": dict(DEFAULT_USAGE),
    }
    return body | fields


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
        if reply.hang_up:
            self.close_connection = True
            return
        data, content_type = reply.encoded()
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

    def log_message(self, format: str, *args: Any) -> None:
        pass


class ResponsesServer:
    """`with ResponsesServer() as server:` serves `server.base_url` until the block ends."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
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

    def enqueue(
        self,
        body: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        *,
        delay_s: float = 0.0,
        hang_up: bool = False,
        drip_s: float = 0.0,
    ) -> None:
        """Script the next reply: a JSON body (or raw text for a str), after `delay_s`, its
        bytes `drip_s` apart; or, with `hang_up`, read the request and close the connection
        without an answer."""
        with self._lock:
            self._replies.append(Reply(status, body, headers or {}, delay_s, hang_up, drip_s))

    def enqueue_response(self, output: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
        """Script a completed response with the next id (resp_1, resp_2, ...) and return it."""
        with self._lock:
            self._built += 1
            body = response_body(output, response_id=f"resp_{self._built}", **fields)
        self.enqueue(body)
        return body

    def take(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._replies:
                return self._replies.popleft()
            number = len(self.requests)
        message = f"the test server has no scripted reply left for request {number}"
        return Reply(500, error_body(message, "server_error"))
