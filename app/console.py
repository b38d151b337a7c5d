"""The commands' Rich consoles: on a terminal they wrap to its width; piped, they do not
wrap at all (Rich would wrap at 80 columns, mid-word), so `grep` and files see whole lines.

Whatever a command prints, a control character in it is shown, not obeyed, and a URL's
password is masked (memory.records.shown, mask_url_passwords): records, model text and
server messages are data, and a command that forgets so cannot let them through.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment


class DataConsole(Console):
    """Sanitises the text of every segment just before it is written. Rich's own control
    segments (cursor moves) and the styles' escape codes are made after this, so they stay."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        from memory.records import mask_url_passwords, shown  # pydantic: not before a frame

        return super()._render_buffer(
            segment
            if segment.control
            else Segment(mask_url_passwords(shown(segment.text)), segment.style)
            for segment in buffer
        )


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return DataConsole(stderr=stderr, highlight=False, soft_wrap=not stream.isatty())
