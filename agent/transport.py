"""How requests reach a model: live over HTTP, recorded to a transcript, or replayed from a script.

The agent loop only sees `ResponsesTransport.create(payload) -> ModelTurn` (the body as
the server sent it, parsed by agent/turns.py and kept as `turn.raw`), so the same loop runs
against a paid Responses API endpoint, any compatible server, or the offline rehearsal
model that the demo and the tests use. A live session can be recorded and replayed as a script.
The live one is the official openai SDK's client, with the rules money adds; the three share
one protocol, one error type and the transcript line format, and read best side by side.
"""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import json
import os
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import anyio
import httpx2
import openai

from agent.exceptions import ModelError
from agent.turns import ModelTurn, parse_turn
from memory.text import mask_url_passwords

MAX_RETRIES = openai.DEFAULT_MAX_RETRIES
REQUEST_TIMEOUT_S = 600.0  # the SDK's default, for reads, writes, the pool and the whole request
CONNECT_TIMEOUT_S = 5.0
REDACTED = "[REDACTED]"
_MAX_ERROR_TEXT = 300


class ResponsesTransport(Protocol):
    async def create(self, payload: dict[str, Any]) -> ModelTurn: ...

    async def aclose(self) -> None: ...


def insecure_base_url(url: str) -> bool:
    """Whether the key would cross the network in clear text: not https, and not to this
    machine (127.0.0.0/8, ::1, localhost)."""
    try:
        parts = httpx2.URL(url)
    except httpx2.InvalidURL:
        return False  # refused as a bad base URL at the first request
    if parts.scheme in ("https", ""):
        return False
    host = parts.host.lower()
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


class ResponsesAPIError(Exception):
    """The Responses API refused or failed a request; carries what the server said."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.code = code

    @property
    def is_configuration(self) -> bool:
        """The server refused our setup (key, model, base URL), not this one request."""
        return self.status in (401, 403, 404) or self.error_type == "invalid_base_url"

    def __str__(self) -> str:
        head = " ".join(
            str(part) for part in ("Responses API", self.status, self.error_type) if part
        )
        code = f" (code: {self.code})" if self.code else ""
        return f"{head}{code}: {self.message}"


class OutcomeUnknownError(ResponsesAPIError):
    """The request was sent and no answer came (a timeout, a connection lost part-way): the
    server may have run and billed it. Never retried; the caller charges its worst case."""


@dataclass(frozen=True)
class RetryNotice:
    """Told to the operator before each backoff sleep."""

    attempt: int
    delay_s: float
    reason: str


def error_from_status(exc: openai.APIStatusError) -> ResponsesAPIError:
    """The server's own error type, code and message, or the start of whatever it sent."""
    response = exc.response
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or response.reason_phrase)
        error_type, code = error.get("type"), error.get("code")
    else:
        message = response.text.strip()[:_MAX_ERROR_TEXT] or response.reason_phrase
        error_type = code = None
    return ResponsesAPIError(
        message,
        status=response.status_code,
        error_type=None if error_type is None else str(error_type),
        code=None if code is None else str(code),
    )


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _NoAnswer(openai.OpenAIError):
    """Sent, and no whole answer came. An OpenAIError, so the SDK passes it on unretried."""


class _BadBaseURL(openai.OpenAIError):
    """The base URL cannot be requested at all; retrying would not change that."""


