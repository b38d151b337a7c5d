"""The loop against a real loopback HTTP server that speaks the Responses API.

The model is the only thing scripted: the transport, memory store, workspace and test
subprocess are the real ones.
"""

from __future__ import annotations

import asyncio
import json
import time
from functools import partial
from pathlib import Path

import pytest

from agent.books import AgentLimits
from agent.budget import CostGuard, Ledger, Price
from agent.loop import AstraAgent
from agent.transport import HttpResponsesTransport, RecordingTransport
from agent.turns import RequestOptions
from agent.workspace_tools import WorkspaceTools
from memory.service import MemoryService
from tests.fakes import HashEmbedder

BUGGY = "def parse(value):\n    return value.split(',')\n"
FIXED_OLD, FIXED_NEW = "value.split(',')", "[part.strip() for part in value.split(',')]"
TESTS = (
    "from app import parse\n\n"
    "def test_one():\n    assert parse('a') == ['a']\n\n"
    "def test_two():\n    assert parse('a, b') == ['a', 'b']\n"
)
OUTCOME = "python -m pytest -q passed with exit code 0 (2 passed)"
FAILURE = "FAILED test_app.py::test_two - AssertionError: assert ['a', ' b'] == ['a', 'b']"


def call(name: str, arguments: object, call_id: str) -> dict:
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": encoded}


def message(text: str) -> dict:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def response(number: int, *items: dict, status: str = "completed", **extra) -> dict:
    return {
        "id": f"resp_{number}",
        "object": "response",
        "status": status,
        "output": list(items),
        "usage": {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100},
        **extra,
    }


SEARCH = {"query": FAILURE, "error_type": None, "top_k": 3}
EDIT = {"path": "app.py", "old_text": FIXED_OLD, "new_text": FIXED_NEW}
STORE = {
    "fix_description": "Strip whitespace around each comma-separated value in parse.",
    "error_type": "AssertionError",
    "file_paths": ["app.py"],
    "outcome": OUTCOME,
}

HAPPY = [
    response(1, {"type": "reasoning", "id": "rs_1", "summary": []}, call("run_tests", {}, "c1")),
    response(2, call("search_codebase_memory", SEARCH, "c2")),
    response(3, call("read_file", {"path": "app.py"}, "c3"), call("apply_edit", EDIT, "c4")),
    response(4, call("run_tests", {}, "c5"), {"type": "web_search_call", "id": "ws_1"}),
    response(5, call("store_fix_memory", STORE, "c6")),
    response(6, message("Stripped whitespace in parse; both tests pass.")),
]


class Operator:
    """A Supervisor that answers from fixed choices and remembers what it was asked."""

    def __init__(self, *, approve_cost: bool = True, store: bool = True) -> None:
        self.approve_cost, self.store = approve_cost, store
        self.quotes: list = []
        self.proposals: list = []

    async def approve_live_cost(self, quote) -> bool:
        self.quotes.append(quote)
        return self.approve_cost

    async def confirm_store(self, proposal) -> bool:
        self.proposals.append(proposal)
        return self.store


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "app.py").write_text(BUGGY)
    (root / "test_app.py").write_text(TESTS)
    return root


@pytest.fixture
def session(store, workspace, server, tmp_path):
    """Builds an agent wired to the loopback server; returns (agent, events, operator)."""

    def build(
        *,
        operator=None,
        guard=None,
        limits=None,
        options=None,
        key="sk-test-key-0000000000000000",
        session_id="loop-test",
    ):
        events: list = []
        operator = operator or Operator()
        memory = MemoryService(store, HashEmbedder(), session_id=session_id, scope="loop")
        tools = WorkspaceTools(
            workspace, base_env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": key}, test_timeout_s=60
        )
        transport = HttpResponsesTransport(server.base_url, key, sleep=_no_sleep)
        agent = AstraAgent(
            transport,
            memory,
            tools,
            operator,
            model="gpt-6-astra",
            limits=limits or AgentLimits(),
            request_options=options,
            guard=guard,
            emit=events.append,
        )
        return agent, events, operator

    return build


async def _no_sleep(delay: float) -> None:
    return None


def inputs(server) -> list[list[dict]]:
    return [body["input"] for _, _, body in server.requests]


