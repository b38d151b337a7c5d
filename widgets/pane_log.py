"""A RichLog that keeps what it wrote and wraps it again when its width changes.

RichLog wraps each line at the width it had when written; the dashboard's panes change
width at the CSS breakpoint and with the terminal, so they re-render their history.
"""

from __future__ import annotations

from textual import events
from textual.widgets import RichLog


class PaneLog(RichLog):
    def __init__(self, *, max_lines: int | None = None, **kwargs) -> None:
        super().__init__(
            wrap=True, markup=True, highlight=False, min_width=20, max_lines=max_lines, **kwargs
        )
        self._written: list[str] = []
        self._width = 0

    def put(self, markup: str) -> None:
        self._written.append(markup)
        if self.max_lines is not None and len(self._written) > self.max_lines:
            del self._written[: -self.max_lines]
        self.write(markup)

    def on_resize(self, event: events.Resize) -> None:
        width = event.size.width
        if self._size_known and self._width and width != self._width:
            self.clear()
            for markup in self._written:
                self.write(markup)
        self._width = width
