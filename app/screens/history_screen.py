"""Session history: past sessions from their summaries, the ledger and the transcripts,
memory's effect in one line, and a replay of any recorded transcript (offline, free).

The history is read in a thread (app/session_history.py); the screen returns the session
to replay through `dismiss`, and the app starts it, as it starts any session."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from app.session_history import SessionEntry, load_history, memory_effect, received_strong_match

COLUMNS = ["when", "status", "turns", "cost", "matches", "memory", "stored", "model", "workspace"]


def can_replay(entry: SessionEntry) -> str | None:
    """Why this session cannot be replayed, or None if it can."""
    if entry.transcript is None or not Path(entry.transcript).is_file():
        return "it has no transcript (only live sessions are recorded)"
    if entry.workspace is None:
        return "its workspace was not recorded (a session from before summaries)"
    if not Path(entry.workspace).is_dir():
        return f"its workspace {entry.workspace} is gone"
    return None


def detail(entry: SessionEntry) -> str:
    def text(value: object) -> str:
        return "unknown" if value is None else str(value)

    green = "never" if entry.seconds_to_green is None else f"{entry.seconds_to_green:.1f} s"
    return "\n".join(
        [
            f"session {entry.session_id} · {text(entry.mode)} · {text(entry.model)}",
            f"workspace {text(entry.workspace)}",
            f"status {text(entry.status)} (exit {text(entry.exit_code)}) · "
            f"{text(entry.turns)} turns · {text(entry.tool_calls)} tool calls · "
            f"${entry.cost_usd:.4f} · time to green {green}",
            f"matches delivered: {', '.join(i[:8] for i in entry.delivered_memory_ids) or 'none'}",
            f"stored: {', '.join(entry.stored_memory_ids) or 'none'}",
            f"transcript: {entry.transcript_shown}",
            "enter replays it in the dashboard (offline, free, no store)"
            if can_replay(entry) is None
            else f"no replay: {can_replay(entry)}",
        ]
    )


class HistoryScreen(Screen[SessionEntry | None]):
    """Dismisses with the session to replay, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_none", "Back", id="history.back"),
        Binding("enter", "replay", "Replay", id="history.replay"),
        Binding("r", "reload", "Reload", id="history.reload"),
    ]

    def __init__(self, data_dir: Path) -> None:
        super().__init__(id="history")
        self.data_dir = data_dir
        self.entries: list[SessionEntry] = []

    def compose(self) -> ComposeResult:
        yield Label(f"Sessions · {self.data_dir} · loading…", id="history-title")
        with Vertical(id="history-body"):
            yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="history-detail-scroll"):
                yield Static(id="history-detail")
        yield Label("", id="history-effect")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        table.focus()
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False, description="history")
    def load(self) -> None:
        entries = load_history(self.data_dir)
        self.app.call_from_thread(self._fill, entries)

    def _fill(self, entries: list[SessionEntry]) -> None:
        self.entries = entries
        table = self.query_one(DataTable)
        table.clear()
        for entry in entries:
            table.add_row(
                (entry.started_at or "?")[:16].replace("T", " "),
                entry.status or "unknown",
                "?" if entry.turns is None else str(entry.turns),
                f"${entry.cost_usd:.4f}",
                str(entry.matches_delivered),
                "match" if received_strong_match(entry) else "none",
                str(len(entry.stored_memory_ids)),
                entry.model or "?",
                entry.workspace or "?",
                key=entry.session_id,
            )
        self.query_one("#history-title", Label).update(
            f"Sessions · {self.data_dir} · {len(entries)} sessions"
        )
        self.query_one("#history-effect", Label).update(
            "Memory's effect: " + " · ".join(memory_effect(entries).lines())
        )
        self._show_detail()

    @on(DataTable.RowHighlighted, "#sessions")
    def _show_detail(self) -> None:
        entry = self.highlighted
        self.query_one("#history-detail", Static).update(
            detail(entry) if entry else "No sessions recorded yet."
        )

    @property
    def highlighted(self) -> SessionEntry | None:
        row = self.query_one(DataTable).cursor_row
        return self.entries[row] if 0 <= row < len(self.entries) else None

    @on(DataTable.RowSelected, "#sessions")
    def action_replay(self) -> None:
        entry = self.highlighted
        if entry is None:
            return
        problem = can_replay(entry)
        if problem is not None:
            self.notify(f"cannot replay {entry.session_id}: {problem}", severity="warning")
            return
        self.dismiss(entry)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
