"""What a live session may spend: prices, a worst-case preflight, and a persistent ledger.

Before every paid request the guard prices its worst case — the context it carries plus
the largest answer it allows — and refuses to send it if that could cross the session's
limit or the ledger's remaining total. After the response it charges what `usage` says.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.supervisor import CostQuote
from agent.turns import Usage
from memory.records import utc_now

CHARS_PER_TOKEN_WORST = 3  # English and code run ~4 chars a token; 3 over-estimates on purpose


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


PRICES: dict[str, Price] = {"gpt-6-astra": Price(10.0, 50.0)}


class BudgetExceededError(Exception):
    """A request was not sent because it could cross a spending limit."""


class UnknownPriceError(ValueError):
    """A live session was asked for a model whose price we do not know."""


def price_for(model: str, override: Price | None = None) -> Price:
    if override is not None:
        return override
    if model not in PRICES:
        raise UnknownPriceError(
            f"no known price for model {model!r} (known: {', '.join(PRICES)}); set "
            "ASTRA_PRICE_INPUT_PER_MILLION and ASTRA_PRICE_OUTPUT_PER_MILLION to run it live"
        )
    return PRICES[model]


def estimate_tokens(payload: Any) -> int:
    """A deliberately high estimate of the tokens a payload's text will cost."""
    return len(json.dumps(payload, ensure_ascii=False)) // CHARS_PER_TOKEN_WORST + 1


class Ledger:
    """Every live charge, one JSON line each, in the data dir; the total survives sessions."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def charges(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line from a killed process costs nothing
        return rows

    def total(self) -> float:
        return sum(float(row.get("cost_usd", 0.0)) for row in self.charges())

    def by_session(self) -> dict[str, dict[str, float]]:
        sessions: dict[str, dict[str, float]] = defaultdict(
            lambda: {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        )
        for row in self.charges():
            entry = sessions[row.get("session_id", "?")]
            entry["requests"] += 1
            entry["input_tokens"] += row.get("input_tokens", 0)
            entry["output_tokens"] += row.get("output_tokens", 0)
            entry["cost_usd"] += float(row.get("cost_usd", 0.0))
        return dict(sessions)

    def record(
        self, session_id: str, model: str, input_tokens: int, output_tokens: int, cost: float
    ) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(
            {
                "at": utc_now().isoformat(),
                "session_id": session_id,
                "model": model,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cost_usd": cost,
            }
        )
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, (line + "\n").encode())
        finally:
            os.close(descriptor)


class CostGuard:
    """The spending gate of one live session."""

    def __init__(
        self,
        price: Price,
        ledger: Ledger,
        *,
        session_id: str,
        model: str,
        session_limit_usd: float | None,
        total_limit_usd: float | None,
    ) -> None:
        self.price = price
        self.ledger = ledger
        self.session_id = session_id
        self.model = model
        self.session_limit_usd = session_limit_usd
        self.total_limit_usd = total_limit_usd
        self.session_cost_usd = 0.0
        self.ledger_total_usd = 0.0  # as read at the last preflight, plus charges since
        self._context_tokens = 0  # what the chained conversation already holds

    def worst_case(self, payload: dict[str, Any]) -> float:
        """The most this request can cost: all context in, the largest answer out."""
        input_tokens = self._context_tokens + estimate_tokens(payload)
        return self.price.cost(input_tokens, int(payload.get("max_output_tokens") or 0))

    def session_worst_case(self, first_payload: dict[str, Any], max_turns: int) -> float:
        """An upper bound for the whole session, as shown for approval: every turn's answer
        at its maximum and carried as context into every later turn, capped by the limit."""
        base = estimate_tokens(first_payload)
        answer = int(first_payload.get("max_output_tokens") or 0)
        total = sum(self.price.cost(base + turn * answer, answer) for turn in range(max_turns))
        return min(total, self.session_limit_usd) if self.session_limit_usd is not None else total

    def quote(self, first_payload: dict[str, Any], max_turns: int) -> CostQuote:
        """What the operator approves before the first request; reads the ledger."""
        return CostQuote(
            model=self.model,
            input_per_million_usd=self.price.input_per_million,
            output_per_million_usd=self.price.output_per_million,
            max_turns=max_turns,
            max_output_tokens=int(first_payload.get("max_output_tokens") or 0),
            session_worst_case_usd=self.session_worst_case(first_payload, max_turns),
            session_limit_usd=self.session_limit_usd,
            total_limit_usd=self.total_limit_usd,
            remaining_total_usd=self.remaining_total(),
        )

    def remaining_total(self) -> float | None:
        """What ASTRA_BUDGET_USD leaves, from a fresh read of the ledger (other sessions
        write to it too)."""
        self.ledger_total_usd = self.ledger.total()
        if self.total_limit_usd is None:
            return None
        return self.total_limit_usd - self.ledger_total_usd

    def preflight(self, payload: dict[str, Any]) -> float:
        """Raise BudgetExceededError unless the request's worst case fits every limit."""
        worst = self.worst_case(payload)
        if (
            self.session_limit_usd is not None
            and self.session_cost_usd + worst > self.session_limit_usd
        ):
            raise BudgetExceededError(
                f"the next request could cost up to ${worst:.4f}; the session has spent "
                f"${self.session_cost_usd:.4f} of its ${self.session_limit_usd:.2f} limit"
            )
        remaining = self.remaining_total()
        if remaining is not None and worst > remaining:
            raise BudgetExceededError(
                f"the next request could cost up to ${worst:.4f}; only ${max(remaining, 0):.4f} "
                f"of the ${self.total_limit_usd:.2f} total budget (ASTRA_BUDGET_USD) is left"
            )
        return worst

    def charge(self, usage: Usage | None, worst_case: float) -> float:
        """Record the actual cost of a response from its `usage`; a response without usage
        is charged the worst case its preflight priced, so the limits still hold."""
        input_tokens = usage.input_tokens if usage else 0
        output_tokens = usage.output_tokens if usage else 0
        cost = self.price.cost(input_tokens, output_tokens) if usage else worst_case
        self.session_cost_usd += cost
        self.ledger_total_usd += cost
        self._context_tokens = input_tokens + output_tokens
        self.ledger.record(self.session_id, self.model, input_tokens, output_tokens, cost)
        return cost
