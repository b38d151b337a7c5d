"""The memory browser: every record, semantic search as you type (the arrows and `enter` in
the search box move through the matches and open one; under the table, why the
highlighted match ranked), detail, delete, export, and clearing a record's possibly-stale
mark. A picker beside the search box chooses the scope the list and the search look in:
the session's by default, any scope the store holds, or all of them. `ctrl+o` opens the
review of the fixes MCP clients proposed (pending_screen.py).

Store calls and searches run in workers; a search waits for typing to pause. The app hands
the browser a `MemoryAccess` (the session queue): the browser never reaches into the app.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Label, Select

from app.dashboard.screens.browsing import BrowsingScreen
from app.dashboard.screens.confirm_modal import ConfirmModal
from app.dashboard.screens.export_modal import ExportModal
from app.dashboard.screens.pending_screen import PendingScreen
from app.dashboard.screens.record_modal import RecordModal
from app.sessions.options import default_export_path
from app.text_fit import clip, clip_middle, counted
from memory.text import short_url
from widgets import RecordView, data_cell

if TYPE_CHECKING:
    from app.sessions.backend import DashboardBackend
    from memory.records import DeliveryStats, MemoryRecord, MemorySearchResult


class MemoryAccess(Protocol):
    """What the browser needs: where the memory is, the app's progress while it opens,
    and the backend once it is open."""

    memory_url: str
    scope: str
    data_dir: Path  # where exports go by default
    status: str  # what the app is doing: opening the store, loading the model, an error
    startup_error: str | None  # why the memory or its model could not be opened
    ready: asyncio.Event  # set once the embedder is loaded (or failed to)

    async def when_ready(self, *, search: bool = False) -> DashboardBackend | None:
        """The backend once the store is open (and, with `search`, the embedder loaded);
        None if opening failed."""
        ...


SEARCH_DELAY_S = 0.3
LIST_LIMIT = 500
# (title, width) of each column but the fix, which takes the width left; score only
# while searching. Each column also takes 2 cells of padding.
COLUMNS = [
    ("id", 8),
    ("score", 15),  # "possible 0.1234": the label and the cosine
    ("error type", 14),
    ("fix", 0),
    ("files", 14),
    ("stored at", 11),
    ("scope", 8),
    ("sent", 4),  # how many times it was delivered to a session
    ("green", 5),
]
MIN_FIX_WIDTH = 20
DROPPED_WHEN_NARROW = ("files", "stored at", "scope")  # in this order, to keep the fix readable
IMPORTED_MARK = "imported · "  # ahead of the fix: from a post-mortem, not test-confirmed
SCOPE_LABEL_WIDTH = 20  # what the picker's 28 cells (memory_browser.tcss) leave for its label
ALL_SCOPES = "all scopes"  # the picker's label for None: the stores' "every scope"


class MemoryBrowserScreen(BrowsingScreen):
    CSS_PATH = "memory_browser.tcss"
    AUTO_FOCUS = "#search"  # typed at once, a first search sends no key the table's way
    BINDINGS: ClassVar[list[BindingType]] = [
        # Ahead of the search box's own ctrl+e, delete and ctrl+u (end, delete right, delete
        # left), which took them there and hid them from the footer; end, ctrl+d, backspace
        # still edit the search. First, in the search box's order: the footer then lists
        # them alike wherever the focus is. ctrl+u: `memory unstale`.
        Binding("ctrl+e", "export", "Export", id="browser.export", priority=True),
        Binding("delete", "delete", "Delete", id="browser.delete", priority=True),
        Binding("ctrl+u", "clear_stale", "Unstale", id="browser.unstale", priority=True),
        Binding("ctrl+o", "review_pending", "Pending", id="browser.pending", priority=True),
        Binding("escape", "close", "Back", id="browser.back"),
        Binding("slash", "focus_search", "Search", id="browser.search", show=False),
        # Every other printable key types into the search (`on_key`): a word typed with
        # the table focused never deletes or changes a record, so no action has a letter.
        Binding("ctrl+r", "reload", "Reload", id="browser.reload", show=False),
        # From the search box (the table takes its own arrows): the highlight moves, and
        # typing goes on; `enter` there opens the highlighted match (`search_submitted`).
        Binding("down", "move_highlight(1)", show=False, id="browser.next"),
        Binding("up", "move_highlight(-1)", show=False, id="browser.previous"),
        Binding("ctrl+q", "app.quit", "Quit", id="browser.quit", priority=True),
        # The app's letters (n, m, s, q, h, ?) type here too: hidden from the footer
        Binding("n,m,s,q,h,question_mark", "focus_search", show=False, id="browser.typed"),
    ]

    def __init__(self, memory: MemoryAccess) -> None:
        super().__init__()  # no id: the idle app's first browser stays under the dashboard
        self.memory = memory
        self.records: dict[str, MemoryRecord] = {}
        self.query_text = ""
        self._debounce: Timer | None = None
        self.exported: Path | None = None
        self.loaded: int | None = None  # rows shown, once a listing or search has arrived
        self.held = 0  # records in the scope listed (more than `loaded` past LIST_LIMIT)
        self.elsewhere = 0  # records in the scopes not listed: where an empty search looks next
        self._rows: list[tuple[MemoryRecord, str]] = []
        self._stats: dict[str, DeliveryStats] = {}
        self._found: dict[str, MemorySearchResult] = {}  # memory id -> match; none listing
        self.stale: set[str] = set()  # ids of possibly stale records among those shown
        self._shown: str | None = None  # the record in the detail pane
        self._listed: str | None = None  # the query the rows shown answer ("": the list)
        self._open_when_listed: str | None = None  # `enter` came before this query's rows
        self.scope: str | None = memory.scope  # what the picker chose; None: every scope
        self._scopes: list[str] = [memory.scope]  # the picker's scopes, but "all scopes"
        self.pending = 0  # proposals from MCP clients waiting for the operator

    def show_status(self) -> None:
        self.show_title()

    def show_title(self) -> None:
        """The store, then what is listed; until a listing arrives, the app's progress
        (opening the store, loading the model, an error), as the dashboard shows it."""
        if self.loaded is None:
            what = self.memory.status
        elif self.query_text:
            query = clip(self.query_text, 32)  # whole in the search box
            what = f"{counted(self.loaded, 'match', 'matches')} for {query!r}"
        elif self.held > self.loaded:
            what = f"newest {self.loaded} of {self.held} records"
        else:
            what = counted(self.loaded, "record", "records")
        if self.loaded == 0 and self.elsewhere:
            elsewhere = counted(self.elsewhere, "record", "records")
            what += f" · {elsewhere} in other scopes: choose in the picker"
        if self.pending:
            what += f" · {self.pending} proposed over MCP: ^o"
        if self.loaded is not None and self.memory.startup_error is not None:
            what += f" · search unavailable: {self.memory.startup_error}"
        elif self.loaded is not None and not self.memory.ready.is_set():
            what += " · search waits for the embedding model"

        room = max(self.app.size.width - len(f" Memory ·  · {what} "), 24)
        for title in self.query("#browser-title").results(Label):  # none once the app closes
            title.update(data_cell(f"Memory · {short_url(self.memory.memory_url, room)} · {what}"))

    def compose(self) -> ComposeResult:
        yield Label("Memory · loading…", id="browser-title")
        with Horizontal(id="browser-bar"):
            yield Input(
                placeholder="search by meaning (empty: list all)",  # where: the picker
                id="search",
                select_on_focus=False,  # a key typed in the table lands here: keep it
            )
            # the scope picker comes a frame later (`_mount_picker`): it is the costliest
            # widget to style, and the first frame should not wait for it
        with Vertical(id="browser-body"):
            yield DataTable(id="records", cursor_type="row", zebra_stripes=True)
            yield Label(id="why")
            with VerticalScroll(id="detail-scroll"):
                yield RecordView(id="detail")
        yield Footer()

    def _scope_options(self) -> list[tuple[Text, str | None]]:
        """One line each, in the picker and its list: a long scope keeps its tail."""
        shown = [
            (data_cell(clip_middle(scope, SCOPE_LABEL_WIDTH)), scope) for scope in self._scopes
        ]
        return [*shown, (Text(ALL_SCOPES), None)]

    def _show_scopes(self, scopes: list[str]) -> None:
        """The store's scopes in the picker, the session's (`default` unless chosen) and the
        chosen one among them even while they hold no record."""
        scopes = sorted({*scopes, self.memory.scope, *([self.scope] if self.scope else [])})
        picker = self.picker
        if picker is None or (scopes == self._scopes and picker.value == self.scope):
            self._scopes = scopes  # not mounted yet: it starts with these
            return
        self._scopes = scopes
        with picker.prevent(Select.Changed):  # the same choice, not the operator's
            picker.set_options(self._scope_options())
            picker.value = self.scope

    @on(Select.Changed, "#scope")
    def scope_changed(self, event: Select.Changed) -> None:
        if event.value == self.scope or event.value is Select.BLANK:
            return
        self.scope = event.value  # type: ignore[assignment]  # a scope, or None: every scope
        self.load(self.query_text)

    def on_mount(self) -> None:
        self.show_title()
        self.load()
        self.call_after_refresh(self._mount_picker)

    def _mount_picker(self) -> None:
        bar = self.query_one("#browser-bar")
        if bar.is_attached:  # else the browser closed within its first frame
            options = self._scope_options()
            bar.mount(Select(options, value=self.scope, allow_blank=False, id="scope"))

    @property
    def picker(self) -> Select | None:
        """The scope picker, once mounted (a frame after the browser)."""
        return next(iter(self.query("#scope").results(Select)), None)

    @on(Input.Changed, "#search")
    def search_changed(self, event: Input.Changed) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        query = event.value.strip()
        self._open_when_listed = None  # typed on after `enter`: that answer is not awaited
        self._debounce = self.set_timer(SEARCH_DELAY_S, lambda: self.load(query))

    @on(Input.Submitted, "#search")
    def search_submitted(self, event: Input.Submitted) -> None:
        """Open the highlighted match; typed faster than the search, the first match of
        what was typed, once it arrives (the search starts now, not after the pause)."""
        query = event.value.strip()
        if query == self._listed and query == self.query_text:
            self.open_selected()
            return
        if self._debounce is not None:
            self._debounce.stop()
        self._open_when_listed = query
        self.load(query)

    def action_move_highlight(self, step: int) -> None:
        table = self.query_one(DataTable)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    @work(exclusive=True, group="browser", exit_on_error=False, description="memory search")
    async def load(self, query: str = "", *, keep: bool = False) -> None:
        """List or search; a new list highlights its first row, a reload (`keep`) the
        record highlighted before, while it is still there."""
        self.query_text = query
        backend = await self.memory.when_ready(search=bool(query))
        if backend is None:
            return
        store_stats = await backend.store.stats(datetime.now(UTC))
        scopes = store_stats.by_scope
        if self.loaded is None and scopes and not scopes.get(self.scope or ""):
            self.scope = None  # the session's scope is empty (after the demo, say): show all
            self.notify(
                f"scope {self.memory.scope} holds no record yet: showing all scopes",
                markup=False,
            )
        if query:
            results = await backend.browser_service().find(
                query, top_k=10, scope=self.scope, all_scopes=self.scope is None
            )
            rows = [(r.record, f"{r.label} {r.score:.4f}") for r in results]
            found = {r.record.memory_id: r for r in results}
        else:
            listed = await backend.store.list_records(scope=self.scope, limit=LIST_LIMIT)
            rows, found = [(record, "") for record in listed], {}
            self.held = store_stats.held(self.scope)
        stats = await backend.store.delivery_stats([record.memory_id for record, _ in rows])
        pending = await backend.pending_count()
        if pending != self.pending:
            self.pending = pending
            self.refresh_bindings()
        from memory.records import possibly_stale  # loaded by now: the backend is open

        after = backend.settings.astra_stale_after
        self.stale = {
            record.memory_id
            for record, _ in rows
            if possibly_stale(record, stats.get(record.memory_id), after)
        }
        self._found = found
        self._listed = query
        self.elsewhere = store_stats.records - store_stats.held(self.scope)
        self._fill(rows, stats, keep)
        self._show_scopes(list(scopes))
        if self._open_when_listed == query:
            self._open_when_listed = None
            self.open_selected()

    def _fill(
        self, rows: list[tuple[MemoryRecord, str]], stats: dict[str, DeliveryStats], keep: bool
    ) -> None:
        self._rows, self._stats = rows, stats
        self.records = {record.memory_id: record for record, _ in rows}
        self._draw_rows(keep)
        self.loaded = len(rows)
        self.show_title()
        self.show_selected()

    def _draw_rows(self, keep: bool = True) -> None:
        """The table at the screen's width: the fix column takes what the others leave.
        The cursor stays on the record it was on (`keep`), else goes to the first row."""
        table = self.query_one(DataTable)
        selected = self.selected() if keep else None
        columns = [(t, w) for t, w in COLUMNS if t != "score" or self.query_text]
        for dropped in (None, *DROPPED_WHEN_NARROW):
            columns = [(t, w) for t, w in columns if t != dropped]
            others = sum(width + 2 for _, width in columns if width) + 2 + 2  # fix padding, bar
            if self.size.width - others >= MIN_FIX_WIDTH:
                break
        fix_width = max(MIN_FIX_WIDTH, self.size.width - others)
        table.clear(columns=True)
        for title, width in columns:
            table.add_column(title, width=width or fix_width, key=title)
        for record, score in self._rows:
            audit = self._stats.get(record.memory_id)
            cells = {  # the record's own text as Text: a DataTable reads a str as markup
                "id": data_cell(record.short_id),
                "score": score,
                "error type": data_cell(clip(record.error_type, 14)),
                "fix": data_cell(
                    clip(self._marks(record) + " ".join(record.fix_description.split()), fix_width)
                ),
                "files": data_cell(clip(", ".join(record.file_paths), 14)),
                "stored at": f"{record.timestamp:%m-%d %H:%M}",
                "scope": data_cell(clip_middle(record.scope, 8)),  # demo scopes differ at the end
                "sent": str(audit.delivered if audit else 0),
                "green": f"{audit.sessions_green}/{audit.sessions_ended}"
                if audit and audit.sessions_ended
                else "-",
            }
            table.add_row(*(cells[title] for title, _ in columns), key=record.memory_id)
        if selected is not None and selected.memory_id in self.records:
            table.move_cursor(row=table.get_row_index(selected.memory_id))
        else:
            table.move_cursor(row=0, column=0)

    def _marks(self, record: MemoryRecord) -> str:
        """What the fix cell says first: possibly stale; imported, not confirmed by a test
        run (as `memory list` says `IMPORTED, not tested`)."""
        stale = "⚠ stale · " if record.memory_id in self.stale else ""
        return stale + (IMPORTED_MARK if record.provenance == "imported" else "")

    def on_resize(self, event: events.Resize) -> None:
        self.show_title()
        if self._rows:
            self._draw_rows()
            self.show_selected()

    def on_key(self, event: events.Key) -> None:
        """Every printable key but `/`, typed anywhere but the search box or the open scope
        list, goes into the search: no key is lost, and no letter acts on a record. (The
        search box takes its own keys: one that still comes here with it focused was on its
        way to the table when the focus moved.)"""
        search = self.query_one("#search", Input)
        picker = self.picker
        if (
            not event.is_printable
            or event.character is None
            or event.key == "slash"
            or (picker is not None and picker.expanded)
        ):
            return
        event.stop()
        event.prevent_default()
        self.set_focus(search)
        search.insert_text_at_cursor(event.character)

    @on(DataTable.RowHighlighted, "#records")
    def show_selected(self) -> None:
        record = self.selected()
        shown = record.memory_id if record else None
        if shown != self._shown:  # another record: read it from its top
            self._shown = shown
            self.query_one("#detail-scroll").scroll_home(animate=False)
        self.query_one(RecordView).show(
            record, stale=record is not None and record.memory_id in self.stale
        )
        found = self._found.get(shown or "")
        why = ""
        if found is not None:
            from memory.retrieval.explain import explanation  # loaded by now: a search has run

            width = self.size.width - 2  # the line's padding
            why = explanation(self.query_text, found, compact=True, width=width)
        label = self.query_one("#why", Label)
        label.update(data_cell(why))
        label.display = bool(why)

    @on(DataTable.RowSelected, "#records")
    def open_selected(self) -> None:
        record = self.selected()
        if record is None:
            self.notify("no record to open", markup=False)
        else:
            self.app.push_screen(RecordModal(record))

    def selected(self) -> MemoryRecord | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return self.records.get(str(key.value))

    def action_close(self) -> None:
        self.app.leave_browser(self)  # type: ignore[attr-defined]  # the AstraApp

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_reload(self) -> None:
        self.load(self.query_text, keep=True)

    def action_delete(self) -> None:
        record = self.selected()
        if record is None:
            self.notify("no record selected")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.delete_record(record.memory_id)

        self.app.push_screen(
            ConfirmModal(
                f"Delete record {record.short_id}?",
                f"{record.error_type}: {record.fix_description}\n"
                f"files: {', '.join(record.file_paths)}\nThis cannot be undone.",
            ),
            callback=answered,
        )

    def action_clear_stale(self) -> None:
        record = self.selected()
        if record is None or record.memory_id not in self.stale:
            self.notify("the selected record is not marked possibly stale")
            return
        self.clear_stale(record)

    @work(group="browser-unstale", exit_on_error=False, description="clear stale mark")
    async def clear_stale(self, record: MemoryRecord) -> None:
        from memory.service import clear_stale  # loaded by now: the backend is open

        backend = await self.memory.when_ready()
        if backend is None:
            return
        await clear_stale(backend.store, record)
        self.notify(f"{record.short_id}: no longer marked possibly stale")
        self.load(self.query_text, keep=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Pending shows while proposals wait: at 80 columns the footer has room for it or
        for Help, not for both."""
        return self.pending > 0 if action == "review_pending" else True

    def action_review_pending(self) -> None:
        """The MCP clients' proposals; back here, the list and the pending count again."""
        self.app.push_screen(
            PendingScreen(self.memory), callback=lambda _: self.load(self.query_text, keep=True)
        )

    def action_export(self) -> None:
        """Ask where (a new file in the exports folder by default), then export there."""

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.export_to(path)

        self.app.push_screen(ExportModal(default_export_path(self.memory.data_dir)), chosen)

    @work(group="browser-export", exit_on_error=False, description="export")
    async def export_to(self, path: Path) -> None:
        """Every record as JSONL, as `memory export` writes it."""
        backend = await self.memory.when_ready()
        if backend is None:
            return
        try:
            path, count = await backend.export(path)
        except (OSError, ValueError) as exc:  # ValueError: the target is the database
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.exported = path
        # the path alone on its line, in a toast wide enough for it: never cut mid-name
        self.notify(str(path), title=f"Exported {count} record(s) to", timeout=10)

    @work(group="browser-delete", exit_on_error=False, description="delete")
    async def delete_record(self, memory_id: str) -> None:
        backend = await self.memory.when_ready()
        if backend is None:
            return
        deleted = await backend.store.delete(memory_id)
        self.notify(f"deleted {memory_id[:8]}" if deleted else f"{memory_id[:8]} was already gone")
        self.load(self.query_text, keep=True)
