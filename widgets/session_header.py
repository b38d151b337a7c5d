"""The header line: session, model, mode, workspace, memory store and the session's status."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from memory.text import mask_url_passwords
from widgets.pane_log import filled


def fit_figures(figures: tuple[str, ...], width: int) -> str:
    """As many figures as fit in `width`, in their order (the most important first)."""
    line = ""
    for figure in figures:
        joined = f"{line} · {figure}" if line else figure
        if len(joined) > width:
            break
        line = joined
    return line or (figures[0] if figures else "")


class SessionHeader(Static):
    """Two lines: who and where (from SessionStarted), then what is happening now.

    `figures` is the status said shorter, its figures in the order they matter; it is
    drawn instead of `status` while `status` does not fit, so a narrow terminal keeps the
    figures that count rather than the words that come first. A new `status` clears it."""

    session = reactive("no session", layout=True)
    model = reactive("-")
    mode = reactive("-")
    workspace = reactive("-")
    memory_url = reactive("-")
    status = reactive("idle")
    figures: reactive[tuple[str, ...]] = reactive(())

    def watch_status(self) -> None:
        self.figures = ()

    def render(self) -> Content:
        status = self.status
        if self.figures and len(status) > self.content_size.width:
            status = fit_figures(self.figures, self.content_size.width)
        if self.workspace == "-":  # before the first session: no model, mode or workspace yet
            template = "[b]$session[/] · memory $memory\n[$text-accent]$status[/]"
        else:
            template = (
                "[b]$session[/] · $model · [b]$mode[/] · workspace $workspace · memory $memory\n"
                "[$text-accent]$status[/]"
            )
        data = {
            "session": self.session,
            "model": self.model,
            "mode": self.mode,
            "workspace": self.workspace,
            "memory": self.memory_url,
            "status": status,
        }
        return filled(template, **{name: mask_url_passwords(text) for name, text in data.items()})
