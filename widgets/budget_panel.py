"""The Budget pane: session spend, ledger total, limits and turns used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

if TYPE_CHECKING:
    from agent import events as ev


def money(value: float | None) -> str:
    return "none" if value is None else f"${value:.4f}"


class BudgetPanel(Static):
    """Shows the latest BudgetChanged event; `text` is what it shows, for tests."""

    def __init__(self, **kwargs) -> None:
        super().__init__("no requests yet", **kwargs)
        self.text = "no requests yet"

    def show(self, event: ev.BudgetChanged) -> None:
        self.text = "\n".join(
            [
                f"session spend  {money(event.session_cost_usd)}",
                f"session limit  {money(event.session_limit_usd)}",
                f"ledger total   {money(event.ledger_total_usd)}",
                f"total limit    {money(event.total_limit_usd)}",
                f"turns          {event.turns_used} of {event.max_turns}",
                f"tokens         {event.input_tokens} in / {event.output_tokens} out",
            ]
        )
        self.update(self.text)