def answered_ids(server) -> list[list[str]]:
    return [
        [item["call_id"] for item in turn if item.get("type") == "function_call_output"]
        for turn in inputs(server)
    ]


async def test_a_whole_session_chains_answers_every_call_and_stores_the_fix(session, server, store):
    for body in HAPPY:
        server.enqueue(body)
    agent, _events, operator = session()
    report = await agent.run("fix it")

    assert (report.status, report.exit_code) == ("completed", 0)
    bodies = [body for _, _, body in server.requests]
    assert "previous_response_id" not in bodies[0]
    assert [b.get("previous_response_id") for b in bodies[1:]] == [f"resp_{n}" for n in range(1, 6)]
    assert answered_ids(server) == [[], ["c1"], ["c2"], ["c3", "c4"], ["c5"], ["c6"]]
    assert all(b["tools"] and all(t["strict"] for t in b["tools"]) for b in bodies)

    [memory_id] = report.stored_memory_ids
    record = await store.get(memory_id)
    assert record.outcome == OUTCOME and record.symptom == FAILURE
    assert "+    return [part.strip()" in record.diff
    assert record.evidence.passed == 2 and record.evidence.exit_code == 0
    assert len(operator.proposals) == 1 and operator.proposals[0].record == record
    assert report.tests.passed == 2 and report.model_requests == 6 and report.tool_calls == 6
    assert report.first_search_turn == 2 and report.first_edit_turn == 3


async def test_the_same_fix_from_a_later_session_is_confirmed_again_not_stored_twice(
    session, server, store, workspace
):
    for body in HAPPY:
        server.enqueue(body)
    first, _, _ = session()
    [memory_id] = (await first.run("fix it")).stored_memory_ids

    (workspace / "app.py").write_text(BUGGY)  # the same bug again, in a later session
    for body in HAPPY:
        server.enqueue(body)
    second, events, operator = session(session_id="loop-later")
    report = await second.run("fix it")

    [proposal] = operator.proposals
    assert proposal.duplicate_of.memory_id == memory_id
    assert proposal.confirm_again_text() == f"{memory_id[:8]}, confirmed 1 time so far"
    assert report.stored_memory_ids == [memory_id]
    assert [r.memory_id for r in await store.list_records()] == [memory_id]
    record = await store.get(memory_id)
    [again] = record.confirmations
    assert record.times_confirmed == 2 and record.session_id == "loop-test"
    assert again.session_id == "loop-later" and again.evidence.passed == 2
    assert again.symptom == FAILURE
    decided = [e for e in events if e.event == "store_decided"]
    assert decided[-1].times_confirmed == 2
    stored = json.loads(inputs(server)[-1][0]["output"])
    assert stored == {
        "stored": True,
        "memory_id": memory_id,
        "confirmed_again": True,
        "times_confirmed": 2,
    }


async def test_a_later_session_s_matches_say_why_they_ranked(session, server, store, workspace):
    for body in HAPPY:
        server.enqueue(body)
    first, first_events, _ = session()
    await first.run("fix it")
    [nothing] = [e for e in first_events if e.event == "memory_matched"]
    assert nothing.matches == []

    (workspace / "app.py").write_text(BUGGY)
    for body in HAPPY:
        server.enqueue(body)
    second, events, _ = session(session_id="loop-later")
    await second.run("fix it")

    [matched] = [e for e in events if e.event == "memory_matched"]
    [match] = matched.matches
    # the query is the record's own symptom: first by both rankings, its file named in it
    assert match.why.startswith("why: vector #1 · keyword #1 · paths app.py · ")
    assert "assertionerror" in match.why
    [proposed] = [e for e in events if e.event == "store_proposed"]
    assert [m.why for m in proposed.nearest] == [""]  # a store's neighbours answer no query


async def test_edit_before_memory_reached_the_model_is_refused(session, server, workspace):
    server.enqueue(
        response(1, call("apply_edit", EDIT, "c1"), call("search_codebase_memory", SEARCH, "c2"))
    )
    server.enqueue(response(2, call("apply_edit", EDIT, "c3")))
    server.enqueue(response(3, message("done")))
    agent, _events, _ = session()
    report = await agent.run("fix it")
    first_answers = inputs(server)[1]
    assert first_answers[0]["output"].startswith("ERROR: search_codebase_memory first")
    assert not inputs(server)[2][0]["output"].startswith("ERROR")  # after delivery: allowed
    assert report.exit_code == 1  # finished without a passing run


