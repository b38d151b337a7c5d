"""Session history: past sessions from their summaries, the ledger and the transcripts,
memory's effect in one line, and a replay of any recorded transcript (offline, free).

The history is read in a thread (app/sessions/history.py); the screen returns the session
to replay through `dismiss`, and the app starts it, as it starts any session."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Label, Static

from app.sessions.history import SessionEntry, load_history, memory_effect, received_strong_match
from app.text_fit import clip, clip_middle, clip_start

# title: width; 0 for the session id and the workspace, which share the width left. Each
# column also takes 2 cells of padding.
COLUMNS = {
    "when": 16,
    "session": 0,
    "status": 10,
    "tests": 5,
    "turns": 5,
    "cost": 8,
    "matches": 7,
    "memory": 6,
    "stored": 6,
    "model": 12,
    "workspace": 0,
}
# Narrower, these go in this order (the detail below still says them), then the year:
# what tells one session from another is its id and its workspace.
DROPPED_WHEN_NARROW = ("model", "matches", "turns", "stored", "cost", "year")
SHORT_WHEN = 11  # "01-01 10:00"
MIN_NAME_WIDTH = 16


def layout(width: int) -> dict[str, int]:
    """Each column's width at this screen width: as many as leave the session id and the
    workspace MIN_NAME_WIDTH each, the two sharing what is left."""
    columns = dict(COLUMNS)
    left = 0
    for dropped in (None, *DROPPED_WHEN_NARROW):
        if dropped == "year":
            columns["when"] = SHORT_WHEN
        elif dropped is not None:
            del columns[dropped]
        left = width - sum(w + 2 for w in columns.values()) - 2  # the scrollbar
        if left >= 2 * MIN_NAME_WIDTH:
            break
    columns["session"] = max(left // 2, 8)
    columns["workspace"] = max(left - left // 2, 8)
    return columns


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
            f"status {text(entry.status)}, tests {entry.tests_shown} "
            f"(exit {text(entry.exit_code)}) · "
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

    CSS_PATH = "history_screen.tcss"

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
        self.query_one(DataTable).focus()
        self.load()

    def on_resize(self) -> None:
        self._draw_rows()

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="history", exit_on_error=False, description="history")
    def load(self) -> None:
        unreadable: list[str] = []
        entries = load_history(self.data_dir, unreadable)
        self.app.call_from_thread(self._fill, entries, unreadable)

    def _fill(self, entries: list[SessionEntry], unreadable: list[str]) -> None:
        self.entries = entries
        self._draw_rows()
        skipped = f" · {len(unreadable)} unreadable, not listed" if unreadable else ""
        self.query_one("#history-title", Label).update(
            f"Sessions · {self.data_dir} · {len(entries)} sessions{skipped}"
        )
        if unreadable:
            self.notify(
                f"{len(unreadable)} session summary(ies) could not be read and are not "
                f"listed; the first: {unreadable[0]}",
                severity="warning",
            )
        self.query_one("#history-effect", Label).update(
            "Memory's effect: " + " · ".join(memory_effect(entries).lines())
        )
        self._show_detail()

    def _draw_rows(self) -> None:
        """The table at the screen's width; the cursor stays on its row."""
        table = self.query_one(DataTable)
        row = table.cursor_row
        columns = layout(self.size.width)
        table.clear(columns=True)
        for title, width in columns.items():
            table.add_column(title, width=width, key=title)
        for entry in self.entries:
            started = (entry.started_at or "?")[:16].replace("T", " ")
            cells = {
                "when": started if columns["when"] > SHORT_WHEN else started[5:],
                "session": clip_middle(entry.session_id, columns["session"]),
                "status": clip(entry.status or "unknown", columns["status"]),
                "tests": entry.tests_shown,
                "turns": "?" if entry.turns is None else str(entry.turns),
                "cost": f"${entry.cost_usd:.4f}",
                "matches": str(entry.matches_delivered),
                "memory": "match" if received_strong_match(entry) else "none",
                "stored": str(len(entry.stored_memory_ids)),
                "model": clip(entry.model or "?", COLUMNS["model"]),
                "workspace": clip_start(entry.workspace or "?", columns["workspace"]),
            }
            # Text: a DataTable reads a str as markup, and an id or a path is data
            table.add_row(*(Text(cells[title]) for title in columns), key=entry.session_id)
        if 0 <= row < len(self.entries):
            table.move_cursor(row=row)

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
