"""The loopback server as the real Responses API: it refuses request bodies the official SDK's
types refuse, its reasoning-model-shaped responses parse with the SDK's `Response`, and the
cost guard bills what it reports."""

from __future__ import annotations

import pytest
from openai.types.responses import Response

from agent.budget import PRICES, CostGuard, Ledger
from agent.tool_schemas import TOOL_DEFINITIONS
from agent.transport import HttpResponsesTransport
from tests.agent.conformance import request_violations, strict_schema_violations
from tests.agent.responses_server import (
    ResponsesServer,
    function_call_item,
    incomplete_body,
    message_item,
    reasoning_item,
    refusal_item,
    response_body,
    usage_body,
)

PAYLOAD = {
    "model": "gpt-6-astra",
    "instructions": "Search memory first.",
    "input": [{"role": "user", "content": "the tests fail with KeyError: 'port'"}],
    "tools": TOOL_DEFINITIONS,
    "max_output_tokens": 4000,
}
SEARCH = {"query": "KeyError: 'port'", "error_type": "KeyError", "top_k": 3}


@pytest.mark.parametrize(
    "body",
    [
        response_body([reasoning_item("Look in memory first."), message_item("Done.")]),
        response_body([reasoning_item(), message_item("Searching.", phase="commentary")]),
        response_body([refusal_item("I can't help with that.")]),
        response_body(
            [
                function_call_item("search_codebase_memory", SEARCH, "call_1"),
                function_call_item("read_file", {"path": "app.py"}, "call_2"),
            ],
            usage=usage_body(10_000, 500, cached_tokens=9_000, reasoning_tokens=300),
        ),
        incomplete_body([reasoning_item("Thinking...")]),
        incomplete_body(
            [function_call_item("apply_edit", '{"path": "app.py", "old_te', status="incomplete")]
        ),
        response_body([reasoning_item() | {"encrypted_content": "encrypted:rs_1"}]),
    ],
    ids=["reasoning", "commentary", "refusal", "parallel", "incomplete", "truncated", "encrypted"],
)
def test_every_builder_parses_with_the_sdk_response_model(body):
    parsed = Response.model_validate(body)
    assert parsed.id == body["id"] and len(parsed.output) == len(body["output"])
    assert parsed.usage is not None and parsed.usage.input_tokens == body["usage"]["input_tokens"]


def test_builders_carry_what_a_reasoning_model_sends():
    usage = Response.model_validate(
        response_body([], usage=usage_body(10, 5, cached_tokens=4, reasoning_tokens=3))
    ).usage
    assert usage.input_tokens_details.cached_tokens == 4
    assert usage.output_tokens_details.reasoning_tokens == 3
    cut = Response.model_validate(incomplete_body([], "content_filter"))
    assert (cut.status, cut.incomplete_details.reason) == ("incomplete", "content_filter")
    [refusal] = Response.model_validate(response_body([refusal_item("no")])).output
    assert refusal.content[0].type == "refusal" and refusal.content[0].refusal == "no"
    [said] = Response.model_validate(
        response_body([message_item("on it", phase="commentary")])
    ).output
    assert said.phase == "commentary"


def test_our_tool_definitions_follow_the_strict_schema_rules():
    assert request_violations(PAYLOAD) == []
    for tool in TOOL_DEFINITIONS:
        assert tool["strict"] is True
        assert strict_schema_violations(tool["parameters"], tool["name"]) == []


@pytest.mark.parametrize(
    ("broken", "named"),
    [
        (PAYLOAD | {"foo": 1}, "foo: Extra inputs are not permitted"),
        (PAYLOAD | {"reasoning": {"effort": "huge"}}, "reasoning.effort"),
        (
            PAYLOAD | {"input": [{"type": "function_call_output", "call_id": "c", "output": 3}]},
            "input.0.FunctionCallOutput.output",
        ),
        (
            PAYLOAD
            | {"input": [{"type": "function_call_output", "call_id": "c", "output": "x", "x": 1}]},
            "x: Extra inputs are not permitted",
        ),
        (
            PAYLOAD
            | {
                "tools": [
                    {
                        "type": "function",
                        "name": "loose",
                        "strict": True,
                        "parameters": {"type": "object", "properties": {"a": {"type": "string"}}},
                    }
                ]
            },
            "tool loose: strict needs additionalProperties: false",
        ),
    ],
)
async def test_a_request_that_breaks_the_sdk_types_fails_the_test(broken, named):
    failure = "break the Responses API's types"
    with pytest.raises(AssertionError, match=failure) as caught, ResponsesServer() as server:
        server.enqueue_response([message_item("done")])
        transport = HttpResponsesTransport(server.base_url, "sk-test")
        try:
            await transport.create(broken)
        finally:
            await transport.aclose()
    assert named in str(caught.value)


@pytest.mark.parametrize("asked", [True, False])
async def test_encrypted_reasoning_comes_back_only_when_asked(asked):
    payload = PAYLOAD | (
        {"include": ["reasoning.encrypted_content"], "store": False} if asked else {}
    )
    with ResponsesServer() as server:
        server.enqueue_response([reasoning_item("Plan.", "rs_7"), message_item("Done.")])
        transport = HttpResponsesTransport(server.base_url, "sk-test")
        try:
            turn = await transport.create(payload)
        finally:
            await transport.aclose()
    reasoning = Response.model_validate(turn.raw).output[0]
    assert reasoning.encrypted_content == ("encrypted:rs_7" if asked else None)


async def test_a_turn_with_90_percent_cached_input_is_charged_exactly_by_the_formula(tmp_path):
    guard = CostGuard(
        PRICES["gpt-6-astra"],
        Ledger(tmp_path / "ledger.jsonl"),
        session_id="s",
        model="gpt-6-astra",
        session_limit_usd=None,
        total_limit_usd=None,
    )
    usage = usage_body(20_000, 800, cached_tokens=18_000, reasoning_tokens=600)
    with ResponsesServer() as server:
        server.enqueue_response([message_item("Fixed.")], usage=usage)
        transport = HttpResponsesTransport(server.base_url, "sk-test")
        try:
            turn = await transport.create(PAYLOAD)
        finally:
            await transport.aclose()

    charge = guard.charge_response(turn.usage, guard.worst_case(PAYLOAD))

    assert charge.cost_usd == (2_000 * 10.0 + 18_000 * 1.0 + 800 * 50.0) / 1_000_000
    assert (charge.cached_input_tokens, charge.reasoning_tokens) == (18_000, 600)
    [line] = guard.ledger.charges()
    assert line["cost_usd"] == charge.cost_usd and line["basis"] == "usage"
