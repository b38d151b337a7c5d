"""One memory record, whole: opened from a match in the Memory matches pane."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label

from widgets import RecordView

if TYPE_CHECKING:
    from memory.records import MemoryRecord


class RecordModal(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="record.close"),
    ]

    def __init__(self, record: MemoryRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(f"Memory record {self.record.short_id}", classes="dialog-title")
            with VerticalScroll(id="record-body"):
                yield RecordView(self.record, id="record")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close", variant="primary", id="close")
        yield Footer()

    def on_button_pressed(self) -> None:
        self.dismiss()
