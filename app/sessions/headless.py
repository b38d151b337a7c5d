"""The headless Supervisor and event printer: a session in a terminal or a pipe.

Flags answer the operator's questions; `--store ask` (and live cost without
`--approve-live-cost`) asks on a terminal and declines where there is none; `--edits ask`
shows each edit's diff on a terminal and takes y, or n and a reason for the model. Events print
as readable lines, or as one JSON object per line with `--json`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Literal

from rich.console import Console

from agent import events as ev
from agent.supervisor import CostQuote, EditDecision, EditProposal, StoreProposal
from app.console import make_console
from memory.text import as_markup, counts_text, shown

StorePolicy = Literal["ask", "yes", "no"]


def ask_terminal(question: str) -> bool:
    """y/N on a terminal. Without one the answer is no, and stderr says so and why. The
    question carries record and model text, so its control characters are shown, not obeyed."""
    question = shown(question)
    if not sys.stdin.isatty():
        print(
            f"{question} no: no terminal to ask; flags answer instead (live cost: "
            "--approve-live-cost, a store: --store yes, edits: --edits auto)",
            file=sys.stderr,
            flush=True,
        )
        return False
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


def ask_edit_on_terminal(proposal: EditProposal) -> EditDecision:
    """The edit's diff on stderr, then y/N and, on no, the reason the model is given; for a
    file the tests wrote, y/N only."""
    who = "The tests wrote" if proposal.by_tests else "Astra wants to edit"
    print(f"\n{who} {shown(proposal.path)}:\n{shown(proposal.diff)}", file=sys.stderr)
    if proposal.by_tests:
        return EditDecision(ask_terminal("Keep it with the session's changes?"))
    if ask_terminal("Apply this edit?"):
        return EditDecision(True)
    print("Why not? (told to the model) ", end="", file=sys.stderr, flush=True)
    return EditDecision(False, sys.stdin.readline().strip())


class HeadlessSupervisor:
    def __init__(
        self,
        *,
        approve_live_cost: bool,
        store: StorePolicy,
        ask: Callable[[str], bool] = ask_terminal,
        ask_edit: Callable[[EditProposal], EditDecision] = ask_edit_on_terminal,
    ) -> None:
        self.approve = approve_live_cost
        self.store = store
        self.ask = ask
        self.ask_edit = ask_edit

    async def approve_edit(self, proposal: EditProposal) -> EditDecision:
        return await asyncio.to_thread(self.ask_edit, proposal)

    async def approve_live_cost(self, quote: CostQuote) -> bool:
        if self.approve:
            return True
        limit = f"${quote.session_limit_usd:.2f}" if quote.session_limit_usd is not None else "none"
        cap = f"up to {quote.max_output_tokens} output tokens a turn"
        if quote.output_sized:
            cap += f", {quote.sized_cap_text()}"
        return await asyncio.to_thread(
            self.ask,
            f"Live session with {quote.model}: worst case ${quote.session_worst_case_usd:.4f} "
            f"({quote.capped_by}; session limit {limit}; {cap}); tests run with "
            f"{quote.test_command}. Send paid requests?",
        )

    async def confirm_store(self, proposal: StoreProposal) -> bool:
        if self.store != "ask":
            return self.store == "yes"
        record = proposal.record
        flags = f" FLAGGED: {'; '.join(record.flags)}." if record.flags else ""
        if proposal.duplicate_of is not None:
            return await asyncio.to_thread(
                self.ask,
                f"Fix {record.short_id} ({record.error_type}, {', '.join(record.file_paths)}): "
                f"{record.fix_description}{flags} It repeats stored fix "
                f"{proposal.confirm_again_text()}. Confirm it again?",
            )
        return await asyncio.to_thread(
            self.ask,
            f"Store fix {record.short_id} ({record.error_type}, {', '.join(record.file_paths)}): "
            f"{record.fix_description}{flags} Write it to memory?",
        )


def token_counts(event: ev.ModelResponded) -> str:
    """`in+out tokens (cached, reasoning)`: cached is part of in, reasoning part of out."""
    return (
        f"{event.input_tokens}+{event.output_tokens} tokens ({event.cached_input_tokens} "
        f"cached, {event.reasoning_tokens} reasoning)"
    )


class EventPrinter:
    """Prints each event as it happens: readable lines, or JSON lines."""

    def __init__(self, *, as_json: bool, console: Console | None = None) -> None:
        self.as_json = as_json
        self.console = console or make_console()

    def __call__(self, event: ev.Event) -> None:
        if self.as_json:
            print(event.model_dump_json(), flush=True)
            return
        line = self.describe(event)
        if line:
            self.console.print(line)

    @staticmethod
    def describe(event: ev.Event) -> str | None:
        match event:
            case ev.SessionStarted():
                branch = f" on {as_markup(event.branch)}" if event.branch else ""
                return (
                    f"[bold]session {event.session_id}[/] · {event.model} ({event.mode}) · "
                    f"workspace {as_markup(event.workspace)}{branch} · "
                    f"scope {as_markup(event.scope)}\n  tests: {as_markup(event.test_command)} "
                    f"({as_markup(event.test_command_source)}) · edits: {event.edits}"
                )
            case ev.ModelResponded():
                calls = ", ".join(call.name for call in event.function_calls) or (
                    "commentary" if event.commentary and not event.text else "final answer"
                )
                said = [f"({event.commentary})" if event.commentary else "", event.text]
                if event.refusal is not None:
                    said.append(f"refused: {event.refusal}")
                text = "".join(f"\n    {as_markup(line)}" for line in said if line)
                return (
                    f"[cyan]turn {event.turn}[/] {event.status}: {calls} · {token_counts(event)}"
                    f" · ${event.cost_usd:.4f}{text}"
                )
            case ev.RequestRetried():
                return (
                    f"[yellow]{as_markup(event.reason)}: retry {event.attempt} "
                    f"in {event.delay_s:.1f}s[/]"
                )
            case ev.ToolAnswered(refused=True):
                return f"  [red]✗ {event.name}[/]: {as_markup(event.output)}"
            case ev.MemoryMatched():
                if not event.matches:
                    return "  memory: no matches"
                return "\n".join(
                    f"  memory match {m.rank} [bold]{m.score:.4f}[/] {m.memory_id[:8]} "
                    f"{as_markup(m.error_type)}: {as_markup(m.fix_description)}"
                    for m in event.matches
                )
            case ev.TestFinished():
                colour = "green" if event.exit_code == 0 else "red"
                return (
                    f"  [{colour}]tests: exit {event.exit_code}, "
                    f"{counts_text(event.passed, event.failed)}[/] ({event.duration_s:.1f}s)"
                )
            case ev.StoreDecided():
                verdict = "stored" if event.approved else "declined, nothing written"
                if event.approved and event.times_confirmed > 1:
                    verdict = f"confirmed again, {event.times_confirmed} times"
                return f"  memory write {event.memory_id[:8]}: {verdict}"
            case ev.SessionNote():
                colour = {"info": "blue", "warning": "yellow", "error": "red"}[event.level]
                return f"[{colour}]{as_markup(event.message)}[/]"
            case ev.SessionReport():
                tests = (
                    counts_text(event.tests.passed, event.tests.failed)
                    if event.tests
                    else "not run"
                )
                edits = f"edits {event.edits_approved} approved, {event.edits_rejected} rejected"
                branch = f" · branch {as_markup(event.branch)}" if event.branch else ""
                return (
                    f"[bold]{event.status}[/] (exit {event.exit_code}) · {event.model_requests} "
                    f"requests · {event.tool_calls} tool calls · tests {tests} · {edits} · "
                    f"stored {len(event.stored_memory_ids)} · ${event.cost_usd:.4f}{branch}"
                )
        return None
