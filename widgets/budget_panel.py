"""The Budget pane: session spend, ledger total, limits as bars, the worst case of each
request as priced before it is sent, and turns used of the maximum; folded into a summary
of two lines where the pane is too short for all its rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

if TYPE_CHECKING:
    from agent import events as ev

BAR_WIDTH = 12


def money(value: float | None) -> str:
    return "none" if value is None else f"${value:.4f}"


def _share(used: float, limit: float) -> tuple[float, str]:
    """How much of `limit` is used, and the theme's success/warning/error colour for it."""
    fraction = min(max(used / limit, 0.0), 1.0) if limit > 0 else 1.0
    return fraction, "$success" if fraction < 0.6 else "$warning" if fraction < 0.9 else "$error"


def bar(used: float, limit: float | None) -> str:
    """A bar of how much of `limit` is used, in the theme's success/warning/error colour;
    nothing without a limit (the row already says "none")."""
    if limit is None:
        return ""
    fraction, colour = _share(used, limit)
    filled = round(fraction * BAR_WIDTH)
    return f"[{colour}]{'█' * filled}[/][dim]{'░' * (BAR_WIDTH - filled)}[/] {100 * fraction:.0f}%"


def of(label: str, used: float, limit: float | None, shown=money) -> str:
    """`label $used of $limit 62%` (the share coloured as the bar), or `, no limit`."""
    if limit is None:
        return f"{label} {shown(used)}, no limit"
    fraction, colour = _share(used, limit)
    return f"{label} {shown(used)} of {shown(limit)} [{colour}]{100 * fraction:.0f}%[/]"


class BudgetPanel(Static):
    """Shows the latest BudgetChanged and ModelRequested."""

    def __init__(self, **kwargs) -> None:
        super().__init__("no requests yet", **kwargs)
        self._budget: ev.BudgetChanged | None = None
        self._request: ev.ModelRequested | None = None

    def show(self, event: ev.BudgetChanged) -> None:
        self._budget = event
        self._draw()

    def show_request(self, event: ev.ModelRequested) -> None:
        self._request = event
        self._draw()

    def on_resize(self) -> None:
        self._draw()  # the full rows or the summary, whichever the new height holds

    def _summary(self, b: ev.BudgetChanged) -> str:
        """The rows in two lines, for a pane too short for them (a narrow terminal)."""
        if self._request is None:
            worst = ""
        elif self._request.worst_case_usd is None:
            worst = " · request: rehearsal, no cost"
        else:
            worst = f" · request worst ≤ {money(self._request.worst_case_usd)}"
        return (
            f"{of('session', b.session_cost_usd, b.session_limit_usd)} · "
            f"{of('total', b.ledger_total_usd, b.total_limit_usd)}\n"
            f"{of('turns', b.turns_used, b.max_turns, str)}{worst} · "
            f"tokens {b.input_tokens} in, {b.output_tokens} out"
        )

    def _draw(self) -> None:
        rows: list[tuple[str, str]] = []  # (plain, bar markup)
        if self._request is not None:
            worst = self._request.worst_case_usd
            rows.append(
                (
                    f"request worst  ≤ {money(worst)} (turn {self._request.turn})"
                    if worst is not None
                    else f"request worst  turn {self._request.turn}: rehearsal, no cost",
                    "",
                )
            )
        if (b := self._budget) is not None:
            rows += [
                (f"session spend  {money(b.session_cost_usd)}", ""),
                (
                    f"session limit  {money(b.session_limit_usd)}",
                    bar(b.session_cost_usd, b.session_limit_usd),
                ),
                (f"ledger total   {money(b.ledger_total_usd)}", ""),
                (
                    f"total limit    {money(b.total_limit_usd)}",
                    bar(b.ledger_total_usd, b.total_limit_usd),
                ),
                (f"turns          {b.turns_used} of {b.max_turns}", bar(b.turns_used, b.max_turns)),
                (f"tokens in      {b.input_tokens} ({b.cached_input_tokens} cached)", ""),
                (f"tokens out     {b.output_tokens} ({b.reasoning_tokens} reasoning)", ""),
            ]
        if self._budget is not None and self.content_size.height < len(rows):
            self.update(self._summary(self._budget))
            return
        self.update(
            "\n".join(f"{plain} {markup}" if markup else plain for plain, markup in rows)
            or "no requests yet"
        )
