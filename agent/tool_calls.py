"""The model's tools in one session: each call answered, and the search, test and store flows.

The loop hands every function call here and sends back what `answer` returns: a
`function_call_output` with the call's id. A call that is refused (bad arguments, a path
outside the workspace, a gate) is answered `ERROR: <why>` and the session goes on. What
the gates need — has memory reached the model, which test outcome is the latest — is
kept here, beside the flows that change it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from agent import events as ev
from agent.approval import EditPolicy, operator_rejection
from agent.gates import (
    NOTHING_TO_FIX,
    Step,
    edit_refusal,
    nothing_to_fix,
    red_green_refusal,
    store_refusal,
)
from agent.supervisor import EditProposal, StoreProposal, Supervisor
from agent.tool_schemas import (
    ApplyEditArguments,
    ArgumentError,
    ListFilesArguments,
    ReadFileArguments,
    RunTestsArguments,
    SearchArguments,
    StoreArguments,
    parse_arguments,
)
from agent.turns import FunctionCall
from agent.workspace_tools import TestRun, ToolError, WorkspaceTools
from agent.worktree import WorkspaceError
from memory.errors import MemoryLayerError
from memory.records import MemorySearchResult, TestEvidence
from memory.retrieval.explain import explanation
from memory.safety import redact_secrets
from memory.service import MemoryService


class _Refused(Exception):
    """A tool call refused by a gate; answered with ERROR, the session goes on."""


def match_brief(result: MemorySearchResult, query: str = "") -> ev.MatchBrief:
    """A match as the events carry it; with the search's `query`, why it ranked."""
    record = result.record
    return ev.MatchBrief(
        memory_id=record.memory_id,
        score=result.score,
        rank=result.rank,
        error_type=record.error_type,
        fix_description=record.fix_description,
        file_paths=list(record.file_paths),
        stored_at=record.timestamp,
        provenance=record.provenance,
        flags=list(record.flags),
        label=result.label,
        why=explanation(query, result, compact=True) if query else "",
    )