class _MoneyGuard(httpx2.AsyncBaseTransport):
    """The SDK's HTTP transport, with the rules money adds to its retries: a request that
    may have reached the server is never sent again (it may have been billed), the whole
    exchange has one deadline (a server dripping its answer still times out), and a 429 for
    a spent quota is not retried (waiting cannot fix it)."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self._inner = httpx2.AsyncHTTPTransport()
        self.unsent_reason = "no connection"  # why the last attempt that sent nothing failed

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        traced: list[str] = []  # httpcore's trace: did the request get as far as sending?

        async def trace(event: str, info: Any) -> None:
            traced.append(event)

        def sent() -> bool:
            return any(event.endswith(".send_request_headers.started") for event in traced)

        request.extensions = {**request.extensions, "trace": trace}
        try:
            async with asyncio.timeout(self.deadline_s):
                response = await self._inner.handle_async_request(request)
                try:
                    body = await response.aread()
                finally:
                    await response.aclose()
        except httpx2.UnsupportedProtocol as exc:
            raise _BadBaseURL(describe(exc)) from exc
        except TimeoutError as exc:
            if not sent():
                self.unsent_reason = f"not sent within {self.deadline_s:g}s"
                raise httpx2.ConnectTimeout(self.unsent_reason) from exc
            raise _NoAnswer(f"no complete answer within {self.deadline_s:g}s") from exc
        except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout) as exc:
            self.unsent_reason = describe(exc)
            raise  # nothing was sent: the SDK retries
        except (httpx2.TransportError, OSError, anyio.EndOfStream) as exc:
            if not sent():
                self.unsent_reason = describe(exc)
                raise
            raise _NoAnswer(describe(exc)) from exc
        headers = httpx2.Headers(response.headers)
        quota_spent = response.status_code == 429 and b"insufficient_quota" in body
        if quota_spent and "x-should-retry" not in headers:
            headers["x-should-retry"] = "false"
        return httpx2.Response(
            response.status_code, headers=headers, content=body, extensions=response.extensions
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class _SDKClient(openai.AsyncOpenAI):
    """The official client, its retry rules and backoff as they are; each wait is told to
    the operator first, and taken through `sleep` (tests record it instead)."""

    def __init__(
        self,
        *,
        guard: _MoneyGuard,
        on_retry: Callable[[RetryNotice], None] | None,
        sleep: Callable[[float], Awaitable[None]],
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self._guard = guard
        self._on_retry = on_retry
        self._sleep = sleep
        self.attempts = 0

    async def _sleep_for_retry(
        self,
        *,
        retries_taken: int,
        max_retries: int,
        options: Any,
        response: httpx2.Response | None,
    ) -> None:
        headers = response.headers if response is not None else None
        delay_s = self._calculate_retry_timeout(max_retries - retries_taken, options, headers)
        reason = self._guard.unsent_reason if response is None else f"HTTP {response.status_code}"
        self.attempts = retries_taken + 2
        if self._on_retry:
            self._on_retry(RetryNotice(retries_taken + 1, delay_s, reason))
        await self._sleep(delay_s)


class HttpResponsesTransport:
    """POSTs to `{base_url}/responses` through the official openai SDK, retrying as it does,
    except a request that may have reached the server: that one raises OutcomeUnknownError.

    `request_timeout_s` bounds reads, writes, the connection pool and the whole exchange;
    connecting gets `connect_timeout_s`. The body goes as the payload is and comes back as
    the server sent it (agent/turns.py reads it), so transcripts keep the wire format.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        max_retries: int = MAX_RETRIES,
        on_retry: Callable[[RetryNotice], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/responses"
        self._api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.timeout = httpx2.Timeout(
            request_timeout_s, connect=min(connect_timeout_s, request_timeout_s)
        )
        guard = _MoneyGuard(request_timeout_s)
        self._http = httpx2.AsyncClient(transport=guard, follow_redirects=False)
        try:
            self._client: _SDKClient | None = _SDKClient(
                api_key=api_key,
                base_url=base_url,
                organization=None,
                project=None,
                timeout=self.timeout,
                max_retries=max_retries,
                http_client=self._http,
                guard=guard,
                on_retry=on_retry,
                sleep=sleep,
            )
        except (httpx2.InvalidURL, ValueError, TypeError):
            self._client = None  # refused at the first request, as configuration

    async def create(self, payload: dict[str, Any]) -> ModelTurn:
        if self._client is None:
            raise self._bad_base_url("not a URL")
        self._client.attempts = 1
        try:
            response = await self._client.post("/responses", body=payload, cast_to=httpx2.Response)
        except _BadBaseURL as exc:
            raise self._bad_base_url(str(exc)) from exc
        except _NoAnswer as exc:
            raise self._outcome_unknown(str(exc)) from exc
        except openai.APIStatusError as exc:
            failure = error_from_status(exc)
            failure.message = self._scrub(failure.message) + self._gave_up()
            raise failure from exc
        except openai.APIConnectionError as exc:  # APITimeoutError too: nothing was sent
            reason = describe(exc.__cause__) if exc.__cause__ else describe(exc)
            message = self._scrub(f"could not reach {self.url}: {reason}")
            raise ResponsesAPIError(message + self._gave_up()) from exc
        return self._turn(response)

    async def list_models(self) -> list[str]:
        """The model ids `{base_url}/models` lists: an unpaid request that proves the base URL
        and the key before any paid one (`doctor`). Not retried; failures as `create`'s."""
        if self._client is None:
            raise self._bad_base_url("not a URL")
        where = self.url.removesuffix("/responses") + "/models"
        try:
            response = await self._client.get(
                "/models", cast_to=httpx2.Response, options={"max_retries": 0}
            )
            listed = response.json().get("data")
            return [str(model["id"]) for model in listed]
        except _BadBaseURL as exc:
            raise self._bad_base_url(str(exc)) from exc
        except openai.APIStatusError as exc:
            failure = error_from_status(exc)
            failure.message = self._scrub(failure.message)
            raise failure from exc
        except (openai.OpenAIError, httpx2.HTTPError) as exc:  # _NoAnswer, a connection
            reason = describe(exc.__cause__) if exc.__cause__ else describe(exc)
            raise ResponsesAPIError(self._scrub(f"could not reach {where}: {reason}")) from exc
        except (ValueError, AttributeError, TypeError, KeyError, RecursionError):
            raise ResponsesAPIError(self._scrub(f"{where} answered with no model list")) from None

    def _gave_up(self) -> str:
        attempts = self._client.attempts if self._client else 1
        return f" (gave up after {attempts} attempts)" if attempts > 1 else ""

    def _bad_base_url(self, reason: str) -> ResponsesAPIError:
        return ResponsesAPIError(
            self._scrub(f"bad base URL {self.url}: {reason}"), error_type="invalid_base_url"
        )

    def _outcome_unknown(self, reason: str) -> OutcomeUnknownError:
        return OutcomeUnknownError(
            self._scrub(
                f"the request to {self.url} failed after it was sent ({reason}); "
                "not retried, since the server may have run (and billed) it"
            ),
            error_type="outcome_unknown",
        )

    def _turn(self, response: httpx2.Response) -> ModelTurn:
        """The turn in a success's body. One that is not a response may still have been
        billed, so it is an unknown outcome: charged its worst case, never retried."""
        try:
            return parse_turn(response.json())
        except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, deep nesting
            problem = "something other than a JSON object"
        except ModelError as exc:
            problem = str(exc)
        raise OutcomeUnknownError(
            self._scrub(f"the server answered {self.url} with {problem}"),
            status=response.status_code,
            error_type="malformed_response",
        )

    def _scrub(self, text: str) -> str:
        """What we say about a request: without the key, or a password in the base URL."""
        text = mask_url_passwords(text)
        return text.replace(self._api_key, REDACTED) if self._api_key else text

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
        await self._http.aclose()


class RecordingTransport:
    """Wraps a transport and appends each request/response pair to a JSONL transcript."""

    def __init__(
        self, inner: ResponsesTransport, path: Path, *, secrets: Sequence[str] = ()
    ) -> None:
        self.inner = inner
        self.path = path
        # Lines are written with ensure_ascii, so a secret appears in its JSON-escaped form.
        self._secrets = [json.dumps(secret)[1:-1] for secret in secrets if secret]

    async def create(self, payload: dict[str, Any]) -> ModelTurn:
        entry: dict[str, Any] = {"at": datetime.now(UTC).isoformat(), "request": payload}
        try:
            turn = await self.inner.create(payload)
        except Exception as exc:
            entry["error"] = str(exc)
            await asyncio.to_thread(self._append, entry)
            raise
        entry["response"] = turn.raw  # transcripts stay in the wire format, to be replayed
        await asyncio.to_thread(self._append, entry)
        return turn

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry)
        for secret in self._secrets:
            line = line.replace(secret, REDACTED)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with open(fd, "a", encoding="utf-8") as transcript:
            transcript.write(line + "\n")


