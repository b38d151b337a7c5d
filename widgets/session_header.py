"""The header line: session, model, mode, workspace, memory store and the session's status."""

from __future__ import annotations

from textual.markup import escape as _escape
from textual.reactive import reactive
from textual.widgets import Static


class SessionHeader(Static):
    """Two lines: who and where (from SessionStarted), then what is happening now."""

    session = reactive("no session", layout=True)
    model = reactive("-")
    mode = reactive("-")
    workspace = reactive("-")
    memory_url = reactive("-")
    status = reactive("idle")

    def render(self) -> str:
        from memory.records import mask_url_passwords, shown  # pydantic: not the first frame

        def escape(text: str) -> str:
            return _escape(mask_url_passwords(shown(text)))

        return (
            f"[b]{escape(self.session)}[/] · {escape(self.model)} · [b]{escape(self.mode)}[/] · "
            f"workspace {escape(self.workspace)} · memory {escape(self.memory_url)}\n"
            f"[$text-accent]{escape(self.status)}[/]"
        )
