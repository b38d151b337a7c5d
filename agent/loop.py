"""Astra's loop over the Responses API, in mini-swe-agent's shape: run → step → query → execute.

Every run starts a new response chain and chains the rest with previous_response_id (or,
when nothing may be stored, resends the whole conversation each time). Every function_call
gets a function_call_output with its call_id — refusals included, as
`ERROR: <why>` (agent/session_tools.py) — so the model can recover. Only the operator's
stops end a session early: each is a named exception carrying its exit code
(agent/exceptions.py), and the limits are checked before every request and tool call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from agent import events as ev
from agent import exceptions as stops
from agent.approval import EditPolicy
from agent.books import Books
from agent.budget import BudgetExceededError, CostGuard
from agent.exceptions import ExitCode
from agent.gates import final_answer_refusal
from agent.session_tools import SessionTools
from agent.session_workspace import SessionWorkspace
from agent.supervisor import Supervisor
from agent.transport import OutcomeUnknownError, ResponsesAPIError, ResponsesTransport
from agent.turns import CONTINUE_NUDGE, FunctionCall, ModelTurn, RequestOptions, request
from agent.workspace import WorkspaceTools
from memory.errors import MemoryLayerError
from memory.service import MemoryService


@dataclass(frozen=True)
class AgentLimits:
    max_turns: int = 12
    max_tool_calls: int = 40


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
        limits: AgentLimits = AgentLimits(),
        request_options: RequestOptions | None = None,
        guard: CostGuard | None = None,
        emit: Callable[[ev.Event], None] = lambda event: None,
        memory_url: str = "",
        edits: EditPolicy = "auto",
        workspace: SessionWorkspace | None = None,
    ) -> None:
        self.transport = transport
        self.memory = memory
        self.tools = tools
        self.supervisor = supervisor
        self.model = model
        self.limits = limits
        self.request_options = request_options or RequestOptions()
        self.conversation: list[dict[str, Any]] = []  # all of it, when nothing is stored
        self.guard = guard
        self.emit = emit
        self.memory_url = memory_url
        self.workspace = workspace  # where the session works: a worktree, a copy; None in place
        self._stop_requested = False
        self._cancel_request = False  # the stop also cuts off a request in flight
        self._in_flight: asyncio.Task[ModelTurn] | None = None  # the request being awaited
        self.books = Books(max_turns=limits.max_turns)
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
    def branch(self) -> str | None:
        return self.workspace.branch if self.workspace else None

    def request_stop(self, *, cancel_request: bool = False) -> None:
        """Stop at the next safe point: before the next request or tool call. With
        `cancel_request`, a request in flight is cut off too (and charged its worst case).
        Safe to call from another thread."""
        self._stop_requested = True
        self._cancel_request = cancel_request
        request = self._in_flight
        if cancel_request and request is not None:
            request.get_loop().call_soon_threadsafe(request.cancel)

    async def run(self, prompt: str) -> ev.SessionReport:
        """Steps until the model's final answer or a stop; the report says which."""
        self.emit(
            ev.SessionStarted(
                session_id=self.memory.session_id,
                model=self.model,
                mode="live" if self.guard else "rehearsal",
                workspace=str(self.workspace.source if self.workspace else self.tools.root),
                work_dir=str(self.tools.root),
                memory_url=self.memory_url,
                scope=self.memory.scope,
                max_turns=self.limits.max_turns,
                test_command=self.tools.test_command.display,
                test_command_source=self.tools.test_command.source,
                workspace_kind=self.workspace.kind if self.workspace else "in-place",
                branch=self.branch,
                edits=self.session.edits,
            )
        )
        next_input: list[dict[str, Any]] | None = [{"role": "user", "content": prompt.strip()}]
        status, exit_code = "completed", ExitCode.NOT_PASSING
        try:
            if self.guard is not None:
                await self._approve_cost(self._payload(next_input))
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
            raise stops.OutputIncomplete(self._incomplete(turn))
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
        payload = self._payload(self.conversation + next_input, books.response_id)
        worst = await self._preflight(payload)
        if books.turn == 0:
            books.first_request_chained = "previous_response_id" in payload
        books.turn += 1
        previous = payload.get("previous_response_id")
        self.emit(
            ev.ModelRequested(turn=books.turn, previous_response_id=previous, worst_case_usd=worst)
        )
        try:
            turn = await self._request(payload, worst or 0.0)
            cost = await self._charge(turn, worst or 0.0)
        except OutcomeUnknownError as exc:
            await self._charge_unknown(worst or 0.0)
            raise stops.ModelError(f"model request failed: {exc}") from exc
        except ResponsesAPIError as exc:
            stop = stops.ModelConfigError if exc.is_configuration else stops.ModelError
            raise stop(f"model request failed: {exc}") from exc
        except OSError as exc:  # the transcript or the ledger could not be written
            raise stops.RecordingError(f"cannot record the session: {exc}") from exc
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

    async def _request(self, payload: dict[str, Any], worst: float) -> ModelTurn:
        """The transport's answer, unless the operator stops the session meanwhile: then the
        request is cancelled and, since the server may have run it, charged its worst case."""
        self._in_flight = asyncio.ensure_future(self.transport.create(payload))
        try:
            if self._cancel_request:  # asked between the checks and now
                self._in_flight.cancel()
            return await self._in_flight
        except asyncio.CancelledError:
            if not self._cancel_request:
                raise  # the session itself is being cancelled
            await self._charge_unknown(worst)
            raise stops.OperatorStop(
                f"stopped by the operator during a model request; charged its worst case "
                f"${worst:.4f}"
            ) from None
        finally:
            self._in_flight = None

    def _check_stop(self) -> None:
        if self._stop_requested:
            raise stops.OperatorStop("stopped by the operator")

    def _payload(
        self, next_input: list[dict[str, Any]], previous: str | None = None
    ) -> dict[str, Any]:
        return request(self.model, next_input, self.request_options, previous)

    def _incomplete(self, turn: ModelTurn) -> str:
        reason = turn.incomplete_reason or "no reason given"
        cut = (
            f"its output reached the {self.request_options.max_output_tokens}-token cap "
            "(reasoning included; raise it with --max-output-tokens)"
            if reason == "max_output_tokens"
            else f"reason: {reason}"
        )
        return f"the model's response came back incomplete, {cut}; none of its calls were run"

    async def _approve_cost(self, first_payload: dict[str, Any]) -> None:
        assert self.guard is not None
        quote = await asyncio.to_thread(self.guard.quote, first_payload, self.limits.max_turns)
        command = self.tools.test_command
        confined = "" if self.tools.sandbox else ", UNCONFINED: --no-sandbox"
        quote = replace(quote, test_command=f"{command.display} ({command.source}{confined})")
        if not await self.supervisor.approve_live_cost(quote):
            raise stops.ApprovalDeclined("live cost not approved; no request was sent")

    async def _preflight(self, payload: dict[str, Any]) -> float | None:
        """The request's worst-case cost, or a stop if it could cross a limit; None offline."""
        if self.guard is None:
            return None
        try:
            return await asyncio.to_thread(self.guard.preflight, payload)
        except BudgetExceededError as exc:
            raise stops.BudgetStop(f"stopped before the request: {exc}") from exc

    async def _charge(self, turn: ModelTurn, worst: float) -> float:
        if self.guard is None:
            return 0.0
        charge = await asyncio.to_thread(  # the ledger file
            partial(self.guard.charge_response, turn.usage, worst, problem=turn.usage_problem)
        )
        if charge.at_worst_case:
            why = charge.problem or "the response reported no usage"
            self.emit(
                ev.SessionNote(
                    level="warning",
                    message=f"charged the worst case ${charge.cost_usd:.4f}: {why}",
                )
            )
        return charge.cost_usd

    async def _charge_unknown(self, worst: float) -> None:
        """A request that may have been billed: its worst case goes in the ledger and books."""
        if self.guard is None:
            return
        try:
            charge = await asyncio.to_thread(self.guard.charge_unknown, worst)
        except OSError as exc:
            raise stops.RecordingError(f"cannot record the session: {exc}") from exc
        self.books.cost_usd += charge.cost_usd
        self.emit(self.books.budget(self.guard))