class ReplayScriptError(ValueError):
    """A rehearsal script line that is neither a model turn nor a transcript line."""


Turn = dict[str, Any] | ResponsesAPIError
REJECTION = "ERROR: operator rejected"
REHEARSAL_ENDS = (
    "The rehearsal ends here: the operator rejected its scripted edit, and the rest of the "
    "script was written for a session that applied it."
)


class ScriptedTurn(NamedTuple):
    turn: Turn
    after_rejection: bool  # a transcript's turn whose recorded request rejected an edit


def answers_a_rejection(payload: Any) -> bool:
    """Whether a request answers the model's last calls with an operator's rejection."""
    items = payload.get("input") if isinstance(payload, dict) else None
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            return False
        if str(item.get("output", "")).startswith(REJECTION):
            return True
    return False


def load_script(script: Path | Sequence[dict[str, Any]]) -> list[ScriptedTurn]:
    """Every scripted turn, checked up front so a bad script fails before the session starts."""
    if not isinstance(script, str | Path):
        items = [(item, f"script item {number}") for number, item in enumerate(script, 1)]
    else:
        items = []
        for number, text in enumerate(Path(script).read_text("utf-8").splitlines(), 1):
            if text.strip():
                where = f"{script} line {number}"
                items.append((parse_line(text, where), where))
    return [
        ScriptedTurn(as_turn(item, where), answers_a_rejection(item.get("request")))
        for item, where in items
    ]