class SessionTools:
    """Answers the model's calls against one memory, one workspace and one operator."""

    def __init__(
        self,
        memory: MemoryService,
        workspace: WorkspaceTools,
        supervisor: Supervisor,
        emit: Callable[[ev.Event], None],
        *,
        edits: EditPolicy = "auto",
        git_diff: Callable[[], str | None] = lambda: None,
    ) -> None:
        self.memory = memory
        self.workspace = workspace
        self.supervisor = supervisor
        self.emit = emit
        self.edits = edits
        self.git_diff = git_diff  # the session workspace's diff; None in place
        self.memory_delivered = False  # a search result has reached the model
        self.search_pending = False  # a search result is in the outputs not yet sent
        self.latest_confirmed: str | None = None  # the outcome of a pass since the last edit
        self.last_run: TestRun | None = None
        self.failing_run: TestRun | None = None  # the latest red run before the first edit
        self.history: list[Step] = []  # runs and edits in order, for red before green
        self.edits_approved = 0
        self.edits_rejected = 0
        self.test_runs = 0
        self.first_search_turn: int | None = None
        self.first_edit_turn: int | None = None
        self.searches: list[ev.MemorySearchReport] = []
        self.stored: list[str] = []

    @property
    def nothing_to_fix(self) -> bool:
        """The tests passed before any edit: nothing this session could fix or store."""
        return nothing_to_fix(self.history)

    def outputs_sent(self) -> None:
        """The answers went to the model: a search among them has now reached it."""
        if self.search_pending:
            self.search_pending = False
            self.memory_delivered = True

    async def answer(
        self, call: FunctionCall, turn: int, response_id: str | None
    ) -> dict[str, Any]:
        """The call's `function_call_output`, its refusal included."""
        refused = True
        try:
            if call.status not in (None, "completed"):
                raise ArgumentError(
                    f"not run: the call came back {call.status}, so its arguments may be cut "
                    "short; call it again"
                )
            arguments = parse_arguments(call.name, call.arguments)
            self.emit(
                ev.ToolCalled(
                    turn=turn,
                    call_id=call.call_id,
                    name=call.name,
                    arguments=arguments.model_dump(),
                )
            )
            output = await self._dispatch(arguments, turn, response_id)
            refused = False
        except (ArgumentError, ToolError, MemoryLayerError, WorkspaceError, _Refused) as exc:
            if isinstance(exc, ArgumentError):
                self.emit(
                    ev.ToolCalled(
                        turn=turn,
                        call_id=call.call_id,
                        name=call.name,
                        arguments=str(call.arguments),
                    )
                )
            output = f"ERROR: {exc}"
        output = redact_secrets(output)  # files and test output may hold secrets
        self.emit(
            ev.ToolAnswered(
                turn=turn, call_id=call.call_id, name=call.name, output=output, refused=refused
            )
        )
        return {"type": "function_call_output", "call_id": call.call_id, "output": output}

    async def _dispatch(self, arguments: object, turn: int, response_id: str | None) -> str:
        match arguments:
            case SearchArguments():
                return await self._search(arguments, turn, response_id)
            case StoreArguments():
                return await self._store(arguments, response_id)
            case ListFilesArguments():
                return await asyncio.to_thread(self.workspace.list_files, arguments.path)
            case ReadFileArguments():
                return await asyncio.to_thread(self.workspace.read_file, arguments.path)
            case ApplyEditArguments():
                return await self._edit(arguments, turn)
            case RunTestsArguments():
                return await self._run_tests()
        raise _Refused("no handler for this tool")

    async def _edit(self, arguments: ApplyEditArguments, turn: int) -> str:
        refusal = edit_refusal(self.memory_delivered)
        if refusal:
            raise _Refused(refusal)
        edit = (arguments.path, arguments.old_text, arguments.new_text)
        if self.edits == "ask":
            diff = await asyncio.to_thread(self.workspace.preview_edit, *edit)
            decision = await self.supervisor.approve_edit(EditProposal(arguments.path, diff))
            if not decision.approved:
                self.edits_rejected += 1
                raise _Refused(operator_rejection(decision.reason))
        result = await asyncio.to_thread(self.workspace.apply_edit, *edit)
        self.edits_approved += 1
        self.history.append("edit")
        self.latest_confirmed = None  # the code changed: earlier passes prove nothing
        self.first_edit_turn = self.first_edit_turn or turn
        return result

    async def _search(self, arguments: SearchArguments, turn: int, response_id: str | None) -> str:
        report = await self.memory.search_codebase_memory(
            arguments.query, arguments.error_type, arguments.top_k, response_id=response_id
        )
        self.search_pending = True
        self.first_search_turn = self.first_search_turn or turn
        matches = [match_brief(result, report.query) for result in report.results]
        self.searches.append(
            ev.MemorySearchReport(
                query=report.query,
                matches=[
                    {"memory_id": m.memory_id, "score": m.score, "label": m.label} for m in matches
                ],
            )
        )
        self.emit(
            ev.MemoryMatched(
                turn=turn, query=report.query, error_type=report.error_type, matches=matches
            )
        )
        return report.text

    async def _run_tests(self) -> str:
        self.test_runs += 1
        number = self.test_runs
        run = await self.workspace.run_tests(
            on_output=lambda line: self.emit(ev.TestOutput(run=number, line=line))
        )
        if run.reused:
            self.emit(
                ev.SessionNote(
                    level="info",
                    message="run_tests: no file changed since the preflight ran the tests, "
                    "so its run is this one's answer (not run twice)",
                )
            )
        self.last_run = run
        self.latest_confirmed = run.confirmed_outcome
        self.history.append("green" if run.confirmed_outcome else "red")
        if self.history[-1] == "red" and "edit" not in self.history:
            self.failing_run = run
        self.emit(
            ev.TestFinished(
                run=number,
                command=run.command,
                exit_code=run.exit_code,
                passed=run.passed,
                failed=run.failed,
                timed_out=run.timed_out,
                duration_s=run.duration_s,
                confirmed_outcome=run.confirmed_outcome,
            )
        )
        if self.history == ["green"]:
            return f"{run.for_model()}\nNOTE: {NOTHING_TO_FIX}"
        return run.for_model()

    def evidence(self, run: TestRun) -> TestEvidence:
        """One run as a record keeps it: command and its source, exit code, counts, excerpt."""
        return TestEvidence(
            command=run.command,
            exit_code=run.exit_code,
            passed=run.passed,
            failed=run.failed,
            output_excerpt=run.tail(1500),
            source=self.workspace.test_command.source,
        )

    async def _store(self, arguments: StoreArguments, response_id: str | None) -> str:
        refusal = store_refusal(self.memory_delivered, arguments.outcome, self.latest_confirmed)
        refusal = refusal or red_green_refusal(self.history)
        if refusal:
            raise _Refused(refusal)
        run, failing = self.last_run, self.failing_run
        assert run is not None and failing is not None  # red before green: both ran
        passing = self.evidence(run)
        self.memory.confirm_outcome(
            arguments.outcome, replace(passing, failing=self.evidence(failing))
        )
        diff = await asyncio.to_thread(self.git_diff)
        record = self.memory.prepare_fix(
            arguments.fix_description,
            arguments.error_type,
            arguments.file_paths,
            arguments.outcome,
            diff=diff if diff is not None else self.workspace.diff(),
            response_id=response_id,
        )
        nearest = await self.memory.nearest(record)
        duplicate = self.memory.duplicate_of(record, nearest)
        self.emit(
            ev.StoreProposed(
                record=record.to_dict(),
                nearest=[match_brief(r) for r in nearest],
                duplicate_of=duplicate.memory_id if duplicate else None,
            )
        )
        proposal = StoreProposal(record, nearest, duplicate)
        if not await self.supervisor.confirm_store(proposal):
            self.emit(ev.StoreDecided(memory_id=record.memory_id, approved=False))
            return "DECLINED: the operator chose not to store this fix; nothing was written."
        if duplicate is None:
            memory_id, times = await self.memory.commit(record), 1  # "stored" once committed
        else:
            confirmed = await self.memory.confirm_again(duplicate, record)
            memory_id, times = confirmed.memory_id, confirmed.times_confirmed
        self.stored.append(memory_id)
        self.emit(ev.StoreDecided(memory_id=memory_id, approved=True, times_confirmed=times))
        answer: dict[str, object] = {"stored": True, "memory_id": memory_id}
        if duplicate is not None:
            answer |= {"confirmed_again": True, "times_confirmed": times}
        return json.dumps(answer)
