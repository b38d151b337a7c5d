"""The commands' Rich consoles: on a terminal they wrap to its width; piped, they do not
wrap at all (Rich would wrap at 80 columns, mid-word), so `grep` and files see whole lines."""

from __future__ import annotations

import sys

from rich.console import Console


def make_console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, soft_wrap=not stream.isatty())
