"""Approve live cost: the price, the limits and the worst case, before any paid request."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from app.dashboard.screens.yes_no_modal import Choice, YesNoModal

if TYPE_CHECKING:
    from agent.supervisor import CostQuote


def _money(value: float | None) -> str:
    return "none" if value is None else f"${value:.4f}"


def quote_text(quote: CostQuote) -> str:
    """The worst case and where it comes from: its inputs, and the limit that caps it."""
    cached = quote.cached_input_per_million_usd
    cached_price = "" if cached is None else f", ${cached:.2f} cached"
    tests = [f"tests            {quote.test_command}"] if quote.test_command else []
    sized = [f"output cap       {quote.sized_cap_text()}"] if quote.output_sized else []
    return "\n".join(
        [
            f"model            {quote.model}",
            f"prices           ${quote.input_per_million_usd:.2f} in{cached_price}, "
            f"${quote.output_per_million_usd:.2f} out per 1M",
            f"context          ~{quote.context_tokens} tokens, + each answer",
            f"turns            {quote.max_turns} x {quote.max_output_tokens} output tokens",
            *sized,
            f"uncapped         {_money(quote.uncapped_worst_case_usd)} (nothing cached)",
            f"worst case       {_money(quote.session_worst_case_usd)} ({quote.capped_by})",
            f"session limit    {_money(quote.session_limit_usd)}",
            f"total limit      {_money(quote.total_limit_usd)}",
            "budget remaining "
            + (
                "no total limit"
                if quote.remaining_total_usd is None
                else f"${quote.remaining_total_usd:.4f}"
            ),
            *tests,
        ]
    )


class CostModal(YesNoModal):
    """Answers True (approve) or False (cancel: the session ends, nothing is sent)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "answer(True)", "Approve", id="cost.approve"),
        Binding("escape", "answer(False)", "Cancel", id="cost.cancel"),
    ]

    def __init__(self, quote: CostQuote) -> None:
        super().__init__(
            "Approve live cost?",
            Choice("Approve", "warning", "approve"),
            Choice("Cancel", "primary", "cancel"),
        )
        self.quote = quote

    def compose_body(self) -> ComposeResult:
        yield Static(quote_text(self.quote), id="quote", markup=False)
