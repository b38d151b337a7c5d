"""Approve one edit (`--edits ask`): its diff, long lines wrapped, `y` to apply it, `n` and
a typed reason to refuse it. The reason goes back to the model as
`ERROR: operator rejected: <reason>`."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

if TYPE_CHECKING:
    from agent.supervisor import EditProposal


class EditModal(ModalScreen[tuple[bool, str]]):
    """Answers (True, "") to apply, or (False, reason) once a reason is typed. Plain data:
    the dashboard's first frame must not wait for the agent layer's types."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "apply", "Apply", id="edit.apply"),
        Binding("n,escape", "reject", "Reject…", id="edit.reject"),
    ]

    def __init__(self, proposal: EditProposal) -> None:
        super().__init__()
        self.proposal = proposal

    def compose(self) -> ComposeResult:
        from rich.syntax import Syntax  # pygments: 10 ms of every launch, were it imported

        with Vertical(classes="dialog wide"):
            title = f"Apply this edit to {self.proposal.path}?"
            if self.proposal.by_tests:
                title = f"The tests wrote {self.proposal.path}, no approved edit: keep it?"
            yield Label(title, classes="dialog-title")
            with VerticalScroll(id="edit-diff"):
                # long lines wrap: a change cut at the modal's edge cannot be judged
                diff = Syntax(self.proposal.diff or "(no change)", "diff", word_wrap=True)
                yield Static(diff, id="edit-diff-text")
            yield Input(placeholder="why not? (told to the model) — enter sends", id="reason")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply", variant="success", id="apply")
                yield Button("Reject", variant="error", id="reject")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#reason", Input).display = False
        self.query_one("#reject", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.action_reject()

    def action_apply(self) -> None:
        self.dismiss((True, ""))

    def action_reject(self) -> None:
        """Ask for the reason; the edit is refused once it is sent."""
        reason = self.query_one("#reason", Input)
        reason.display = True
        reason.focus()

    @on(Input.Submitted, "#reason")
    def reason_given(self, event: Input.Submitted) -> None:
        self.dismiss((False, event.value))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """While the reason is typed, y and n are letters of it."""
        return not (action in {"apply", "reject"} and self.query_one("#reason", Input).has_focus)
