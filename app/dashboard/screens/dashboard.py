"""The dashboard: turns | memory matches | test output | budget, under a session header.

It renders the session's events (SessionEvent messages); the app owns the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.containers import Grid, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer

from app.dashboard.screens.messages import SessionEvent, TestOutputBatch
from memory.text import counts_text
from widgets import BudgetPanel, MatchesLog, PaneLog, SessionHeader, TestOutputLog, TurnsLog
from widgets.pane_log import pane_theme

if TYPE_CHECKING:
    from agent import events as ev


def _tests(report: ev.SessionReport) -> str:
    return counts_text(report.tests.passed, report.tests.failed) if report.tests else "none"


def report_line(report: ev.SessionReport) -> str:
    return (
        f"{report.status} (exit {report.exit_code}) · {report.model_requests} requests · "
        f"{report.tool_calls} tool calls · tests {_tests(report)} · "
        f"stored {len(report.stored_memory_ids)} · ${report.cost_usd:.4f}"
    )


def report_figures(report: ev.SessionReport) -> tuple[str, ...]:
    """The report line said shorter, the figures that matter first: how it ended, the
    tests, what was stored, the cost; then the requests and calls."""
    return (
        f"{report.status} (exit {report.exit_code})",
        f"tests {_tests(report)}",
        f"stored {len(report.stored_memory_ids)}",
        f"${report.cost_usd:.4f}",
        f"{report.model_requests} req",
        f"{report.tool_calls} calls",
    )


BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # (from this width on, the screen's class)


class DashboardScreen(Screen):
    """Four panes; at narrow widths they stack in one column (dashboard.tcss)."""

    CSS_PATH = "dashboard.tcss"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = BREAKPOINTS

    def __init__(self, memory_url: str = "-", width: int = 0) -> None:
        # made with the class the first resize gives it at this width: added by the resize,
        # it would style every widget of the screen a second time before the first frame
        _, width_class = max(b for b in BREAKPOINTS if b[0] <= width)
        super().__init__(id="dashboard", classes=width_class)
        self.memory_url = memory_url  # the header's before a session names it (idle)
        self.status = "starting…"  # the app's latest, also the browser's title until it lists
        self._lines: TestOutputBatch | None = None

    def compose(self) -> ComposeResult:
        yield SessionHeader(id="session-header")
        with VerticalScroll(id="panes-scroll"), Grid(id="panes"):
            yield TurnsLog(id="turns", classes="pane")
            yield MatchesLog(id="matches", classes="pane")
            yield TestOutputLog(id="tests", classes="pane")
            yield BudgetPanel(id="budget", classes="pane")
        yield Footer()

    def on_mount(self) -> None:
        titles = {
            "turns": "Turns",
            "matches": "Memory matches",
            "tests": "Test output",
            "budget": "Budget",
        }
        for pane_id, title in titles.items():
            self.query_one(f"#{pane_id}").border_title = title
        header = self.query_one(SessionHeader)
        header.status, header.memory_url = self.status, self.memory_url
        self.app.console.push_theme(pane_theme(self.app.theme_variables))
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)

    def on_unmount(self) -> None:
        self.app.console.pop_theme()

    def _theme_changed(self, _theme: object) -> None:
        self.app.console.pop_theme()
        self.app.console.push_theme(pane_theme(self.app.theme_variables))
        for pane in self.query(PaneLog):
            pane.redraw()

    def set_status(self, status: str) -> None:
        """Show status in the header; kept until mount if the screen is not shown yet."""
        self.status = status
        if self.is_mounted and not self._panes_gone():
            self.query_one(SessionHeader).status = status

    def forward(self, event: ev.Event) -> None:
        """Post a session event to this screen; call it on the app's loop. Test-output
        lines join the batch still waiting to be handled, and any other event closes it,
        so the order holds and a flood costs a few messages, not one a line."""
        if event.event != "test_output":
            self._lines = None
            self.post_message(SessionEvent(event))
            return
        if self._lines is None or self._lines.taken:
            self._lines = TestOutputBatch()
            self.post_message(self._lines)
        self._lines.events.append(event)

    def on_test_output_batch(self, message: TestOutputBatch) -> None:
        message.taken = True
        if self._panes_gone():
            return
        pane = self.query_one(TestOutputLog)
        for event in message.events:
            pane.add_line(event)

    def _panes_gone(self) -> bool:
        """The app is closing with a session still running: the panes are gone, and what
        the session says now has nowhere to go (its transcript and summary still get it)."""
        return not self.query(SessionHeader)

    def on_session_event(self, message: SessionEvent) -> None:
        if self._panes_gone():
            return
        event = message.event
        header = self.query_one(SessionHeader)
        turns = self.query_one(TurnsLog)
        match event.event:  # by kind: the event classes load after the first frame
            case "session_started":
                header.session = event.session_id
                header.model = event.model
                header.mode = event.mode
                header.workspace = event.workspace
                header.memory_url = event.memory_url
                header.status = f"running · scope {event.scope}"
                turns.add_text(f"── session {event.session_id} ──")
                self.query_one(MatchesLog).add_session(event.session_id)
            case "model_requested":
                header.status = f"waiting for the model (turn {event.turn})"
                self.query_one(BudgetPanel).show_request(event)
            case "model_responded":
                turns.add_turn(event)
            case "request_retried":
                turns.add_retry(event)
            case "tool_called":
                header.status = f"turn {event.turn}: {event.name}"
            case "tool_answered" if event.refused:
                turns.add_refusal(event)
            case "memory_matched":
                self.query_one(MatchesLog).add_search(event)
            case "test_finished":
                self.query_one(TestOutputLog).finish(event)
            case "budget_changed":
                self.query_one(BudgetPanel).show(event)
            case "store_proposed":
                header.status = "waiting for the operator: store this fix?"
            case "store_decided":
                verdict = "stored" if event.approved else "rejected, nothing written"
                turns.add_text(f"  memory write {event.memory_id[:8]}: {verdict}")
            case "note":
                turns.add_note(event)
            case "report":
                header.status = report_line(event)
                header.figures = report_figures(event)  # drawn while the line does not fit
                turns.add_text(f"── {report_line(event)} ──")
