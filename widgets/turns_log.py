"""The Turns pane: each model turn with its calls, Astra's text, tokens and cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from widgets.pane_log import PaneLog

if TYPE_CHECKING:
    from agent import events as ev


def brief_call(call: ev.FunctionCallBrief, limit: int = 60) -> str:
    arguments = call.arguments if len(call.arguments) <= limit else call.arguments[:limit] + "…"
    return f"{call.name}({arguments})"


class TurnsLog(PaneLog):
    """A log of turns, refusals, notes and the session's own lines."""

    def add_turn(self, event: ev.ModelResponded) -> None:
        calls = ", ".join(brief_call(call) for call in event.function_calls) or "final answer"
        head = (
            f"turn {event.turn} {event.status}: {calls} · "
            f"{event.input_tokens}+{event.output_tokens} tokens · ${event.cost_usd:.4f}"
        )
        text = f"\n  {event.text}" if event.text else ""
        self.put(f"[bold][pane.accent]{escape(head)}[/][/]{escape(text)}")

    def add_refusal(self, event: ev.ToolAnswered) -> None:
        line = f"  ✗ {event.name} refused: {event.output}"
        self.put(f"[pane.error]{escape(line)}[/]")

    def add_note(self, event: ev.SessionNote) -> None:
        colour = {"info": "pane.primary", "warning": "pane.warning", "error": "pane.error"}
        self.put(f"[{colour[event.level]}]{escape(event.message)}[/]")

    def add_text(self, text: str) -> None:
        self.put(escape(text))