def parse_line(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplayScriptError(f"{where}: not valid JSON ({exc.msg})") from None


def as_turn(item: Any, where: str) -> Turn:
    """A model turn as written, a transcript line's response, or a transcript line's error."""
    if not isinstance(item, dict):
        raise ReplayScriptError(f"{where}: expected a JSON object, got {type(item).__name__}")
    if "request" in item and "error" in item and "response" not in item:
        return ResponsesAPIError(str(item["error"]), error_type="recorded_error")
    turn = item.get("response", item)
    output = turn.get("output") if isinstance(turn, dict) else None
    if not isinstance(output, list) or not all(isinstance(entry, dict) for entry in output):
        raise ReplayScriptError(f"{where}: 'output' must be a list of objects")
    return turn


class ReplayTransport:
    """Plays scripted model outputs: the offline model of the demo and the tests. A script
    plays as written, except after the operator rejects an edit: a script written for a
    session that applied it (its next turn calls a tool, and no recorded request rejected
    there) ends with a message saying so, instead of going on as if the edit were made."""

    def __init__(self, script: Path | Sequence[dict[str, Any]]) -> None:
        self._turns = deque(load_script(script))
        self._length = len(self._turns)
        self.requests: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        return len(self._turns)

    def scripted_reads(self) -> list[str]:
        """The paths the script's `read_file` calls name, in order: files its author's
        project held, so a workspace without them is another project."""
        paths = []
        for turn, _ in self._turns:
            if isinstance(turn, ResponsesAPIError):
                continue
            for item in turn["output"]:
                if item.get("type") != "function_call" or item.get("name") != "read_file":
                    continue
                try:
                    path = json.loads(item.get("arguments") or "{}").get("path")
                except (ValueError, AttributeError):
                    continue  # a bad call is the session's to answer with ERROR:
                if isinstance(path, str) and path not in paths:
                    paths.append(path)
        return paths

    async def aclose(self) -> None:
        """Nothing to release: the script was read when the transport was made."""

    async def create(self, payload: dict[str, Any]) -> ModelTurn:
        self.requests.append(copy.deepcopy(payload))
        played = self._length - self.remaining
        if not self._turns:
            raise ResponsesAPIError(
                f"the rehearsal script has no more model turns ({played} played)",
                error_type="replay_exhausted",
            )
        turn, after_rejection = self._turns.popleft()
        if isinstance(turn, ResponsesAPIError):
            raise turn
        if answers_a_rejection(payload) and not after_rejection and _calls_a_tool(turn):
            self._turns.clear()  # the script goes on as if the edit were made: it no longer fits
            turn = {"output": [_message(REHEARSAL_ENDS)]}
        return parse_turn(complete(copy.deepcopy(turn), payload, played + 1))


def _calls_a_tool(turn: dict[str, Any]) -> bool:
    return any(item.get("type") == "function_call" for item in turn["output"])


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def complete(turn: dict[str, Any], payload: dict[str, Any], number: int) -> dict[str, Any]:
    """Fill in what a real server would send: ids, object, status and a token estimate."""
    turn.setdefault("id", f"resp_replay_{number}")
    turn.setdefault("object", "response")
    turn.setdefault("status", "completed")
    input_tokens = len(json.dumps(payload)) // 4
    output_tokens = max(1, len(json.dumps(turn["output"])) // 4)
    turn.setdefault(
        "usage",
        {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    )
    for index, item in enumerate(turn["output"], 1):
        if item.get("type") == "function_call":
            item.setdefault("id", f"fc_replay_{number}_{index}")
            item.setdefault("call_id", f"call_replay_{number}_{index}")
    return turn
