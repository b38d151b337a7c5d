"""The commands' Rich consoles: on a terminal they wrap to its width; piped, they do not
wrap or crop at all (Rich would at 80 columns, mid-word), so `grep` and files see whole
lines and whole tables.

Whatever a command prints, a control character in it is shown, not obeyed, and a URL's
password is masked (memory.records.shown, mask_url_passwords): records, model text and
server messages are data, and a command that forgets so cannot let them through.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console
from rich.rule import Rule
from rich.segment import Segment
from rich.text import Text

from memory.text import mask_url_passwords, shown

PIPED_WIDTH = 100_000  # wider than any line we print: tables and cropped lines stay whole
PIPED_RULE_WIDTH = 80


class DataConsole(Console):
    """Sanitises the text of every segment just before it is written. Rich's own control
    segments (cursor moves) and the styles' escape codes are made after this, so they stay."""

    def __init__(self, *, piped: bool, **kwargs: object) -> None:
        super().__init__(**kwargs, soft_wrap=piped, width=PIPED_WIDTH if piped else None)
        self.piped = piped

    def render_str(self, text: str, **kwargs: object) -> Text:
        """Shown before Rich reads it: Rich would drop BEL, BS, VT, FF and CR unseen."""
        return super().render_str(shown(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment
            if segment.control
            else Segment(mask_url_passwords(shown(segment.text)), segment.style)
            for segment in buffer
        )

    def rule(self, title: str = "", **kwargs: object) -> None:
        """Piped, a rule is 80 columns, not the width that keeps tables whole."""
        if not self.piped:
            return super().rule(title, **kwargs)
        self.print(Rule(title, **kwargs), width=PIPED_RULE_WIDTH)


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return DataConsole(stderr=stderr, highlight=False, emoji=False, piped=not stream.isatty())
