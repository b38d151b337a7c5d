"""The transports against a real loopback Responses API server through the real httpx client.

Only `sleep` is faked, so backoff is recorded instead of waited for.
"""

from __future__ import annotations

import json
import socket
import stat
from collections.abc import Iterator
from datetime import datetime
from email.utils import formatdate
from pathlib import Path
from time import monotonic, time

import httpx2
import pytest

from agent.transport import (
    REHEARSAL_ENDS,
    HttpResponsesTransport,
    OutcomeUnknownError,
    RecordingTransport,
    ReplayScriptError,
    ReplayTransport,
    ResponsesAPIError,
    RetryNotice,
)
from agent.turns import Usage
from tests.agent.responses_server import (
    error_body,
    function_call_item,
    message_item,
    response_body,
)

API_KEY = "sk-test-0123456789abcdefSECRET"
PAYLOAD = {"model": "gpt-6-astra", "input": "the tests fail with KeyError: 'port'"}


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def notices() -> list[RetryNotice]:
    return []


@pytest.fixture
async def connect(sleeps, notices):
    """Opens transports that record their backoff instead of sleeping, and closes them after."""
    opened: list[HttpResponsesTransport] = []

    async def record_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    def open_transport(base_url: str, **options) -> HttpResponsesTransport:
        transport = HttpResponsesTransport(
            base_url, API_KEY, sleep=record_sleep, on_retry=notices.append, **options
        )
        opened.append(transport)
        return transport

    yield open_transport
    for transport in opened:
        await transport.aclose()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A port that is bound but not listening, so every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


async def test_success_sends_the_exact_request(server, connect, sleeps):
    expected = server.enqueue_response([message_item("Searching memory first.")])

    turn = await connect(server.base_url + "/").create(PAYLOAD)

    assert turn.raw == expected
    assert (turn.id, turn.status, turn.text, turn.calls) == (
        "resp_1",
        "completed",
        "Searching memory first.",
        (),
    )
    assert turn.usage == Usage(input_tokens=100, output_tokens=20)
    [(path, headers, sent)] = server.requests
    assert path == "/v1/responses"
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["content-type"] == "application/json"
    assert sent == PAYLOAD
    assert sleeps == []


FIRST_BACKOFF = (0.375, 0.5)  # the SDK's 0.5 s less up to 25% of jitter


@pytest.mark.parametrize(
    ("headers", "shortest", "longest"),
    [
        ({"retry-after": "1"}, 1.0, 1.0),
        ({"retry-after-ms": "250", "retry-after": "1"}, 0.25, 0.25),
        ({"retry-after": "60"}, 60.0, 60.0),
        ({"retry-after": "120"}, 120.0, 120.0),
        ({"retry-after": "0"}, *FIRST_BACKOFF),
    ],
)
async def test_429_waits_as_long_as_the_server_asks_up_to_two_minutes(
    server, connect, sleeps, notices, headers, shortest, longest
):
    server.enqueue(error_body("Rate limit reached", "rate_limit_error"), 429, headers)
    expected = server.enqueue_response([message_item("done")])

    assert (await connect(server.base_url).create(PAYLOAD)).raw == expected
    assert len(server.requests) == 2
    [delay_s] = sleeps
    assert shortest <= delay_s <= longest
    assert notices == [RetryNotice(attempt=1, delay_s=delay_s, reason="HTTP 429")]


@pytest.mark.parametrize("headers", [{"retry-after": "300"}, {"retry-after-ms": "300000"}])
async def test_a_wait_over_two_minutes_is_not_waited_but_reported(server, connect, sleeps, headers):
    server.enqueue(error_body("Slow down", "rate_limit_error"), 429, headers)

    with pytest.raises(ResponsesAPIError, match="Slow down") as caught:
        await connect(server.base_url).create(PAYLOAD)

    assert caught.value.status == 429 and sleeps == [] and len(server.requests) == 1


