"""The Test output pane: lines as they stream, then the run's pass/fail summary.

Each run's header and summary are pinned: when a later run floods the pane, its oldest
output lines go, and every earlier run stays in the pane as its header and summary.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.text import Text

from memory.text import as_markup, counts_text
from widgets.pane_log import PaneLog

if TYPE_CHECKING:
    from agent import events as ev


OUTCOME = re.compile(r"\b(PASSED|FAILED|ERROR|XPASS|XFAIL|SKIPPED|passed|failed|errors?)\b")
ROLE = {"PASSED": "pane.success", "passed": "pane.success", "XFAIL": "pane.warning"}
ROLE |= {"SKIPPED": "pane.warning", "XPASS": "pane.warning"}


def coloured(line: str) -> Text:
    """A pytest line, never read as markup, with its outcome words in their colours."""
    text = Text(line)
    for word in OUTCOME.finditer(line):
        text.stylize(ROLE.get(word[0], "pane.error"), word.start(), word.end())
    return text


class TestOutputLog(PaneLog):
    """A log of test runs: each run's header, its output lines, its summary."""

    __test__ = False

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=1000, **kwargs)
        self._run = 0

    def add_line(self, event: ev.TestOutput) -> None:
        if event.run != self._run:
            self._run = event.run
            self.put(f"[bold]── test run {event.run} ──[/]", pinned=True)
        self.put(coloured(event.line))

    def finish(self, event: ev.TestFinished) -> None:
        verdict = "PASSED" if event.exit_code == 0 else "FAILED"

        summary = (
            f"run {event.run} {verdict}: {counts_text(event.passed, event.failed)}, "
            f"exit {event.exit_code}{' (timed out)' if event.timed_out else ''} "
            f"in {event.duration_s:.1f}s"
        )
        colour = "pane.success" if event.exit_code == 0 else "pane.error"
        self.put(f"[bold][{colour}]{as_markup(summary)}[/][/]", pinned=True)
