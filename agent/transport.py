"""How requests reach a model: live over HTTP, recorded to a transcript, or replayed from a script.

The agent loop only sees `ResponsesTransport.create(payload) -> ModelTurn` (the body as
the server sent it, parsed by agent/turns.py and kept as `turn.raw`), so the same loop runs
against a paid Responses API endpoint, any compatible server, or the offline rehearsal
model that the demo and the tests use. A live session can be recorded and replayed as a script.
Over 400 lines on purpose: the three transports share one protocol, one error type and the
transcript line format, and read best side by side.
"""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import json
import math
import os
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, Protocol

import httpx

from agent.exceptions import ModelError
from agent.turns import ModelTurn, parse_turn
from memory.records import mask_url_passwords

# Retries follow the official openai SDK (`_base_client.py`): its backoff constants, at most
# MAX_RETRIES, and a server's `retry-after` honoured up to a minute.
MAX_RETRIES = 3
INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
MAX_RETRY_AFTER_S = 60.0
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
        parts = httpx.URL(url)
    except httpx.InvalidURL:
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
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.error_type = error_type
        self.code = code
        self.retryable = retryable

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


def retry_after_s(headers: Mapping[str, str], now: datetime) -> float | None:
    """The wait the server asked for: `retry-after-ms`, or `retry-after` in seconds or as a date."""
    try:
        if "retry-after-ms" in headers:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif "retry-after" in headers:
            value = headers["retry-after"]
            try:
                seconds = float(value)
            except ValueError:
                seconds = (parsedate_to_datetime(value) - now).total_seconds()
        else:
            return None
    except (ValueError, TypeError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


def should_retry(status: int, headers: Mapping[str, str], *, quota_spent: bool = False) -> bool:
    """The SDK's rule: `x-should-retry` decides when present; else 408, 409, 429 (unless the
    quota is spent, which waiting cannot fix) and every 5xx."""
    verdict = headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return not quota_spent and (status in (408, 409, 429) or status >= 500)


def retry_delay_s(retries_taken: int, asked_s: float | None) -> float:
    """The server's wait when it asked for one of a minute or less, else the SDK's
    exponential backoff (0.5 s doubling to 8 s) less a random 0-25%."""
    if asked_s is not None and 0 < asked_s <= MAX_RETRY_AFTER_S:
        return asked_s
    backoff_s = min(INITIAL_RETRY_DELAY_S * 2**retries_taken, MAX_RETRY_DELAY_S)
    return backoff_s * (1 - 0.25 * random.random())


def error_from_response(response: httpx.Response) -> ResponsesAPIError:
    """The server's own error type, code and message, or the start of whatever it sent."""
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
    quota_spent = "insufficient_quota" in (error_type, code)
    return ResponsesAPIError(
        message,
        status=response.status_code,
        error_type=None if error_type is None else str(error_type),
        code=None if code is None else str(code),
        retryable=should_retry(response.status_code, response.headers, quota_spent=quota_spent),
    )


def describe(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _NotSent(Exception):
    """A connection failed before the request's first byte left: safe to retry."""


class HttpResponsesTransport:
    """POSTs to `{base_url}/responses`, retrying as the openai SDK does, except a request that
    may have reached the server: that one raises OutcomeUnknownError.

    `request_timeout_s` bounds reads, writes, the connection pool and the whole exchange (a
    server that drips its answer a byte at a time still times out); connecting gets
    `connect_timeout_s`.
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
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = f"{base_url.rstrip('/')}/responses"
        self._api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.timeout = httpx.Timeout(
            request_timeout_s, connect=min(connect_timeout_s, request_timeout_s)
        )
        self.max_retries = max_retries
        self.on_retry = on_retry
        self.sleep = sleep
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient()

    async def create(self, payload: dict[str, Any]) -> ModelTurn:
        attempt = 0
        while True:
            try:
                response = await self._exchange(payload)
            except _NotSent as exc:
                reason, asked_s = str(exc), None
                message = self._scrub(f"could not reach {self.url}: {reason}")
                failure = ResponsesAPIError(message, retryable=True)
            else:
                if response.is_success:
                    return self._turn(response)
                failure = error_from_response(response)
                failure.message = self._scrub(failure.message)
                reason = f"HTTP {response.status_code}"
                asked_s = retry_after_s(response.headers, datetime.now(UTC))
            if not failure.retryable or attempt >= self.max_retries:
                if failure.retryable and attempt:
                    failure.message += f" (gave up after {attempt + 1} attempts)"
                raise failure
            delay_s = retry_delay_s(attempt, asked_s)
            attempt += 1
            if self.on_retry:
                self.on_retry(RetryNotice(attempt, delay_s, reason))
            await self.sleep(delay_s)

    async def _exchange(self, payload: dict[str, Any]) -> httpx.Response:
        """One POST within the request deadline. A failure before the request was sent
        raises _NotSent; after, OutcomeUnknownError."""
        traced: list[str] = []  # httpcore's trace: did the connection get as far as sending?

        async def trace(event: str, info: Any) -> None:
            traced.append(event)

        try:
            async with asyncio.timeout(self.request_timeout_s):
                return await self._client.post(
                    self.url,
                    json=payload,
                    headers={"Authorization": f"Bearer {self._api_key}"},
                    timeout=self.timeout,
                    extensions={"trace": trace},
                )
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise ResponsesAPIError(
                self._scrub(f"bad base URL {self.url}: {describe(exc)}"),
                error_type="invalid_base_url",
            ) from exc
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise _NotSent(describe(exc)) from exc
        except TimeoutError as exc:  # the deadline, which may fall before anything was sent
            reason = f"no complete answer within {self.request_timeout_s:g}s"
            if traced and not any(
                event.endswith(".send_request_headers.started") for event in traced
            ):
                raise _NotSent(reason) from exc
            raise self._outcome_unknown(reason) from exc
        except httpx.TransportError as exc:
            raise self._outcome_unknown(describe(exc)) from exc

    def _outcome_unknown(self, reason: str) -> OutcomeUnknownError:
        return OutcomeUnknownError(
            self._scrub(
                f"the request to {self.url} failed after it was sent ({reason}); "
                "not retried, since the server may have run (and billed) it"
            ),
            error_type="outcome_unknown",
        )

    def _turn(self, response: httpx.Response) -> ModelTurn:
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
        if self._owns_client:
            await self._client.aclose()


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


def load_script(script: Path | Sequence[dict[str, Any]]) -> list[Turn]:
    """Every scripted turn, checked up front so a bad script fails before the session starts."""
    if not isinstance(script, str | Path):
        return [as_turn(item, f"script item {number}") for number, item in enumerate(script, 1)]
    turns = []
    for number, text in enumerate(Path(script).read_text("utf-8").splitlines(), 1):
        if text.strip():
            where = f"{script} line {number}"
            turns.append(as_turn(parse_line(text, where), where))
    return turns


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
    """Plays scripted model outputs: the offline model of the demo and the tests."""

    def __init__(self, script: Path | Sequence[dict[str, Any]]) -> None:
        self._turns = deque(load_script(script))
        self._length = len(self._turns)
        self.requests: list[dict[str, Any]] = []

    @property
    def remaining(self) -> int:
        return len(self._turns)

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
        turn = self._turns.popleft()
        if isinstance(turn, ResponsesAPIError):
            raise turn
        return parse_turn(complete(copy.deepcopy(turn), payload, played + 1))


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
