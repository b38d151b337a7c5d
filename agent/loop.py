"""Astra's loop over the Responses API, in mini-swe-agent's shape: run → step → query → execute.

Every run starts a new response chain and chains the rest with previous_response_id (or,
when nothing may be stored, resends the whole conversation each time). Every function_call
gets a function_call_output with its call_id — refusals included, as
`ERROR: <why>` (agent/tool_calls.py) — so the model can recover. Only the operator's
stops end a session early: each is a named exception carrying its exit code
(agent/exceptions.py), and the limits are checked before every request and tool call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent import events as ev
from agent import exceptions as stops
from agent.approval import EditPolicy
from agent.books import AgentLimits, Books
from agent.budget import CostGuard
from agent.exceptions import ExitCode
from agent.gates import final_answer_refusal
from agent.metered import MeteredRequests
from agent.supervisor import Supervisor
from agent.tool_calls import SessionTools
from agent.transport import ResponsesTransport
from agent.turns import (
    CONTINUE_NUDGE,
    FunctionCall,
    ModelTurn,
    RequestOptions,
    incomplete_message,
    request,
)
from agent.workspace_tools import WorkspaceTools
from agent.worktree import SessionWorkspace
from memory.errors import MemoryLayerError
from memory.safety import redact_secrets
from memory.service import MemoryService


class AstraAgent:
    """One supervised session (one `run`): a transport, the memory, the workspace and the
    operator."""

    def __init__(
        self,
        transport: ResponsesTransport,
        memory: MemoryService,
        tools: WorkspaceTools,
        supervisor: Supervisor,
        *,
        model: str,
        limits: AgentLimits | None = None,
        request_options: RequestOptions | None = None,
        guard: CostGuard | None = None,
        emit: Callable[[ev.Event], None] = lambda event: None,
        memory_url: str = "",
        edits: EditPolicy = "auto",
        workspace: SessionWorkspace | None = None,
    ) -> None:
        self.memory = memory
        self.tools = tools
        self.supervisor = supervisor
        self.model = model
        self.limits = limits or AgentLimits()
        self.request_options = request_options or RequestOptions()
        self.conversation: list[dict[str, Any]] = []  # all of it, when nothing is stored
        self.guard = guard
        self.emit = emit
        self.memory_url = memory_url
        self.workspace = workspace  # where the session works: a worktree, a copy; None in place
        self._stop_requested = False
        self.books = Books(max_turns=self.limits.max_turns)
        self.requests = MeteredRequests(transport, guard, self.books, lambda e: self.emit(e))
        # `emit` is looked up at each event, so a caller may replace it after construction
        self.session = SessionTools(
            memory,
            tools,
            supervisor,
            lambda event: self.emit(event),
            edits=edits,
            git_diff=workspace.diff if workspace else lambda: None,
        )

    @property
    def transport(self) -> ResponsesTransport:
        return self.requests.transport

    @property
    def branch(self) -> str | None:
        return self.workspace.branch if self.workspace else None

    def request_stop(self, *, cancel_request: bool = False) -> None:
        """Stop at the next safe point: before the next request or tool call. With
        `cancel_request`, a request in flight is cut off too (and charged its worst case).
        Safe to call from another thread."""
        self._stop_requested = True
        if cancel_request:
            self.requests.cancel()

    async def run(self, prompt: str) -> ev.SessionReport:
        """Steps until the model's final answer or a stop; the report says which."""
        live = self.guard is not None
        self.emit(
            self.books.started(self.session, self.model, live, self.memory_url, self.workspace)
        )
        asked = {"role": "user", "content": redact_secrets(prompt.strip())}  # sent to the model
        next_input: list[dict[str, Any]] | None = [asked]
        status, exit_code = "completed", ExitCode.NOT_PASSING
        try:
            if green := await self.tools.green_on_offer():  # a request would only cost money
                self.session.last_run = green
                raise stops.NothingToFix(
                    "the tests already pass before any edit: nothing to fix, no request sent"
                )
            if self.guard is not None:
                first = request(self.model, next_input, self.request_options, None)
                await self.requests.approve(
                    first, self.request_options, self.limits.max_turns, self.tools, self.supervisor
                )
            while next_input is not None:
                next_input = await self.step(next_input)
            if self.session.latest_confirmed is not None:
                exit_code = ExitCode.PASSED
        except stops.SessionStop as stop:
            status, exit_code = stop.status, stop.exit_code
            level = "info" if exit_code == ExitCode.PASSED else "error"
            self.emit(ev.SessionNote(level=level, message=str(stop)))
        finally:
            try:
                await self.memory.end_session(self.session.latest_confirmed is not None)
            except MemoryLayerError as exc:
                self.emit(ev.SessionNote(level="warning", message=f"audit not updated: {exc}"))
        report = self.books.report(
            self.memory.session_id, status, exit_code, self.session, self.branch
        )
        self.emit(report)
        return report

    async def step(self, next_input: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """One model turn and the answers to its calls; None after the final answer."""
        turn = await self.query(next_input)
        if self.session.nothing_to_fix:  # the model has now been told; nothing more to do
            self.books.final_text = turn.text
            raise stops.NothingToFix("the tests already pass before any edit: nothing to fix")
        if turn.status == "failed":
            raise stops.ModelFailed(f"the model response failed: {turn.error or 'no reason given'}")
        if turn.refusal is not None:
            self.books.final_text = turn.refusal
            raise stops.ModelRefused(f"the model refused: {turn.refusal}")
        if turn.status == "incomplete":
            raise stops.OutputIncomplete(
                incomplete_message(turn, self.request_options, self.books.output_cap)
            )
        if turn.calls:
            return await self.execute(turn.calls)
        if turn.commentary and not turn.text:
            return [{"role": "user", "content": CONTINUE_NUDGE}]
        refusal = final_answer_refusal(self.session.memory_delivered)
        if refusal:
            raise stops.GateStop(f"stopped by a gate: {refusal}")
        self.books.final_text = turn.text
        return None

    async def query(self, next_input: list[dict[str, Any]]) -> ModelTurn:
        """Check the limits, price the request, send it, and book what came back."""
        books = self.books
        self._check_stop()
        if books.turn >= self.limits.max_turns:
            raise stops.LimitReached(f"model turn limit reached ({books.turn})")
        payload = request(
            self.model, self.conversation + next_input, self.request_options, books.response_id
        )
        worst = await self.requests.preflight(payload, self.request_options)
        books.output_cap = payload["max_output_tokens"]
        if books.turn == 0:
            books.first_request_chained = "previous_response_id" in payload
        books.turn += 1
        previous = payload.get("previous_response_id")
        self.emit(
            ev.ModelRequested(turn=books.turn, previous_response_id=previous, worst_case_usd=worst)
        )
        turn, cost = await self.requests.send(payload, worst or 0.0)
        if not self.request_options.store:  # nothing kept server-side: carry it all ourselves
            self.conversation += [*next_input, *turn.replay_items]
        self.emit(books.responded(turn, cost))
        self.emit(books.budget(self.guard))
        return turn

    async def execute(self, calls: tuple[FunctionCall, ...]) -> list[dict[str, Any]]:
        """Every call answered, in order; the answers are the next request's input."""
        books, outputs = self.books, []
        for call in calls:
            self._check_stop()
            if books.tool_calls >= self.limits.max_tool_calls:
                raise stops.ToolLimitReached(f"tool call limit reached ({books.tool_calls})")
            books.tool_calls += 1
            outputs.append(await self.session.answer(call, books.turn, books.response_id))
        self.session.outputs_sent()
        return outputs

    # -- the parts -----------------------------------------------------------------------

    def _check_stop(self) -> None:
        if self._stop_requested:
            raise stops.OperatorStop("stopped by the operator")
