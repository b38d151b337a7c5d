"""The one parser of the Responses API's shape, and the table of stops and exit codes."""

from __future__ import annotations

import json

import pytest

from agent import exceptions as stops
from agent.tool_schemas import parse_arguments
from agent.turns import FunctionCall, RequestOptions, Usage, parse_turn, request

CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "run_tests",
    "arguments": "{}",
    "status": "completed",
}
MESSAGE = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": " The cause "}, {"type": "refusal"}],
}


def test_a_turn_keeps_its_calls_text_and_usage_and_drops_other_items():
    turn = parse_turn(
        {
            "id": "resp_1",
            "status": "completed",
            "output": [{"type": "reasoning", "id": "rs_1"}, MESSAGE, CALL],
            "usage": {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15},
        }
    )
    assert (turn.id, turn.status, turn.text) == ("resp_1", "completed", "The cause")
    assert turn.calls == (FunctionCall("call_1", "run_tests", "{}", "completed"),)
    assert turn.usage == Usage(input_tokens=12, output_tokens=3)
    assert (turn.incomplete_reason, turn.error) == (None, None)


@pytest.mark.parametrize(
    ("fields", "attribute", "expected"),
    [
        ({}, "status", "completed"),
        ({"usage": {"input_tokens": 5}}, "usage", None),  # priced at its worst case
        ({"usage": "lots"}, "usage", None),
        (
            {"incomplete_details": {"reason": "max_output_tokens"}},
            "incomplete_reason",
            "max_output_tokens",
        ),
        ({"error": {"message": "overloaded"}}, "error", "overloaded"),
        (
            {"output": [{**CALL, "arguments": {"a": 1}}]},
            "calls",
            (FunctionCall("call_1", "run_tests", {"a": 1}, "completed"),),
        ),
    ],
)
def test_odd_fields_parse_to_something_the_loop_can_answer(fields, attribute, expected):
    assert getattr(parse_turn({"id": "resp_1", "output": [], **fields}), attribute) == expected


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"output": []}, "no id"),
        ({"id": 7, "output": []}, "no id"),
        ({"id": "r", "output": {}}, "no output list"),
        ([], "not a JSON object"),
        ({"id": "r", "output": [], "incomplete_details": "odd"}, "incomplete_details"),
        ({"id": "r", "output": [], "error": "overloaded"}, "error is not an object"),
        ({"id": "r", "output": [], "status": 5}, "status"),
        ({"id": "r", "output": [{"type": "function_call"}]}, "call_id is not a string"),
        ({"id": "r", "output": [7]}, "output item 1"),
        ({"id": "r", "output": [{"type": "message", "content": 5}]}, "content"),
        (
            {
                "id": "r",
                "output": [{"type": "message", "content": [{"refusal": 5, "type": "refusal"}]}],
            },
            "refusal",
        ),
    ],
)
def test_a_response_of_the_wrong_shape_is_a_model_error(body, says):
    with pytest.raises(stops.ModelError, match=says):
        parse_turn(body)


def test_lone_surrogates_are_made_valid_before_anything_reads_them():
    # the body as the network sends it: "\\ud800" escapes, outside and inside the arguments
    body = json.loads(
        r'{"id": "r", "output": [{"type": "function_call", "call_id": "c\ud800",'
        r' "name": "read_file", "arguments": "{\"path\": \"a\\ud800.py\"}"},'
        r' {"type": "message", "content": [{"type": "output_text", "text": "x\udfff"}]}]}'
    )
    turn = parse_turn(body)
    assert (turn.text, turn.calls[0].call_id) == ("x\ufffd", "c\ufffd")
    arguments = parse_arguments("read_file", turn.calls[0].arguments)
    assert arguments.path == "a\ufffd.py"
    arguments.path.encode()  # no UnicodeEncodeError on the way to a path


def test_only_a_chained_request_names_the_previous_response():
    options = RequestOptions(max_output_tokens=100, reasoning_effort="high")
    assert "previous_response_id" not in request("m", [], options, None)
    chained = request("m", [], options, "resp_1")
    assert chained["previous_response_id"] == "resp_1" and chained["max_output_tokens"] == 100
    assert chained["reasoning"] == {"effort": "high"} and chained["parallel_tool_calls"] is False
    assert "store" not in chained and "include" not in chained
    assert all(tool["strict"] for tool in chained["tools"])


def test_without_storage_nothing_chains_and_encrypted_reasoning_is_asked_for():
    unstored = request("m", [], RequestOptions(store=False), "resp_1")
    assert "previous_response_id" not in unstored
    assert unstored["store"] is False
    assert unstored["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize(
    ("stop", "status", "exit_code"),
    [
        (stops.OperatorStop, "stopped", 3),
        (stops.LimitReached, "turn_limit", 3),
        (stops.ToolLimitReached, "tool_limit", 3),
        (stops.OutputIncomplete, "incomplete", 3),
        (stops.BudgetStop, "budget", 3),
        (stops.GateStop, "gate", 4),
        (stops.ApprovalDeclined, "declined", 2),
        (stops.ModelError, "api_error", 1),
        (stops.ModelConfigError, "api_error", 2),
        (stops.ModelFailed, "failed", 1),
        (stops.RecordingError, "local_error", 1),
    ],
)
def test_each_stop_carries_the_exit_code_the_run_command_promises(stop, status, exit_code):
    """DESIGN's `run` codes: 1 not passing, 2 usage or configuration, 3 budget or a limit,
    4 a gate."""
    assert (stop.status, stop.exit_code) == (status, exit_code)


def test_commentary_and_refusals_are_kept_apart_from_the_answer():
    said = {"type": "output_text", "text": "Looking.", "annotations": []}
    commentary = {**MESSAGE, "phase": "commentary", "content": [said]}
    no = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "No."}],
    }
    turn = parse_turn({"id": "resp_1", "output": [commentary, MESSAGE, no], "created_by": None})
    assert (turn.commentary, turn.text, turn.refusal) == ("Looking.", "The cause", "No.")
    assert parse_turn({"id": "resp_1", "output": [commentary]}).refusal is None
    # MESSAGE's refusal part has no text: still a refusal
    assert parse_turn({"id": "resp_1", "output": [MESSAGE]}).refusal == "(no reason given)"


def test_output_items_replay_as_input_without_nulls_or_output_only_fields():
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "content": None}
    called = {**CALL, "created_by": "x", "parsed_arguments": {}}
    turn = parse_turn({"id": "resp_1", "output": [reasoning, called]})
    assert turn.replay_items == ({"type": "reasoning", "id": "rs_1", "summary": []}, CALL)
    assert turn.raw["output"][1] is called  # the transcript keeps the body as sent


def test_malformed_usage_is_no_usage_with_the_problem_named():
    turn = parse_turn({"id": "r", "output": [], "usage": {"input_tokens": -1, "output_tokens": 1}})
    assert turn.usage is None and "input_tokens" in turn.usage_problem
    detailed = {"input_tokens": 9, "output_tokens": 4}
    detailed |= {"input_tokens_details": {"cached_tokens": 8}}
    detailed |= {"output_tokens_details": {"reasoning_tokens": 3}}
    assert parse_turn({"id": "r", "output": [], "usage": detailed}).usage == Usage(9, 4, 8, 3)
