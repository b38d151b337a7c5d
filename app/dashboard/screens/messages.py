"""Messages that cross screens: the session's events, delivered on the app's thread."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from agent import events as ev


class SessionEvent(Message, bubble=False):
    """One event from the agent's stream, for the dashboard to render. The dashboard posts
    it to itself; it does not bubble, so the app's queue never handles it a second time."""

    def __init__(self, event: ev.Event) -> None:
        super().__init__()
        self.event = event

    def can_replace(self, message: Message) -> bool:
        """Budget ticks merge: only the latest one still waiting needs drawing."""
        return (
            isinstance(message, SessionEvent)
            and self.event.event == "budget_changed"
            and message.event.event == "budget_changed"
        )


class TestOutputBatch(Message, bubble=False):
    """Test-output lines that arrived together, handled in one go: a run can print
    thousands of lines a second, and a message each would keep the loop busy."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.events: list[ev.TestOutput] = []
        self.taken = False  # set by its handler; later lines start a new batch
