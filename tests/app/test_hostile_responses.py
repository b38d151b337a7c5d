"""Malformed Responses API bodies (issue 14, finding 6): each is a model error — one clear
line, exit 1, no traceback — or, when only a tool call's arguments are bad, an `ERROR:`
answer to the model while the session goes on."""

from __future__ import annotations

import json

import pytest

from tests.agent.responses_server import (
    ResponsesServer,
    function_call_item,
    message_item,
    response_body,
)
from tests.app.test_responses_cli import data_dir, live_run

__all__ = ["data_dir"]  # a fixture: the live CLI's data dir, key set, no stray .env


def raw(body: dict, **replace: str) -> str:
    """The body as JSON text, with placeholders swapped for text json.dumps cannot write."""
    text = json.dumps(body)
    for placeholder, value in replace.items():
        text = text.replace(json.dumps(placeholder), value)
    return text


def calling(arguments: str) -> str:
    return raw(response_body([function_call_item("read_file", "ARGS")]), ARGS=arguments)


MALFORMED_BODIES = {
    "error as a string": raw(response_body([], status="failed", error="it broke")),
    "incomplete_details as a string": raw(
        response_body([], status="incomplete", incomplete_details="cut")
    ),
    "content: 5": raw(response_body([{"type": "message", "role": "assistant", "content": 5}])),
    "a 5,000-digit integer": raw(response_body([message_item("x")], created_at="N"), N="9" * 5000),
    "nested 100,000 deep": raw(response_body([message_item("x")], extra="N"), N="[" * 100_000),
    "output not a list": raw(response_body([]) | {"output": "OUT"}, OUT='{"a": 1}'),
    "not an object": "[1, 2, 3]",
}


@pytest.mark.parametrize("body", MALFORMED_BODIES.values(), ids=MALFORMED_BODIES)
def test_a_malformed_response_is_one_line_exit_1_and_charged_its_worst_case(
    capsys, data_dir, alpha, body
):
    with ResponsesServer() as server:
        server.enqueue(body)
        code = live_run(alpha, server)
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines()]
    report = events[-1]
    worst = next(e for e in events if e["event"] == "model_requested")["worst_case_usd"]
    assert "Traceback" not in captured.err + captured.out
    assert (code, report["status"], report["cost_usd"]) == (1, "api_error", worst)
    [stop] = [e for e in events if e["event"] == "note" and e["level"] == "error"]
    assert "malformed response" in stop["message"] or "other than a JSON object" in stop["message"]


BAD_USAGE = {"a string": '"lots"', "NaN": "NaN", "1e400": "1e400", "negative": "-5000"}


@pytest.mark.parametrize("value", BAD_USAGE.values(), ids=BAD_USAGE)
def test_usage_that_cannot_be_billed_is_charged_the_worst_case_and_the_session_goes_on(
    capsys, data_dir, alpha, value
):
    usage = {"input_tokens": "N", "output_tokens": 1} if value != '"lots"' else "N"
    with ResponsesServer() as server:
        server.enqueue(
            raw(response_body([function_call_item("run_tests", {})], usage=usage), N=value)
        )
        server.enqueue_response([message_item("done")])
        live_run(alpha, server)
        assert len(server.requests) == 2  # the session went on
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    worst = next(e for e in events if e["event"] == "model_requested")["worst_case_usd"]
    assert any("charged the worst case" in e.get("message", "") for e in events)
    assert events[-1]["cost_usd"] >= worst > 0  # never less: a negative count lowers nothing


TOOL_ARGUMENTS = {
    "a lone surrogate": ('{"path": "app\\ud800.py"}', "ERROR: "),
    "nested 100,000 deep": ('{"path": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
    "a 5,000-digit integer": ('{"path": ' + "9" * 5000 + "}", "not usable JSON"),
    "ten megabytes": ('{"path": "' + "a" * 10_000_000 + '"}', "the limit is"),
}


@pytest.mark.parametrize(("arguments", "answer"), TOOL_ARGUMENTS.values(), ids=TOOL_ARGUMENTS)
def test_hostile_tool_arguments_are_answered_with_an_error_and_the_session_goes_on(
    capsys, data_dir, alpha, arguments, answer
):
    with ResponsesServer() as server:
        server.enqueue_response([function_call_item("read_file", arguments)])
        server.enqueue_response([message_item("done")])
        live_run(alpha, server)
        [output] = [
            item["output"]
            for item in server.requests[1].body["input"]
            if item.get("type") == "function_call_output"
        ]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert output.startswith("ERROR:") and answer in output
