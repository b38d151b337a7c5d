"""The loop's books for one run: turns, tool calls, tokens and cost, and the events they make.

Kept apart from the loop so that `agent/loop.py` reads as its steps. The tools' findings
(searches, test runs, stores) are kept by `SessionTools`; the report joins both.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent import events as ev
from agent.budget import CostGuard
from agent.exceptions import ExitCode
from agent.tool_calls import SessionTools
from agent.turns import ModelTurn, Usage
from agent.worktree import SessionWorkspace


@dataclass(frozen=True)
class AgentLimits:
    """How far one session may go before it is stopped (exit 3)."""

    max_turns: int = 12
    max_tool_calls: int = 40


@dataclass
class Books:
    max_turns: int
    turn: int = 0
    tool_calls: int = 0
    response_id: str | None = None
    first_request_chained: bool = False  # read from the first payload actually sent
    output_cap: int = 0  # the last request's max_output_tokens, as sent
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    final_text: str = ""

    def responded(self, turn: ModelTurn, cost: float) -> ev.ModelResponded:
        """Counts the turn; its event for the operator."""
        usage = turn.usage or Usage(0, 0)
        self.response_id = turn.id
        self.input_tokens += usage.input_tokens
        self.cached_input_tokens += usage.cached_input_tokens
        self.output_tokens += usage.output_tokens
        self.reasoning_tokens += usage.reasoning_tokens
        self.cost_usd += cost
        return ev.ModelResponded(
            turn=self.turn,
            response_id=turn.id,
            status=turn.status,
            text=turn.text,
            function_calls=[
                ev.FunctionCallBrief(
                    call_id=call.call_id, name=call.name, arguments=str(call.arguments)
                )
                for call in turn.calls
            ],
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=cost,
            incomplete_reason=turn.incomplete_reason,
            cached_input_tokens=usage.cached_input_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            commentary=turn.commentary,
            refusal=turn.refusal,
        )

    def budget(self, guard: CostGuard | None) -> ev.BudgetChanged:
        return ev.BudgetChanged(
            session_cost_usd=self.cost_usd,
            ledger_total_usd=guard.ledger_total_usd if guard else 0.0,
            session_limit_usd=guard.session_limit_usd if guard else None,
            total_limit_usd=guard.total_limit_usd if guard else None,
            turns_used=self.turn,
            max_turns=self.max_turns,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens,
        )

    def started(
        self,
        session: SessionTools,
        model: str,
        live: bool,
        memory_url: str,
        workspace: SessionWorkspace | None,
    ) -> ev.SessionStarted:
        """The session's first event: what runs where, with which tests and limits."""
        tools = session.workspace
        return ev.SessionStarted(
            session_id=session.memory.session_id,
            model=model,
            mode="live" if live else "rehearsal",
            workspace=str(workspace.source if workspace else tools.root),
            work_dir=str(tools.root),
            memory_url=memory_url,
            scope=session.memory.scope,
            max_turns=self.max_turns,
            test_command=tools.test_command.display,
            test_command_source=tools.test_command.source,
            workspace_kind=workspace.kind if workspace else "in-place",
            branch=workspace.branch if workspace else None,
            edits=session.edits,
        )

    def report(
        self,
        session_id: str,
        status: str,
        exit_code: ExitCode,
        tools: SessionTools,
        branch: str | None = None,
    ) -> ev.SessionReport:
        run = tools.last_run
        command = tools.workspace.test_command
        return ev.SessionReport(
            session_id=session_id,
            status=status,
            exit_code=int(exit_code),
            model_requests=self.turn,
            tool_calls=self.tool_calls,
            memory_searches=tools.searches,
            stored_memory_ids=tools.stored,
            tests=ev.TestsReport(exit_code=run.exit_code, passed=run.passed, failed=run.failed)
            if run
            else None,
            tokens={
                "input": self.input_tokens,
                "cached_input": self.cached_input_tokens,
                "output": self.output_tokens,
                "reasoning": self.reasoning_tokens,
                "total": self.input_tokens + self.output_tokens,
            },
            cost_usd=self.cost_usd,
            final_text=self.final_text,
            first_edit_turn=tools.first_edit_turn,
            first_search_turn=tools.first_search_turn,
            first_request_chained=self.first_request_chained,
            test_command=ev.TestCommandReport(command=command.display, source=command.source),
            edits_approved=tools.edits_approved,
            edits_rejected=tools.edits_rejected,
            branch=branch,
        )
