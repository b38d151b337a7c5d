"""The Turns pane: each model turn with its calls, Astra's text, tokens and cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from memory.text import as_markup
from widgets.pane_log import PaneLog

if TYPE_CHECKING:
    from agent import events as ev


def brief_call(call: ev.FunctionCallBrief, limit: int = 60) -> str:
    arguments = call.arguments if len(call.arguments) <= limit else call.arguments[:limit] + "…"
    return f"{call.name}({arguments})"


class TurnsLog(PaneLog):
    """A log of turns, refusals, notes and the session's own lines."""

    def add_turn(self, event: ev.ModelResponded) -> None:
        calls = ", ".join(brief_call(call) for call in event.function_calls) or (
            "commentary" if event.commentary and not event.text else "final answer"
        )
        head = (
            f"turn {event.turn} {event.status}: {calls} · "
            f"{event.input_tokens}+{event.output_tokens} tokens ({event.cached_input_tokens} "
            f"cached, {event.reasoning_tokens} reasoning) · ${event.cost_usd:.4f}"
        )
        said = [f"({event.commentary})" if event.commentary else "", event.text]
        text = "".join(f"\n  {line}" for line in said if line)
        self.put(f"[bold][pane.accent]{as_markup(head)}[/][/]{as_markup(text)}")
        if event.refusal is not None:
            self.put(f"[pane.error]{as_markup(f'  refused: {event.refusal}')}[/]")
        if event.incomplete_reason is not None:
            self.put(f"[pane.warning]{as_markup(f'  incomplete: {event.incomplete_reason}')}[/]")

    def add_retry(self, event: ev.RequestRetried) -> None:
        line = f"{event.reason}: retry {event.attempt} in {event.delay_s:.1f}s"
        self.put(f"[pane.warning]{as_markup(line)}[/]")

    def add_refusal(self, event: ev.ToolAnswered) -> None:
        line = f"  ✗ {event.name} refused: {event.output}"
        self.put(f"[pane.error]{as_markup(line)}[/]")

    def add_note(self, event: ev.SessionNote) -> None:
        colour = {"info": "pane.primary", "warning": "pane.warning", "error": "pane.error"}
        self.put(f"[{colour[event.level]}]{as_markup(event.message)}[/]")

    def add_text(self, text: str) -> None:
        self.put(Text(text))  # no markup around it: as text, not escaped into markup
