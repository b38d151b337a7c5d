"""The Memory matches pane: a separator for each session, each search's query, then its
matches — score with a bar, `imported` if no test run confirmed it, error type, files,
stored time, fix, and (dim) why it ranked. New matches scroll into view. Selecting a match
asks for the whole record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from widgets.pane_log import filled

if TYPE_CHECKING:
    from agent import events as ev

BAR_WIDTH = 10


def score_bar(score: float) -> str:
    full = round(min(max(score, 0.0), 1.0) * BAR_WIDTH)
    return f"[$success]{'█' * full}[/][dim]{'░' * (BAR_WIDTH - full)}[/]"


class MatchesLog(OptionList):
    """A list of memory searches: each query a heading, each match an option."""

    class RecordRequested(Message):
        """The operator selected a match: show the whole record."""

        def __init__(self, memory_id: str) -> None:
            super().__init__()
            self.memory_id = memory_id

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._memory_ids: dict[str, str] = {}  # option id -> memory id; a record can recur

    def add_session(self, session_id: str) -> None:
        """A separator: the searches after it are this session's."""
        self.add_option(Option(filled("[dim]── session $id ──[/]", id=session_id), disabled=True))

    def add_search(self, event: ev.MemoryMatched) -> None:
        scope = f" [{event.error_type}]" if event.error_type else ""
        query = event.query if len(event.query) <= 200 else event.query[:200] + "…"
        heading = filled(f"[b]turn {event.turn} query$scope:[/] $query", scope=scope, query=query)
        options = [Option(heading, disabled=True)]
        if not event.matches:
            options.append(Option("  no matches", disabled=True))
        for match in event.matches:
            stored = f"{match.stored_at:%Y-%m-%d %H:%M}"
            files = ", ".join(match.file_paths)
            flag = " [$text-error]⚑ flagged[/]" if match.flags else ""
            # a post-mortem's fix, never confirmed by a test run: said before the details
            imported = "[$text-warning]imported[/] · " if match.provenance == "imported" else ""
            why = "\n     [dim]$why[/]" if match.why else ""
            option_id = f"match-{len(self._memory_ids)}"
            self._memory_ids[option_id] = match.memory_id
            options.append(
                Option(
                    filled(
                        f"  {match.rank}. {match.label} [b $text-success]{match.score:.4f}[/] "
                        f"{score_bar(match.score)} {match.memory_id[:8]} {imported}"
                        f"$error_type · $files · {stored}{flag}\n     $fix{why}",
                        error_type=match.error_type,
                        files=files,
                        fix=match.fix_description,
                        why=match.why,
                    ),
                    id=option_id,
                )
            )
        first = self.option_count
        self.add_options(options)
        if event.matches:  # bring the new matches into view, the best highlighted
            self.highlighted = first + 1
        self.call_after_refresh(self.scroll_end, animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        memory_id = self._memory_ids.get(event.option.id or "")
        if memory_id is not None:
            self.post_message(self.RecordRequested(memory_id))