@pytest.mark.parametrize("status", [408, 409, 500, 501, 529])
async def test_request_timeouts_lock_conflicts_and_every_5xx_are_retried(
    server, connect, notices, status
):
    server.enqueue(error_body("Try again", "server_error"), status)
    expected = server.enqueue_response([message_item("done")])

    assert (await connect(server.base_url).create(PAYLOAD)).raw == expected
    assert len(server.requests) == 2
    assert [notice.reason for notice in notices] == [f"HTTP {status}"]


async def test_x_should_retry_false_on_a_500_makes_exactly_one_request(server, connect, sleeps):
    server.enqueue(error_body("Do not retry", "server_error"), 500, {"x-should-retry": "false"})

    with pytest.raises(ResponsesAPIError) as caught:
        await connect(server.base_url).create(PAYLOAD)

    assert caught.value.status == 500
    assert len(server.requests) == 1 and sleeps == []


@pytest.mark.parametrize("status", [400, 429])
async def test_x_should_retry_true_retries_any_status(server, connect, notices, status):
    body = error_body("Try again", "invalid_request_error", "insufficient_quota")
    server.enqueue(body, status, {"x-should-retry": "true"})
    expected = server.enqueue_response([message_item("done")])

    assert (await connect(server.base_url).create(PAYLOAD)).raw == expected
    assert len(server.requests) == 2 and len(notices) == 1


async def test_retry_after_as_an_http_date(server, connect, sleeps):
    soon = formatdate(time() + 5, usegmt=True)
    server.enqueue(error_body("Slow down", "rate_limit_error"), 429, {"retry-after": soon})
    server.enqueue(error_body("Slow down", "rate_limit_error"), 429, {"retry-after": "garbage"})
    server.enqueue_response([message_item("done")])

    await connect(server.base_url).create(PAYLOAD)

    date_delay, fallback_delay = sleeps
    assert 3.0 < date_delay <= 5.0
    assert 0.75 <= fallback_delay <= 1.0  # unreadable: jittered backoff for the second retry


async def test_500_gives_up_after_the_sdks_two_retries(server, connect, sleeps, notices):
    for _ in range(3):
        server.enqueue(error_body("The server had an error", "server_error"), 500)

    with pytest.raises(ResponsesAPIError) as caught:
        await connect(server.base_url).create(PAYLOAD)

    error = caught.value
    assert len(server.requests) == 3
    assert (error.status, error.error_type) == (500, "server_error")
    assert "gave up after 3 attempts" in str(error)
    assert [notice.attempt for notice in notices] == [1, 2]
    caps = [0.5, 1.0]  # 0.5 s * 2**retries, less up to 25%
    assert all(0.75 * cap <= delay <= cap for delay, cap in zip(sleeps, caps, strict=True))


async def test_503_then_502_then_success(server, connect, notices):
    server.enqueue(error_body("Service unavailable", "server_error"), 503)
    server.enqueue("<html><body>502 Bad Gateway</body></html>", 502)
    expected = server.enqueue_response([message_item("done")])

    assert (await connect(server.base_url).create(PAYLOAD)).raw == expected
    assert len(server.requests) == 3
    assert [notice.reason for notice in notices] == ["HTTP 503", "HTTP 502"]


async def test_400_fails_at_once_with_what_the_server_said(server, connect, sleeps):
    body = error_body("Unknown parameter 'foo'", code="unknown_parameter", param="foo")
    server.enqueue(body, 400)

    with pytest.raises(ResponsesAPIError) as caught:
        await connect(server.base_url).create(PAYLOAD)

    error = caught.value
    assert str(error) == (
        "Responses API 400 invalid_request_error (code: unknown_parameter): Unknown parameter 'foo'"
    )
    assert (error.status, error.code) == (400, "unknown_parameter")
    assert len(server.requests) == 1
    assert sleeps == []


