"""What becomes of a passing session's changes: apply them to the checkout, keep the
branch, or discard them. Headless runs answer with `--on-success`."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static


class FinishModal(ModalScreen[str]):
    """Answers "apply", "branch" or "discard"; escape keeps the branch, which loses nothing."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "choose('apply')", "Apply", id="finish.apply"),
        Binding("b,escape", "choose('branch')", "Keep branch", id="finish.branch"),
        Binding("d", "choose('discard')", "Discard", id="finish.discard"),
    ]

    def __init__(self, source: str, branch: str) -> None:
        super().__init__()
        self.source = source
        self.branch = branch

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("The tests pass. Keep the session's changes?", classes="dialog-title")
            yield Static(
                f"apply        the diff to {self.source}\n"
                f"keep branch  {self.branch}, for you to merge\n"
                "discard      the changes and the branch",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply", variant="success", id="apply")
                yield Button("Keep branch", variant="primary", id="branch")
                yield Button("Discard", variant="error", id="discard")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#branch", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id))

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)