async def test_final_answer_before_any_search_stops_with_exit_4(session, server):
    server.enqueue(response(1, message("The bug is in parse.")))
    agent, _, _ = session()
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("gate", 4)


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (call("run_tests", "{not json", "c1"), "ERROR: arguments are not valid JSON"),
        (call("delete_repo", {}, "c1"), "ERROR: unknown tool 'delete_repo'"),
        (
            call("search_codebase_memory", {**SEARCH, "top_k": 0}, "c1"),
            "ERROR: arguments do not match",
        ),
        (call("search_codebase_memory", {"query": "x"}, "c1"), "ERROR: arguments do not match"),
        (call("read_file", {"path": "/etc/passwd"}, "c1"), "ERROR: "),
        (call("read_file", {"path": "../outside.txt"}, "c1"), "ERROR: "),
        (call("list_files", {"path": None, "extra": 1}, "c1"), "ERROR: arguments do not match"),
    ],
)
async def test_bad_calls_are_answered_with_errors_and_the_session_goes_on(
    session, server, item, expected
):
    server.enqueue(response(1, item))
    server.enqueue(response(2, call("search_codebase_memory", SEARCH, "c2")))
    server.enqueue(response(3, message("giving up")))
    agent, _, _ = session()
    report = await agent.run("fix it")
    answer = inputs(server)[1][0]
    assert answer["call_id"] == "c1" and answer["output"].startswith(expected)
    assert report.model_requests == 3


async def test_store_needs_the_latest_passing_outcome(session, server, store):
    for body in HAPPY[:4]:
        server.enqueue(body)
    server.enqueue(
        response(5, call("store_fix_memory", {**STORE, "outcome": "tests passed"}, "c6"))
    )
    server.enqueue(
        response(
            6,
            call("apply_edit", {**EDIT, "old_text": FIXED_NEW, "new_text": FIXED_NEW + " "}, "c7"),
        )
    )
    server.enqueue(response(7, call("store_fix_memory", STORE, "c8")))
    server.enqueue(response(8, message("done")))
    agent, _, operator = session()
    report = await agent.run("fix it")
    assert "exact confirmed_outcome" in inputs(server)[5][0]["output"]
    assert "no passing test run" in inputs(server)[7][0]["output"]
    assert operator.proposals == [] and report.stored_memory_ids == []
    assert await store.count() == 0


async def test_declined_store_writes_nothing_and_tells_the_model(session, server, store):
    for body in HAPPY:
        server.enqueue(body)
    agent, _events, operator = session(operator=Operator(store=False))
    report = await agent.run("fix it")
    assert inputs(server)[5][0]["output"].startswith("DECLINED")
    assert report.stored_memory_ids == [] and await store.count() == 0
    assert len(operator.proposals) == 1


async def test_429_then_success_continues(session, server):
    server.enqueue(
        {"error": {"message": "slow down", "type": "rate_limit_error"}},
        status=429,
        headers={"retry-after": "0"},
    )
    server.enqueue(response(1, call("search_codebase_memory", SEARCH, "c1")))
    server.enqueue(response(2, message("nothing to fix")))
    agent, _, _ = session()
    report = await agent.run("fix it")
    assert report.status == "completed" and len(server.requests) == 3


async def test_500_exhausted_ends_the_session_clearly(session, server):
    for _ in range(3):  # the first try and the SDK's two retries
        server.enqueue({"error": {"message": "boom", "type": "server_error"}}, status=500)
    agent, events, _ = session()
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("api_error", 1)
    assert len(server.requests) == 3
    assert any("500" in getattr(e, "message", "") for e in events)


async def test_400_fails_at_once_with_the_servers_words(session, server):
    server.enqueue(
        {
            "error": {
                "message": "Unknown parameter: 'foo'",
                "type": "invalid_request_error",
                "code": "unknown_parameter",
            }
        },
        status=400,
    )
    agent, events, _ = session()
    report = await agent.run("fix it")
    assert report.exit_code == 1 and len(server.requests) == 1
    note = next(e for e in events if getattr(e, "event", "") == "note")
    assert "invalid_request_error" in note.message and "Unknown parameter" in note.message