async def test_401_never_shows_the_key(server, connect):
    message = f"Incorrect API key provided: {API_KEY}."
    server.enqueue(error_body(message, code="invalid_api_key"), 401)

    with pytest.raises(ResponsesAPIError) as caught:
        await connect(server.base_url).create(PAYLOAD)

    assert caught.value.status == 401
    assert API_KEY not in str(caught.value)
    assert "[REDACTED]" in str(caught.value)
    assert len(server.requests) == 1


async def test_429_for_spent_quota_is_not_retried(server, connect):
    body = error_body("You exceeded your current quota", "insufficient_quota", "insufficient_quota")
    server.enqueue(body, 429)

    with pytest.raises(ResponsesAPIError, match="exceeded your current quota"):
        await connect(server.base_url).create(PAYLOAD)
    assert len(server.requests) == 1


async def test_a_2xx_that_is_not_a_json_object_is_an_error(server, connect):
    server.enqueue("<html>captive portal</html>", 200)

    with pytest.raises(ResponsesAPIError, match="other than a JSON object") as caught:
        await connect(server.base_url).create(PAYLOAD)
    assert caught.value.status == 200
    assert len(server.requests) == 1


async def test_connection_refused_is_retried_then_reported(refused_url, connect, notices):
    with pytest.raises(ResponsesAPIError) as caught:
        await connect(refused_url, max_retries=2).create(PAYLOAD)

    message = str(caught.value)
    assert message.startswith(
        f"Responses API: could not reach {refused_url}/responses: ConnectError"
    )
    assert "gave up after 3 attempts" in message
    assert API_KEY not in message
    assert caught.value.status is None
    assert [notice.reason.split(":")[0] for notice in notices] == ["ConnectError"] * 2


async def test_a_read_timeout_is_not_retried_since_it_may_have_been_billed(
    server, connect, notices
):
    server.enqueue(response_body([message_item("too late")]), delay_s=1.0)
    with pytest.raises(OutcomeUnknownError, match="may have run"):
        await connect(server.base_url, request_timeout_s=0.2).create(PAYLOAD)
    assert notices == [] and len(server.requests) == 1


async def test_the_sdk_default_timeouts(connect):
    transport = connect("http://127.0.0.1:9/v1")
    assert transport.request_timeout_s == 600.0
    assert transport.timeout == httpx2.Timeout(600.0, connect=5.0)


async def test_a_request_timeout_of_1_s_against_a_3_s_server_is_outcome_unknown(
    server, connect, notices
):
    server.enqueue(response_body([message_item("too late")]), delay_s=3.0)
    started = monotonic()

    with pytest.raises(OutcomeUnknownError, match="may have run"):
        await connect(server.base_url, request_timeout_s=1.0).create(PAYLOAD)

    assert 0.9 <= monotonic() - started < 2.0
    assert notices == [] and len(server.requests) == 1


async def test_a_server_that_drips_its_answer_still_times_out_at_the_request_timeout(
    server, connect, notices
):
    server.enqueue(response_body([message_item("slowly")]), drip_s=0.3)  # ~60 s in all
    started = monotonic()

    with pytest.raises(OutcomeUnknownError, match="no complete answer within 1s"):
        await connect(server.base_url, request_timeout_s=1.0).create(PAYLOAD)

    assert 0.9 <= monotonic() - started < 2.0
    assert notices == [] and len(server.requests) == 1


async def test_a_connection_closed_after_sending_is_not_retried(server, connect, notices):
    server.enqueue(None, hang_up=True)

    with pytest.raises(OutcomeUnknownError, match="may have run") as caught:
        await connect(server.base_url).create(PAYLOAD)

    assert caught.value.error_type == "outcome_unknown"
    assert notices == [] and len(server.requests) == 1


async def test_a_bad_base_url_fails_at_once_as_configuration(connect, notices):
    with pytest.raises(ResponsesAPIError) as caught:
        await connect("ftp://example.invalid/v1").create(PAYLOAD)
    assert caught.value.error_type == "invalid_base_url" and notices == []


