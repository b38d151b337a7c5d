"""The operator's review of the fixes MCP clients proposed, opened from the memory browser:
the pending queue, the highlighted proposal as `memory confirm` shows it (the record it
would become with its diff and test evidence, the nearest records), and keys to confirm it
(after the store confirmation's question) or reject it.

The queue and the store are read and written in workers, through the backend; what a
review shows and what a decision writes is memory/review.py's, as for the CLI. A proposal
another process decided meanwhile is one line in a notification, and leaves the list.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar, Protocol

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Label, Static

from app.dashboard.screens.browsing import BrowsingScreen
from app.dashboard.screens.confirm_modal import ConfirmModal
from app.dashboard.screens.proposal_modal import ProposalModal
from app.text_fit import clip
from memory.text import shown
from widgets import RecordView, data_cell

if TYPE_CHECKING:
    from app.sessions.backend import DashboardBackend
    from memory.records import Proposal
    from memory.review import Review


class ProposalAccess(Protocol):
    """What the review needs of the app (the browser's `MemoryAccess` is one): the backend
    once open, and whether the embedding model, which finds the nearest records, is loaded."""

    startup_error: str | None
    ready: asyncio.Event

    async def when_ready(self, *, search: bool = False) -> DashboardBackend | None: ...


# (title, width) of each column but the symptom, which takes the width left. Each column
# also takes 2 cells of padding.
COLUMNS = [
    ("id", 8),
    ("age", 4),
    ("client", 14),
    ("error type", 14),
    ("symptom", 0),
    ("flags", 9),
]
MIN_SYMPTOM_WIDTH = 20
POLL_S = 5.0  # MCP clients propose while the operator reviews
OUTPUT_LINES = 12  # of the test output the client reported
DROPPED_WHEN_NARROW = ("client",)  # the detail below still names it
FLAGGED = "⚑ flagged"  # instruction-like text: `memory pending` says FLAGGED
NOTHING_WAITS = (
    "Nothing waits for review: no MCP client has proposed a fix that is still pending. "
    "Fixes proposed with propose_fix appear here."
)


def symptom_line(symptom: str) -> str:
    """The symptom on one line; of a Python traceback, its last line: the exception."""
    lines = [line.strip() for line in symptom.splitlines() if line.strip()]
    if lines and lines[0].startswith("Traceback (most recent call last)"):
        return lines[-1]
    return " ".join(symptom.split())


def age(then: datetime, now: datetime) -> str:
    """How long ago, in its largest unit: `45s`, `12m`, `3h`, `2d`."""
    seconds = max(int((now - then).total_seconds()), 0)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


class PendingScreen(BrowsingScreen):
    CSS_PATH = "memory_browser.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Back", id="pending.back"),
        Binding("c", "confirm", "Confirm", id="pending.confirm"),
        Binding("x", "reject", "Reject", id="pending.reject"),
        Binding("r", "reload", "Reload", id="pending.reload", show=False),  # polled anyway
    ]

    def __init__(self, memory: ProposalAccess) -> None:
        super().__init__()  # no id: a second review may open over a browser kept below
        self.memory = memory
        self.proposals: dict[str, Proposal] = {}  # the pending ones listed, by id
        self.reviews: dict[str, Review] = {}  # those whose nearest records have been read
        self.problems: dict[str, str] = {}  # why a listed proposal has no review
        self.loaded: int | None = None  # proposals listed, once the queue was read

    def compose(self) -> ComposeResult:
        yield Label("Proposed fixes · loading…", id="pending-title")
        with Vertical(id="pending-body"):
            yield DataTable(id="proposals", cursor_type="row", zebra_stripes=True)
            yield Static(NOTHING_WAITS, id="pending-empty")
            with VerticalScroll(id="pending-detail-scroll"):
                yield Static(id="pending-source")
                yield RecordView(id="pending-record")
                yield Static(id="pending-output")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.load()
        self.set_interval(POLL_S, self.load)

    def show_title(self, what: str | None = None) -> None:
        if what is None:
            waiting = "proposal waits" if self.loaded == 1 else "proposals wait"
            what = f"{self.loaded} {waiting} for your yes or no" if self.loaded else "none pending"
        for title in self.query("#pending-title").results(Label):  # none once the app closes
            title.update(data_cell(f"Proposed fixes · {what}"))

    @work(exclusive=True, group="pending", exit_on_error=False, description="pending proposals")
    async def load(self) -> None:
        """Read the queue; the cursor stays on the proposal it was on while that one waits."""
        backend = await self.memory.when_ready()
        if backend is None:
            self.show_title(f"the memory is not available: {self.memory.startup_error}")
            return
        proposals = await backend.pending_proposals()
        self.proposals = {p.proposal_id: p for p in proposals}
        self.reviews = {k: v for k, v in self.reviews.items() if k in self.proposals}
        self.loaded = len(proposals)
        self.show_title()
        self.query_one("#pending-empty").display = not proposals
        self.query_one(DataTable).display = bool(proposals)
        self.query_one("#pending-detail-scroll").display = bool(proposals)
        self._draw_rows()
        self.show_selected()

    def _draw_rows(self) -> None:
        """The table at the screen's width: the symptom takes what the others leave."""
        table = self.query_one(DataTable)
        selected = self.selected()
        columns = list(COLUMNS)
        for dropped in (None, *DROPPED_WHEN_NARROW):
            columns = [(t, w) for t, w in columns if t != dropped]
            others = sum(width + 2 for _, width in columns if width) + 2 + 2  # its padding, bar
            if self.size.width - others >= MIN_SYMPTOM_WIDTH:
                break
        symptom_width = max(MIN_SYMPTOM_WIDTH, self.size.width - others)
        now = datetime.now(UTC)
        table.clear(columns=True)
        for title, width in columns:
            table.add_column(title, width=width or symptom_width, key=title)
        for p in self.proposals.values():
            cells = {  # the client's text as Text: a DataTable reads a str as markup
                "id": data_cell(p.short_id),
                "age": age(p.proposed_at, now),
                "client": data_cell(clip(p.client, 14)),
                "error type": data_cell(clip(p.error_type, 14)),
                "symptom": data_cell(clip(symptom_line(p.symptom), symptom_width)),
                "flags": FLAGGED if p.flags else "",
            }
            table.add_row(*(cells[title] for title, _ in columns), key=p.proposal_id)
        if selected is not None and selected.proposal_id in self.proposals:
            table.move_cursor(row=table.get_row_index(selected.proposal_id))
        else:
            table.move_cursor(row=0, column=0)

    def on_resize(self, event: events.Resize) -> None:
        if self.proposals:
            self._draw_rows()

    def selected(self) -> Proposal | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return self.proposals.get(str(key.value))

    @on(DataTable.RowHighlighted, "#proposals")
    def show_selected(self) -> None:
        """The highlighted proposal: its review once read, else read it now."""
        proposal = self.selected()
        source = self.query_one("#pending-source", Static)
        view = self.query_one(RecordView)
        output = self.query_one("#pending-output", Static)
        seen = None if proposal is None else self.reviews.get(proposal.proposal_id)
        view.display = output.display = seen is not None
        if proposal is None:
            source.update("")
            return
        about = f"proposal {proposal.short_id} from the MCP client {proposal.client}"
        if seen is None:
            waiting = self.problems.get(proposal.proposal_id)
            if waiting is None:
                waiting = "finding the nearest records in memory…"
                if not self.memory.ready.is_set():
                    waiting = "the nearest records wait for the embedding model…"
                self.review(proposal)
            source.update(data_cell(f"{about} · {waiting}"))
            return
        again = ""
        if seen.duplicate_of is not None:
            again = f" · c confirms {seen.duplicate_of.short_id} again: no second record"
        source.update(data_cell(f"{about}; tests reported passing, not run here{again}"))
        if view.record is not seen.record:
            view.show(seen.record, seen.nearest)
            tail = "\n".join(proposal.test_output.splitlines()[-OUTPUT_LINES:])
            output.update(data_cell(f"test output the client reported (its end)\n{tail}"))
            self.query_one("#pending-detail-scroll").scroll_home(animate=False)

    @work(exclusive=True, group="pending-review", exit_on_error=False, description="review")
    async def review(self, proposal: Proposal) -> None:
        backend = await self.memory.when_ready(search=True)
        if backend is None:
            self.problems[proposal.proposal_id] = (
                f"no nearest records, no confirming: {self.memory.startup_error}"
            )
        else:
            from memory.review import ProposalDecidedError  # loaded by now: the backend is open

            try:
                self.reviews[proposal.proposal_id] = await backend.review_proposal(
                    proposal.proposal_id
                )
            except ProposalDecidedError as exc:
                self.decided_elsewhere(str(exc))
                return
        shown = self.selected()
        if shown is not None and shown.proposal_id == proposal.proposal_id:
            self.show_selected()

    def decided_elsewhere(self, line: str) -> None:
        """Another process (`memory confirm`, another dashboard) decided it first."""
        self.notify(line, title="Decided elsewhere", severity="warning", markup=False)
        self.load()

    def action_reload(self) -> None:
        self.load()

    def action_confirm(self) -> None:
        proposal = self.selected()
        if proposal is None:
            self.notify("no proposal selected")
            return
        seen = self.reviews.get(proposal.proposal_id)
        if seen is None:
            problem = self.problems.get(proposal.proposal_id)
            self.notify(problem or "still reading the nearest records; a moment", markup=False)
            return
        from agent.supervisor import StoreProposal  # loaded by now: a review was read

        def answered(yes: bool | None) -> None:
            if yes:
                self.confirm(seen)

        store = StoreProposal(seen.record, seen.nearest, seen.duplicate_of)
        self.app.push_screen(ProposalModal(store, proposal), callback=answered)

    @on(DataTable.RowSelected, "#proposals")
    def open_selected(self) -> None:
        self.action_confirm()

    def action_reject(self) -> None:
        proposal = self.selected()
        if proposal is None:
            self.notify("no proposal selected")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.reject(proposal)

        self.app.push_screen(
            ConfirmModal(
                f"Reject proposal {proposal.short_id}?",
                shown(
                    f"{proposal.error_type}: {proposal.fix_description}\n"
                    f"files: {', '.join(proposal.file_paths)}\n"
                    f"Nothing is written to memory; {proposal.client} sees it rejected."
                ),
                yes="Reject",
            ),
            callback=answered,
        )

    @work(group="pending-decide", exit_on_error=False, description="confirm proposal")
    async def confirm(self, seen: Review) -> None:
        from memory.review import ProposalDecidedError

        backend = await self.memory.when_ready(search=True)
        if backend is None:
            return
        try:
            # shielded: leaving the screen cancels its workers, not a write half done
            memory_id = await asyncio.shield(backend.confirm_proposal(seen))
        except ProposalDecidedError as exc:
            self.decided_elsewhere(str(exc))
            return
        again = " (confirmed again)" if seen.duplicate_of is not None else ""
        self.notify(f"confirmed {seen.proposal.short_id}: stored {memory_id[:8]}{again}")
        self.load()

    @work(group="pending-decide", exit_on_error=False, description="reject proposal")
    async def reject(self, proposal: Proposal) -> None:
        from memory.review import ProposalDecidedError

        backend = await self.memory.when_ready()
        if backend is None:
            return
        try:
            await asyncio.shield(backend.reject_proposal(proposal))
        except ProposalDecidedError as exc:
            self.decided_elsewhere(str(exc))
            return
        self.notify(f"rejected {proposal.short_id}; nothing written")
        self.load()
