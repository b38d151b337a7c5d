"""A model request with its money kept: priced before it is sent, charged after.

The preflight refuses a request whose worst case could cross a limit. After it, the
request is charged what its `usage` says, or its worst case when the usage cannot be
billed, when its outcome is unknown (a timeout after sending), or when the operator cuts
it off: each of those may have been billed, and the ledger never under-records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from agent import events as ev
from agent import exceptions as stops
from agent.books import Books
from agent.budget import BudgetExceededError, CostGuard
from agent.supervisor import Supervisor
from agent.transport import OutcomeUnknownError, ResponsesAPIError, ResponsesTransport
from agent.turns import ModelTurn, RequestOptions
from agent.workspace_tools import WorkspaceTools


class MeteredRequests:
    """One session's requests: the transport, the guard (None offline), the books."""

    def __init__(
        self,
        transport: ResponsesTransport,
        guard: CostGuard | None,
        books: Books,
        emit: Callable[[ev.Event], None],
    ) -> None:
        self.transport = transport
        self.guard = guard
        self.books = books
        self.emit = emit
        self._cancelled = False  # the operator cut off the request in flight
        self._in_flight: asyncio.Task[ModelTurn] | None = None

    def cancel(self) -> None:
        """Cut off the request in flight, if any. Safe to call from another thread."""
        self._cancelled = True
        request = self._in_flight
        if request is not None:
            request.get_loop().call_soon_threadsafe(request.cancel)

    async def approve(
        self,
        first: dict[str, Any],
        options: RequestOptions,
        max_turns: int,
        tools: WorkspaceTools,
        supervisor: Supervisor,
    ) -> None:
        """The operator approves the session's worst case before the first paid request; a
        session whose first request cannot fit the budget stops before the question."""
        assert self.guard is not None
        quote_for = partial(self.guard.quote, sized=options.sized_to_budget)
        try:
            quote = await asyncio.to_thread(quote_for, first, max_turns)
        except BudgetExceededError as exc:
            hint = "raise --budget-usd" if options.sized_to_budget else "lower --max-output-tokens"
            raise stops.BudgetStop(f"stopped before the first request: {exc}; {hint}") from exc
        command = tools.test_command
        confined = "" if tools.sandbox else ", UNCONFINED: --no-sandbox"
        quote = replace(quote, test_command=f"{command.display} ({command.source}{confined})")
        if not await supervisor.approve_live_cost(quote):
            raise stops.ApprovalDeclined("live cost not approved; no request was sent")

    async def preflight(self, payload: dict[str, Any], options: RequestOptions) -> float | None:
        """The request's worst-case cost, or a stop if it could cross a limit; None offline.
        With `sized_to_budget`, the payload's output cap is first lowered to what is left."""
        if self.guard is None:
            return None
        guard = self.guard

        def priced() -> float:
            if options.sized_to_budget:
                payload["max_output_tokens"] = guard.output_that_fits(payload)
            return guard.preflight(payload)

        try:
            return await asyncio.to_thread(priced)
        except BudgetExceededError as exc:
            raise stops.BudgetStop(f"stopped before the request: {exc}") from exc

    async def send(self, payload: dict[str, Any], worst: float) -> tuple[ModelTurn, float]:
        """The model's turn and what it cost; a failed request becomes the stop it calls for."""
        try:
            turn = await self._request(payload, worst)
            return turn, await self._charge(turn, worst)
        except OutcomeUnknownError as exc:
            await self._charge_unknown(worst)
            raise stops.ModelError(f"model request failed: {exc}") from exc
        except ResponsesAPIError as exc:
            stop = stops.ModelConfigError if exc.is_configuration else stops.ModelError
            raise stop(f"model request failed: {exc}") from exc
        except OSError as exc:  # the transcript or the ledger could not be written
            raise stops.RecordingError(f"cannot record the session: {exc}") from exc

    async def _request(self, payload: dict[str, Any], worst: float) -> ModelTurn:
        """The transport's answer, unless the operator stops the session meanwhile: then the
        request is cancelled and, since the server may have run it, charged its worst case."""
        self._in_flight = asyncio.ensure_future(self.transport.create(payload))
        try:
            if self._cancelled:  # asked between the checks and now
                self._in_flight.cancel()
            return await self._in_flight
        except asyncio.CancelledError:
            if not self._cancelled:
                raise  # the session itself is being cancelled
            await self._charge_unknown(worst)
            raise stops.OperatorStop(
                f"stopped by the operator during a model request; charged its worst case "
                f"${worst:.4f}"
            ) from None
        finally:
            self._in_flight = None

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