async def test_incomplete_response_without_calls_stops_with_a_clear_outcome(session, server):
    server.enqueue(
        response(
            1,
            message("The cause is"),
            status="incomplete",
            incomplete_details={"reason": "max_output_tokens"},
        )
    )
    agent, _, _ = session()
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("incomplete", 3)


async def test_turn_and_tool_limits_stop_with_exit_3(session, server):
    for number in range(1, 5):
        server.enqueue(response(number, call("list_files", {"path": None}, f"c{number}")))
    agent, _, _ = session(limits=AgentLimits(max_turns=2))
    report = await agent.run("fix it")
    assert (report.status, report.exit_code, len(server.requests)) == ("turn_limit", 3, 2)


def live_guard(tmp_path: Path, session_limit: float) -> CostGuard:
    return CostGuard(
        Price(10.0, 50.0),
        Ledger(tmp_path / "ledger.jsonl"),
        session_id="loop-test",
        model="gpt-6-astra",
        session_limit_usd=session_limit,
        total_limit_usd=None,
    )


async def test_budget_stops_before_the_request_that_would_cross_it(session, server, tmp_path):
    for body in HAPPY:
        server.enqueue(body)
    options = RequestOptions(max_output_tokens=1000)
    # the first request could cost about $0.065; the second, carrying 1100 tokens more, $0.09
    agent, _, _ = session(guard=live_guard(tmp_path, 0.075), options=options)
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("budget", 3)
    assert len(server.requests) == 1
    assert report.cost_usd == pytest.approx((1000 * 10 + 100 * 50) / 1e6)
    assert Ledger(tmp_path / "ledger.jsonl").total() == pytest.approx(report.cost_usd)


async def test_a_sized_cap_shrinks_with_what_is_spent_and_each_request_fits(
    session, server, tmp_path
):
    for body in HAPPY:
        server.enqueue(body)
    options = RequestOptions(sized_to_budget=True)
    agent, _, operator = session(guard=live_guard(tmp_path, 0.5), options=options)
    report = await agent.run("fix it")
    caps = [received.body["max_output_tokens"] for received in server.requests]
    assert report.status == "completed" and len(caps) == len(HAPPY)
    assert caps == sorted(caps, reverse=True) and caps[0] > caps[-1]
    assert caps[0] == operator.quotes[0].first_output_tokens < 10_000  # $0.50 buys < 10k
    assert report.cost_usd <= 0.5


async def test_declined_approval_sends_nothing(session, server, tmp_path):
    server.enqueue(response(1, message("hi")))
    agent, _, operator = session(
        operator=Operator(approve_cost=False), guard=live_guard(tmp_path, 2.0)
    )
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("declined", 2)
    assert server.requests == [] and len(operator.quotes) == 1
    assert operator.quotes[0].session_worst_case_usd > 0


async def test_the_test_subprocess_cannot_see_the_key(session, server, workspace):
    (workspace / "test_env.py").write_text(
        "import os\n\ndef test_no_key():\n    assert 'OPENAI_API_KEY' not in os.environ\n"
    )
    server.enqueue(response(1, call("run_tests", {}, "c1")))
    server.enqueue(response(2, call("search_codebase_memory", SEARCH, "c2")))
    server.enqueue(response(3, message("done")))
    agent, events, _ = session()
    await agent.run("fix it")
    finished = next(e for e in events if getattr(e, "event", "") == "test_finished")
    assert finished.passed == 2 and finished.failed == 1  # test_two fails; test_no_key passes


async def test_a_stop_request_is_honoured_before_the_next_request(session, server):
    server.enqueue(response(1, call("search_codebase_memory", SEARCH, "c1")))
    server.enqueue(response(2, message("done")))
    agent, events, _ = session()

    def stop_after_first_response(event) -> None:
        events.append(event)
        if getattr(event, "event", "") == "model_responded":
            agent.request_stop()

    agent.emit = stop_after_first_response
    report = await agent.run("fix it")
    assert (report.status, report.exit_code, len(server.requests)) == ("stopped", 3, 1)