async def test_recording_writes_private_redacted_pairs(server, connect, tmp_path):
    path = tmp_path / "transcripts" / "session.jsonl"
    recorder = RecordingTransport(connect(server.base_url), path, secrets=[API_KEY])
    leaky = PAYLOAD | {"metadata": {"note": f"key={API_KEY}"}}
    expected = server.enqueue_response([message_item("done")])
    server.enqueue(error_body("Unknown parameter 'foo'", code="unknown_parameter"), 400)

    assert (await recorder.create(leaky)).raw == expected
    with pytest.raises(ResponsesAPIError):
        await recorder.create(PAYLOAD)

    text = path.read_text()
    assert API_KEY not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    success, failure = (json.loads(line) for line in text.splitlines())
    assert datetime.fromisoformat(success["at"]).utcoffset() is not None
    assert success["request"]["metadata"] == {"note": "key=[REDACTED]"}
    assert success["response"] == expected
    assert failure["request"] == PAYLOAD
    assert failure["error"].startswith("Responses API 400 invalid_request_error")


def write_script(path: Path, *lines: object) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    )
    return path


async def test_replay_plays_a_script_and_fills_in_the_rest(tmp_path):
    call = {"type": "function_call", "name": "search_codebase_memory", "arguments": "{}"}
    given = {"id": "resp_given", "status": "incomplete", "usage": {"input_tokens": 7}}
    script = write_script(
        tmp_path / "rehearsal.jsonl",
        {"output": [call]},
        "",
        given | {"output": [message_item("done")]},
    )
    replay = ReplayTransport(script)
    payload = dict(PAYLOAD)

    first_turn = await replay.create(payload)
    payload["input"] = "changed after sending"
    second_turn = await replay.create(PAYLOAD)
    first, second = first_turn.raw, second_turn.raw

    assert first["id"] == first_turn.id == "resp_replay_1"
    assert (first["object"], first["status"]) == ("response", "completed")
    assert first["usage"]["input_tokens"] == len(json.dumps(PAYLOAD)) // 4
    assert first["usage"]["output_tokens"] == max(1, len(json.dumps([call])) // 4)
    assert first_turn.usage == Usage(
        len(json.dumps(PAYLOAD)) // 4, max(1, len(json.dumps([call])) // 4)
    )
    [filled] = first["output"]
    assert filled["id"] and filled["call_id"]
    [parsed] = first_turn.calls
    assert (parsed.call_id, parsed.name) == (filled["call_id"], "search_codebase_memory")
    assert {key: second[key] for key in given} == given
    assert (second_turn.id, second_turn.status, second_turn.text) == (
        "resp_given",
        "incomplete",
        "done",
    )
    assert second_turn.usage is None  # no output tokens given: charged its worst case
    assert replay.requests == [PAYLOAD, PAYLOAD]
    assert replay.remaining == 0

    with pytest.raises(ResponsesAPIError) as caught:
        await replay.create(PAYLOAD)
    assert caught.value.status is None
    assert caught.value.error_type == "replay_exhausted"
    assert "no more model turns (2 played)" in str(caught.value)


@pytest.mark.parametrize(
    "bad_line",
    ["{not json", "[1, 2]", '{"output": "text"}', '{"status": "completed"}', '{"output": [3]}'],
)
def test_replay_rejects_a_malformed_script_naming_the_line(tmp_path, bad_line):
    script = write_script(tmp_path / "bad.jsonl", {"output": []}, "", bad_line)

    with pytest.raises(ReplayScriptError, match=f"{script} line 3: "):
        ReplayTransport(script)


def test_replay_rejects_a_malformed_item_naming_its_position():
    with pytest.raises(ReplayScriptError, match="script item 2: 'output' must be a list"):
        ReplayTransport([{"output": []}, {"output": None}])


async def test_a_recorded_transcript_replays(server, connect, tmp_path):
    path = tmp_path / "live.jsonl"
    recorder = RecordingTransport(connect(server.base_url), path)
    call = function_call_item("search_codebase_memory", {"query": "KeyError: 'port'"})
    live = [
        server.enqueue_response([call]),
        server.enqueue_response([message_item("Fixed.")], usage={"input_tokens": 9}),
    ]
    server.enqueue(error_body("Unknown parameter 'foo'", code="unknown_parameter"), 400)
    for _ in live:
        await recorder.create(PAYLOAD)
    with pytest.raises(ResponsesAPIError):
        await recorder.create(PAYLOAD)

    replay = ReplayTransport(path)

    replayed = [await replay.create(PAYLOAD) for _ in live]
    assert [turn.raw for turn in replayed] == live
    assert [turn.calls[0].call_id for turn in replayed[:1]] == ["call_1"]
    assert replayed[1].text == "Fixed."
    with pytest.raises(ResponsesAPIError, match="Unknown parameter 'foo'") as caught:
        await replay.create(PAYLOAD)
    assert caught.value.error_type == "recorded_error"


def rejected(call_id: str) -> dict:
    """A request answering a call with the operator's rejection, as the loop sends it."""
    output = "ERROR: operator rejected: too broad"
    return PAYLOAD | {
        "input": [{"type": "function_call_output", "call_id": call_id, "output": output}]
    }


async def test_a_script_that_applied_the_rejected_edit_ends_saying_so():
    edit = {"type": "function_call", "name": "apply_edit", "arguments": "{}"}
    tests = {"type": "function_call", "name": "run_tests", "arguments": "{}"}
    replay = ReplayTransport([{"output": [edit]}, {"output": [tests]}, {"output": [tests]}])

    await replay.create(PAYLOAD)
    ended = await replay.create(rejected("call_1"))

    assert ended.calls == () and ended.text == REHEARSAL_ENDS
    assert replay.remaining == 0


async def test_a_script_written_for_the_rejection_plays_on(tmp_path):
    edit = {"type": "function_call", "name": "apply_edit", "arguments": "{}"}
    answer = {"output": [message_item("The operator rejected the edit.")]}
    replay = ReplayTransport([{"output": [edit]}, answer])
    await replay.create(PAYLOAD)
    assert (await replay.create(rejected("call_1"))).text == "The operator rejected the edit."

    other = function_call_item("apply_edit", {"path": "b.py"})  # a transcript's next try
    lines = [{"request": rejected("call_1"), "response": {"output": [other]}}]
    transcript = write_script(tmp_path / "live.jsonl", {"output": [edit]}, *lines)
    replay = ReplayTransport(transcript)
    await replay.create(PAYLOAD)
    [again] = (await replay.create(rejected("call_1"))).calls
    assert again.name == "apply_edit"

    approved = ReplayTransport([{"output": [edit]}, {"output": [other]}])
    await approved.create(PAYLOAD)
    answered = PAYLOAD | {"input": [{"type": "function_call_output", "output": "ok: edited"}]}
    assert [c.name for c in (await approved.create(answered)).calls] == ["apply_edit"]


def test_a_script_s_reads_are_its_read_file_paths_and_a_bad_call_is_passed_over():
    def read(arguments: str) -> dict:
        return {"type": "function_call", "name": "read_file", "arguments": arguments}

    replay = ReplayTransport(
        [
            {"output": [read('{"path": "app/a.py"}'), read("not json"), read('{"path": 3}')]},
            {"output": [read('["a list"]'), read('{"path": "app/a.py"}'), read("")]},
            {"output": [{"type": "function_call", "name": "run_tests", "arguments": "{}"}]},
            {"output": [read('{"path": "app/b.py"}')]},
        ]
    )
    assert replay.scripted_reads() == ["app/a.py", "app/b.py"]
