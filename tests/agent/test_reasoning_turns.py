"""A session against a reasoning model's answers over the loopback server: cached and reasoning
tokens billed and shown, incomplete and refused turns, commentary, unknown outcomes, and the
mode without response storage. The server checks every request against the SDK's types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent import events as ev
from agent.budget import PRICES, CostGuard, Ledger, Price, estimate_tokens
from agent.loop import AstraAgent
from agent.transport import HttpResponsesTransport
from agent.turns import CONTINUE_NUDGE, RequestOptions
from agent.workspace_tools import WorkspaceTools
from memory.service import MemoryService
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
from tests.fakes import HashEmbedder

KEY = "sk-test-key-0000000000000000"
BUGGY = "def parse(value):\n    return value.split(',')\n"
SEARCH = {"query": "AssertionError in parse", "error_type": None, "top_k": 3}
EDIT = {"path": "app.py", "old_text": "value.split(',')", "new_text": "value.split(', ')"}


class Operator:
    async def approve_live_cost(self, quote) -> bool:
        return True

    async def confirm_store(self, proposal) -> bool:
        return False


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text(BUGGY)
    return root


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.jsonl")


@pytest.fixture
def session(store, workspace, server, ledger):
    """Builds a live session (gpt-6-astra's prices) on the loopback server."""

    def build(options: RequestOptions | None = None, *, timeout_s: float = 600.0):
        events: list = []
        guard = CostGuard(
            PRICES["gpt-6-astra"],
            ledger,
            session_id="reasoning-test",
            model="gpt-6-astra",
            session_limit_usd=None,
            total_limit_usd=None,
        )
        agent = AstraAgent(
            HttpResponsesTransport(server.base_url, KEY, request_timeout_s=timeout_s),
            MemoryService(store, HashEmbedder(), session_id="reasoning-test", scope="r"),
            WorkspaceTools(workspace, base_env={"PATH": "/usr/bin:/bin"}),
            Operator(),
            model="gpt-6-astra",
            request_options=options,
            guard=guard,
            emit=events.append,
        )
        return agent, events

    return build


async def run(agent: AstraAgent) -> ev.SessionReport:
    try:
        return await agent.run("fix it")
    finally:
        await agent.transport.aclose()


def bodies(server: ResponsesServer) -> list[dict]:
    return [received.body for received in server.requests]


def of_kind(events: list, kind: type) -> list:
    return [event for event in events if isinstance(event, kind)]


async def test_a_second_turn_with_90_percent_cached_input_is_charged_by_the_formula(
    session, server, ledger
):
    server.enqueue_response(
        [reasoning_item("Search first."), function_call_item("search_codebase_memory", SEARCH)],
        usage=usage_body(10_000, 400, reasoning_tokens=300),
    )
    server.enqueue_response(
        [reasoning_item("Nothing known."), message_item("No fix needed.")],
        usage=usage_body(12_000, 900, cached_tokens=10_800, reasoning_tokens=700),
    )
    agent, events = session()

    report = await run(agent)

    first = (10_000 * 10.0 + 400 * 50.0) / 1e6
    second = ((12_000 - 10_800) * 10.0 + 10_800 * 1.0 + 900 * 50.0) / 1e6
    assert [line["cost_usd"] for line in ledger.charges()] == [first, second]
    assert report.cost_usd == pytest.approx(first + second)
    assert report.tokens == {
        "input": 22_000,
        "cached_input": 10_800,
        "output": 1_300,
        "reasoning": 1_000,
        "total": 23_300,
    }
    responded = of_kind(events, ev.ModelResponded)[1]
    assert (responded.cached_input_tokens, responded.reasoning_tokens) == (10_800, 700)
    assert responded.cost_usd == second
    budget = of_kind(events, ev.BudgetChanged)[-1]
    assert (budget.cached_input_tokens, budget.reasoning_tokens) == (10_800, 1_000)
    request = bodies(server)[1]
    assert request["reasoning"] == {"effort": "low"} and request["parallel_tool_calls"] is False
    assert request["max_output_tokens"] == 25_000 and request["previous_response_id"] == "resp_1"


async def test_an_incomplete_response_with_a_truncated_call_runs_nothing_and_exits_3(
    session, server, workspace
):
    server.enqueue_response([function_call_item("search_codebase_memory", SEARCH, "c0")])
    truncated = '{"path": "app.py", "old_text": "value.split'
    server.enqueue(
        incomplete_body(
            [
                reasoning_item("Edit it."),
                function_call_item("apply_edit", EDIT, "c1"),
                function_call_item("apply_edit", truncated, "c2", status="incomplete"),
            ],
            response_id="resp_2",
        )
    )
    agent, events = session(RequestOptions(max_output_tokens=2_000))

    report = await run(agent)

    assert (report.status, report.exit_code) == ("incomplete", 3)
    assert len(server.requests) == 2  # nothing is answered: the session stops
    assert [e.call_id for e in of_kind(events, ev.ToolCalled)] == ["c0"]
    assert (workspace / "app.py").read_text() == BUGGY
    assert of_kind(events, ev.ModelResponded)[-1].incomplete_reason == "max_output_tokens"
    [stop] = [e for e in of_kind(events, ev.SessionNote) if e.level == "error"]
    assert "2000-token cap" in stop.message and "--max-output-tokens" in stop.message


async def test_a_call_that_did_not_complete_is_answered_but_never_run(session, server, workspace):
    server.enqueue_response([function_call_item("search_codebase_memory", SEARCH, "c0")])
    server.enqueue_response([function_call_item("apply_edit", EDIT, "c1", status="in_progress")])
    server.enqueue_response([message_item("Stopping here.")])
    agent, events = session()

    report = await run(agent)

    assert report.status == "completed"
    [answer] = bodies(server)[2]["input"]  # the chain needs an output for every call
    assert answer["call_id"] == "c1" and answer["output"].startswith("ERROR: not run")
    assert (workspace / "app.py").read_text() == BUGGY
    assert of_kind(events, ev.ToolAnswered)[-1].refused


async def test_a_refusal_ends_the_session_refused_with_its_text(session, server):
    server.enqueue_response([refusal_item("I can't help with that request.")])
    agent, events = session()

    report = await run(agent)

    assert (report.status, report.exit_code) == ("refused", 1)
    assert report.final_text == "I can't help with that request."
    assert of_kind(events, ev.ModelResponded)[0].refusal == "I can't help with that request."
    assert "I can't help" in of_kind(events, ev.SessionNote)[-1].message


async def test_commentary_is_a_turn_never_the_final_answer(session, server):
    server.enqueue_response([message_item("Let me look at memory first.", phase="commentary")])
    server.enqueue_response([function_call_item("search_codebase_memory", SEARCH, "c1")])
    server.enqueue_response(
        [message_item("Checking.", "msg_2", phase="commentary"), message_item("No fix needed.")]
    )
    agent, events = session()

    report = await run(agent)

    assert (report.status, report.final_text) == ("completed", "No fix needed.")
    assert bodies(server)[1]["input"] == [{"role": "user", "content": CONTINUE_NUDGE}]
    said = of_kind(events, ev.ModelResponded)
    assert (said[0].commentary, said[0].text) == ("Let me look at memory first.", "")
    assert (said[2].commentary, said[2].text) == ("Checking.", "No fix needed.")


async def test_without_storage_every_request_resends_the_conversation(session, server, ledger):
    server.enqueue_response(
        [reasoning_item("Search first.", "rs_1"), function_call_item("list_files", {"path": None})]
    )
    server.enqueue_response(
        [
            reasoning_item("Now search.", "rs_2"),
            message_item("Searching.", "msg_1", phase="commentary"),
            function_call_item("search_codebase_memory", SEARCH, "call_2"),
        ]
    )
    server.enqueue_response([message_item("No fix needed.", "msg_2")])
    agent, events = session(RequestOptions(store=False))

    report = await run(agent)

    assert report.status == "completed"
    sent = bodies(server)
    for body in sent:
        assert body["store"] is False and "previous_response_id" not in body
        assert body["include"] == ["reasoning.encrypted_content"]
    prompt = {"role": "user", "content": "fix it"}
    first_reply = [
        reasoning_item("Search first.", "rs_1") | {"encrypted_content": "encrypted:rs_1"},
        function_call_item("list_files", {"path": None}),
    ]
    assert sent[0]["input"] == [prompt]
    assert sent[1]["input"][:3] == [prompt, *first_reply]
    [listing] = sent[1]["input"][3:]
    assert (listing["type"], listing["call_id"]) == ("function_call_output", "call_1")
    assert sent[2]["input"][:4] == sent[1]["input"]
    assert [item.get("type") for item in sent[2]["input"][4:]] == [
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert sent[2]["input"][5]["phase"] == "commentary"
    # the payload carries the whole conversation, so its worst case counts it once
    worst = [e.worst_case_usd for e in of_kind(events, ev.ModelRequested)]
    price = PRICES["gpt-6-astra"]
    assert worst == [price.cost(estimate_tokens(body), 25_000) for body in sent]


async def test_malformed_usage_is_charged_its_worst_case_with_a_note(session, server, ledger):
    server.enqueue_response(
        [function_call_item("search_codebase_memory", SEARCH)],
        usage=usage_body(100, 20) | {"output_tokens": -20},
    )
    server.enqueue_response([message_item("No fix needed.")])
    agent, events = session()

    await run(agent)

    worst = of_kind(events, ev.ModelRequested)[0].worst_case_usd
    first = ledger.charges()[0]
    assert (first["basis"], first["cost_usd"]) == ("malformed_usage", worst)
    [note] = [e for e in of_kind(events, ev.SessionNote) if e.level == "warning"]
    assert "worst case" in note.message and "output_tokens" in note.message


async def test_an_unknown_outcome_is_charged_its_worst_case_and_ends_the_session(
    session, server, ledger
):
    server.enqueue(response_body([message_item("too late")]), delay_s=3.0)
    agent, events = session(timeout_s=1.0)

    report = await run(agent)

    assert (report.status, report.exit_code) == ("api_error", 1)
    assert len(server.requests) == 1  # never retried
    worst = of_kind(events, ev.ModelRequested)[0].worst_case_usd
    [line] = ledger.charges()
    assert (line["basis"], line["cost_usd"]) == ("unknown_outcome", worst)
    assert report.cost_usd == worst and of_kind(events, ev.BudgetChanged)[-1].session_cost_usd
    assert "not retried" in of_kind(events, ev.SessionNote)[-1].message


def test_the_default_output_cap_makes_a_bounded_worst_case(tmp_path):
    """The README's figure: one turn at the default cap, all output, costs $1.25."""
    assert Price(10.0, 50.0).cost(0, RequestOptions().max_output_tokens) == 1.25
    assert json.dumps(RequestOptions().reasoning_effort) == '"low"'
