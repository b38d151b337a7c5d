"""Where to export the memory: a path, prefilled with a new file in the exports folder."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label


class ExportModal(ModalScreen[Path | None]):
    """Answers the path (enter or Export), or None (escape or Cancel)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel", id="export.cancel"),
    ]

    def __init__(self, default: Path) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Export every record as JSONL to", classes="dialog-title")
            yield Input(str(self.default), id="export-path")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", variant="primary", id="export")
                yield Button("Cancel", id="cancel")
        yield Footer()

    def on_input_submitted(self) -> None:
        self._answer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export":
            self._answer()
        else:
            self.dismiss(None)

    def _answer(self) -> None:
        text = self.query_one(Input).value.strip()
        if text:
            self.dismiss(Path(text).expanduser())
