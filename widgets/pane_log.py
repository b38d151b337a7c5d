"""A RichLog that batches its writes, keeps what it wrote, and re-wraps it on resize.

Rendering a line costs RichLog tens of microseconds, and a test run can stream thousands
a second, so lines are queued and written together once a frame, a bounded number at a
time so that no frame stalls the loop. RichLog wraps each line at the width it had when
written; the dashboard's panes change width at the CSS breakpoint and with the terminal,
so they draw their kept lines again when the width changes.

Markup names colours by role (`[pane.success]`); `pane_theme` maps the roles to the
Textual theme's text colours, so the panes read well in every theme. Textual's names for
them ("ansi_green" in the ANSI themes) are not Rich's, so each goes through Textual's own
colour parser first.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from rich.style import Style
from rich.text import Text
from rich.theme import Theme
from textual import events
from textual.color import Color, ColorParseError
from textual.content import Content

from memory.text import shown

# RichLog imports rich.pretty, which imports attrs (15 ms of a session's first frame) only
# to pretty-print attrs classes, which no pane writes: attrs looks absent while it loads.
_ATTRS_HIDDEN = sys.modules.setdefault("attr", None) is None
from textual.widgets import RichLog  # noqa: E402

if _ATTRS_HIDDEN:
    del sys.modules["attr"]

PANE_STYLES = {
    "pane.success": "text-success",
    "pane.warning": "text-warning",
    "pane.error": "text-error",
    "pane.accent": "text-accent",
    "pane.primary": "text-primary",
}


def pane_theme(variables: Mapping[str, str]) -> Theme:
    """Rich styles for the panes' markup, from a Textual theme's variables."""
    return Theme({name: _style(variables.get(var, "")) for name, var in PANE_STYLES.items()})


def _style(value: str) -> Style:
    """A Textual colour as a Rich style; the terminal's default for one it cannot parse."""
    try:
        return Style(color=Color.parse(value).rich_color)
    except ColorParseError:
        return Style()


def filled(template: str, **data: str) -> Content:
    """`template`'s markup with `data` put in as text, shown: no data reads as markup (escaping
    cannot say `[x` before a closing tag, or a trailing backslash)."""
    return Content.from_markup(template, **{name: shown(text) for name, text in data.items()})


def as_text(line: str | Text) -> Text:
    """A line as Rich Text: a string is markup (its data escaped by the caller); Text (e.g.
    another program's output) as is. Either way its control characters are shown, not
    obeyed: model text and test output never move the cursor or hide the next line."""
    if isinstance(line, str):  # shown first: Rich would silently drop \a \b \v \f \r
        return Text.from_markup(shown(line), emoji=False)  # data `:x:` stays as typed
    text = line.copy()
    text.plain = shown(text.plain)  # one character for one: the styles stay in place
    return text


class PaneLog(RichLog):
    """A log of lines (markup, or Text as is), drawn once a frame.

    `max_lines` bounds the lines kept (not RichLog's wrapped rows): past twice that, the
    oldest unpinned lines are dropped down to `max_lines` and the rest drawn again, so a
    flood is drawn about twice at most. Pinned lines are never dropped.
    """

    FLUSH_LINES = 100
    """The most lines one frame renders: their strips and the frame after them stay under
    the 50 ms the loop may stall (docs/benchmarks.md)."""

    def __init__(self, *, max_lines: int | None = None, **kwargs) -> None:
        super().__init__(wrap=True, markup=True, highlight=False, min_width=20, **kwargs)
        self.keep_lines = max_lines
        self._kept: list[tuple[str | Text, bool]] = []  # (line, pinned), drawn or not yet
        self._drawn = 0  # how many of _kept the RichLog holds
        self._flush_scheduled = False
        self._width = 0

    def put(self, line: str | Text, *, pinned: bool = False) -> None:
        """Queue a line; it is drawn after the next refresh."""
        self._kept.append((line, pinned))
        self._schedule_flush()

    def redraw(self) -> None:
        """Draw every kept line again, e.g. in a new theme's colours."""
        if self._drawn:
            self._redraw()
            self._schedule_flush()

    def on_resize(self, event: events.Resize) -> None:
        if self._drawn and event.size.width != self._width:
            self._redraw()
        self._width = event.size.width
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = self.call_after_refresh(self._flush)

    def _flush(self) -> None:
        """Write the lines not drawn yet, up to FLUSH_LINES of them, in one write."""
        self._flush_scheduled = False
        if not self._size_known:
            return  # on_resize flushes once the width is known
        if self.keep_lines is not None and len(self._kept) > 2 * self.keep_lines:
            self._redraw()
        batch = self._kept[self._drawn : self._drawn + self.FLUSH_LINES]
        if batch:
            self.write(Text("\n").join(as_text(line) for line, _ in batch))
            self._drawn += len(batch)
        if self._drawn < len(self._kept):
            self._schedule_flush()

    def _redraw(self) -> None:
        """Drop the oldest unpinned lines past max_lines; clear, to draw the rest again."""
        if self.keep_lines is not None:
            excess = len(self._kept) - self.keep_lines
            kept = []
            for line, pinned in self._kept:
                if excess > 0 and not pinned:
                    excess -= 1
                else:
                    kept.append((line, pinned))
            self._kept = kept
        self.clear()
        self._drawn = 0
