"""Everything that happens in a session, as pydantic events on one stream.

The loop emits them through one callback; the headless CLI prints them (or writes them as
JSON lines) and the dashboard renders them. Each serializes with an `event` field that
names its kind, so `--json` output is one self-describing object per line.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memory.records import utc_now


class _Event(BaseModel):
    at: datetime = Field(default_factory=utc_now)


class SessionStarted(_Event):
    event: Literal["session_started"] = "session_started"
    session_id: str
    model: str
    mode: Literal["live", "rehearsal"]
    workspace: str  # the project the operator named
    work_dir: str = ""  # where the session edits it: a worktree, a copy, or the project itself
    memory_url: str
    scope: str
    max_turns: int
    test_command: str = ""
    test_command_source: str = ""  # flag, pyproject.toml, .astra-memory.toml, detected: ...
    workspace_kind: str = ""  # worktree, copy or in-place
    branch: str | None = None  # astra/<session>; None in place
    edits: str = "auto"  # ask: each edit waits for the operator


class ModelRequested(_Event):
    event: Literal["model_requested"] = "model_requested"
    turn: int
    previous_response_id: str | None
    worst_case_usd: float | None


class FunctionCallBrief(BaseModel):
    call_id: str
    name: str
    arguments: str


class ModelResponded(_Event):
    event: Literal["model_responded"] = "model_responded"
    turn: int
    response_id: str
    status: str
    text: str
    function_calls: list[FunctionCallBrief]
    input_tokens: int
    output_tokens: int
    cost_usd: float
    incomplete_reason: str | None = None
    cached_input_tokens: int = 0  # part of input_tokens, billed at the cached rate
    reasoning_tokens: int = 0  # part of output_tokens
    commentary: str = ""  # said on the way (phase "commentary"), never the answer
    refusal: str | None = None


class RequestRetried(_Event):
    """A request failed in a way worth retrying (HTTP 429, 5xx, no connection), and will be
    sent again after `delay_s`."""

    event: Literal["request_retried"] = "request_retried"
    attempt: int
    delay_s: float
    reason: str


class ToolCalled(_Event):
    event: Literal["tool_called"] = "tool_called"
    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] | str


class ToolAnswered(_Event):
    event: Literal["tool_answered"] = "tool_answered"
    turn: int
    call_id: str
    name: str
    output: str
    refused: bool


class MatchBrief(BaseModel):
    memory_id: str
    score: float
    rank: int
    error_type: str
    fix_description: str
    file_paths: list[str]
    stored_at: datetime
    provenance: str
    flags: list[str]
    label: str = "possible"  # strong, possible or weak: memory.retrieval.ranking.relevance
    why: str = ""  # memory.retrieval.explain's compact line; empty for a store's nearest records


class MemoryMatched(_Event):
    event: Literal["memory_matched"] = "memory_matched"
    turn: int
    query: str
    error_type: str | None
    matches: list[MatchBrief]


class TestOutput(_Event):
    __test__ = False
    event: Literal["test_output"] = "test_output"
    run: int
    line: str


class TestFinished(_Event):
    __test__ = False
    event: Literal["test_finished"] = "test_finished"
    run: int
    command: str
    exit_code: int
    passed: int | None  # None: the test runner's output did not say
    failed: int | None
    timed_out: bool
    duration_s: float
    confirmed_outcome: str | None


class BudgetChanged(_Event):
    event: Literal["budget_changed"] = "budget_changed"
    session_cost_usd: float
    ledger_total_usd: float
    session_limit_usd: float | None
    total_limit_usd: float | None
    turns_used: int
    max_turns: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0


class StoreProposed(_Event):
    event: Literal["store_proposed"] = "store_proposed"
    record: dict[str, Any]
    nearest: list[MatchBrief]
    duplicate_of: str | None = None  # a near-duplicate's id: yes confirms it again


class StoreDecided(_Event):
    event: Literal["store_decided"] = "store_decided"
    memory_id: str
    approved: bool
    times_confirmed: int = 1  # above 1: an existing record was confirmed again


class SessionNote(_Event):
    """Something the operator should see that is not a turn: a retry, a stop, a refusal."""

    event: Literal["note"] = "note"
    level: Literal["info", "warning", "error"]
    message: str


class MemorySearchReport(BaseModel):
    query: str
    matches: list[dict[str, Any]]


class TestsReport(BaseModel):
    __test__ = False
    exit_code: int
    passed: int | None  # None: the test runner's output did not say
    failed: int | None


class TestCommandReport(BaseModel):
    command: str
    source: str


class SessionReport(_Event):
    """The last line of `run --json`: the session's outcome and its figures."""

    event: Literal["report"] = "report"
    session_id: str
    status: str
    exit_code: int
    model_requests: int
    tool_calls: int
    memory_searches: list[MemorySearchReport]
    stored_memory_ids: list[str]
    tests: TestsReport | None
    tokens: dict[str, int]  # input, cached_input, output, reasoning, total
    cost_usd: float
    final_text: str
    first_edit_turn: int | None
    first_search_turn: int | None
    first_request_chained: bool
    test_command: TestCommandReport | None = None
    edits_approved: int = 0
    edits_rejected: int = 0
    branch: str | None = None  # the session's git branch, astra/<session>; None in place


Event = Annotated[
    SessionStarted
    | ModelRequested
    | ModelResponded
    | RequestRetried
    | ToolCalled
    | ToolAnswered
    | MemoryMatched
    | TestOutput
    | TestFinished
    | BudgetChanged
    | StoreProposed
    | StoreDecided
    | SessionNote
    | SessionReport,
    Field(discriminator="event"),
]
