"""The Memory matches pane: each search's query and its matches with their scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from widgets.pane_log import PaneLog

if TYPE_CHECKING:
    from agent import events as ev


class MatchesLog(PaneLog):
    """A log of memory searches; `entries` keeps the plain text, for tests."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entries: list[str] = []

    def add_search(self, event: ev.MemoryMatched) -> None:
        scope = f" [{event.error_type}]" if event.error_type else ""
        query = event.query if len(event.query) <= 200 else event.query[:200] + "…"
        self.entries.append(f"query{scope}: {query}")
        self.put(f"[bold]turn {event.turn} query{escape(scope)}:[/] {escape(query)}")
        if not event.matches:
            self.entries.append("no matches")
            self.put("  [dim]no matches[/]")
        for match in event.matches:
            detail = (
                f"{match.memory_id[:8]} {match.error_type} · "
                f"{', '.join(match.file_paths)} · {match.fix_description}"
            )
            self.entries.append(f"{match.rank}. {match.score:.4f} {detail}")
            flag = " [red]⚑ flagged[/]" if match.flags else ""
            self.put(f"  {match.rank}. [bold green]{match.score:.4f}[/] {escape(detail)}{flag}")