async def test_secrets_in_tool_outputs_never_reach_the_model(session, server, workspace):
    (workspace / "config.py").write_text("API_KEY = 'sk-proj-abcdefghijklmnopqrstuvwxyz012345'\n")
    server.enqueue(response(1, call("read_file", {"path": "config.py"}, "c1")))
    server.enqueue(response(2, call("search_codebase_memory", SEARCH, "c2")))
    server.enqueue(response(3, message("done")))
    agent, _, _ = session()
    await agent.run("fix it")
    sent = json.dumps([body for _, _, body in server.requests])
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz012345" not in sent
    assert "[REDACTED]" in inputs(server)[1][0]["output"]


async def test_a_secret_in_the_operator_s_prompt_never_reaches_the_model(session, server):
    server.enqueue(response(1, call("search_codebase_memory", SEARCH, "c1")))
    server.enqueue(response(2, message("done")))
    agent, _, _ = session()
    await agent.run("fix it; the staging DB is postgres://app:hunter2-Secret@db.internal/app")
    sent = json.dumps([body for _, _, body in server.requests])
    assert "hunter2-Secret" not in sent
    assert "fix it; the staging DB is postgres://app:" in sent


UNAUTHORIZED = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
TWO_LISTINGS = response(1, call("list_files", {"path": None}, "c1"), call("list_files", {}, "c2"))


@pytest.mark.parametrize(
    ("reply", "reply_status", "limits", "expected"),
    [
        (UNAUTHORIZED, 401, None, ("api_error", 2)),  # our setup, not the model: exit 2
        (response(1, status="failed", error={"message": "overloaded"}), 200, None, ("failed", 1)),
        ({"object": "response", "output": []}, 200, None, ("api_error", 1)),  # no id
        (TWO_LISTINGS, 200, AgentLimits(max_tool_calls=1), ("tool_limit", 3)),
    ],
)
async def test_each_stop_ends_with_its_status_and_exit_code(
    session, server, reply, reply_status, limits, expected
):
    server.enqueue(reply, status=reply_status)
    agent, events, _ = session(limits=limits)
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == expected and len(server.requests) == 1
    assert events[-2].event == "note" and events[-2].level == "error"


async def test_a_transcript_that_cannot_be_written_stops_the_session(session, server, tmp_path):
    server.enqueue(response(1, call("search_codebase_memory", SEARCH, "c1")))
    agent, _, _ = session()
    (tmp_path / "blocker").write_text("a file where the transcript folder should be")
    blocked = tmp_path / "blocker" / "t.jsonl"
    agent.requests.transport = RecordingTransport(agent.transport, blocked)
    report = await agent.run("fix it")
    assert (report.status, report.exit_code) == ("local_error", 1)


async def test_the_report_says_whether_the_first_request_sent_was_chained(session, server):
    server.enqueue(response(1, call("search_codebase_memory", SEARCH, "c1")))
    server.enqueue(response(2, message("done")))
    agent, _, _ = session()
    report = await agent.run("fix it")
    first, second = (body for _, _, body in server.requests)
    assert report.first_request_chained is ("previous_response_id" in first) is False
    assert second["previous_response_id"] == "resp_1"


async def test_stop_cancels_a_request_in_flight_and_charges_its_worst_case(
    session, server, tmp_path
):
    server.enqueue(response(1, message("too late")), delay_s=20)
    agent, events, _ = session(guard=live_guard(tmp_path, 10.0))

    def stop_once_sent(event) -> None:
        events.append(event)
        if getattr(event, "event", "") == "model_requested":
            stop = partial(agent.request_stop, cancel_request=True)
            asyncio.get_running_loop().call_later(0.3, stop)

    agent.emit = stop_once_sent
    started = time.monotonic()
    report = await agent.run("fix it")
    worst = next(e for e in events if getattr(e, "event", "") == "model_requested")
    assert time.monotonic() - started < 10  # not the 20 s the server takes
    assert (report.status, report.exit_code) == ("stopped", 3)
    assert report.cost_usd == pytest.approx(worst.worst_case_usd) and report.cost_usd > 0
    [line] = (tmp_path / "ledger.jsonl").read_text().splitlines()
    assert json.loads(line)["basis"] == "unknown_outcome"
