"""What a live session may spend: prices, a worst-case preflight, and a persistent ledger.

Before every paid request the guard prices its worst case — the context it carries plus
the largest answer it allows, all input at the full (uncached) rate — and refuses to send it if that
could cross the session's limit or the ledger's remaining total. After the response it
charges what `usage` says; when `usage` is missing or malformed, or the request's outcome is
unknown (a read timeout, a connection lost after sending), it charges the worst case.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from agent.supervisor import CostQuote
from agent.turns import Usage
from memory.records import utc_now

CHARS_PER_TOKEN_WORST = 3  # English and code run ~4 chars a token; 3 over-estimates on purpose
# An output cap sized to the budget is never lowered below this: a smaller one would cut
# most answers short, paying for a turn that cannot be used.
MIN_SIZED_OUTPUT_TOKENS = 2_000

# How a charge was priced: from `usage`, or at the preflight's worst case because the usage
# was missing, was malformed, or the request's outcome is unknown.
Basis = Literal["usage", "missing_usage", "malformed_usage", "unknown_outcome"]


@dataclass(frozen=True)
class LongContext:
    """A long-context rule: a request with more than `above_input_tokens` input tokens is
    billed at these multiples of the base rates, for all of its tokens."""

    above_input_tokens: int
    input_multiplier: float
    output_multiplier: float


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens. Cached input left unset is billed at the input rate,
    which never under-charges."""

    input_per_million: float
    output_per_million: float
    cached_input_per_million: float | None = None
    long_context: LongContext | None = None

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """`(input - cached) * input + cached * cached input + output * output`, per million,
        scaled by the long-context rule when the input crosses it."""
        cached = min(cached_input_tokens, input_tokens)
        cached_rate = self.cached_input_per_million
        if cached_rate is None:
            cached_rate = self.input_per_million
        input_cost = (input_tokens - cached) * self.input_per_million + cached * cached_rate
        output_cost = output_tokens * self.output_per_million
        rule = self.long_context
        if rule is not None and input_tokens > rule.above_input_tokens:
            input_cost *= rule.input_multiplier
            output_cost *= rule.output_multiplier
        return (input_cost + output_cost) / 1_000_000


PRICES: dict[str, Price] = {"gpt-6-astra": Price(10.0, 50.0, cached_input_per_million=1.0)}


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
            "ASTRA_PRICE_INPUT_PER_MILLION and ASTRA_PRICE_OUTPUT_PER_MILLION "
            "(and ASTRA_PRICE_CACHED_INPUT_PER_MILLION) to run it live"
        )
    return PRICES[model]


def estimate_tokens(payload: Any) -> int:
    """A deliberately high estimate of the tokens a payload's text will cost."""
    return len(json.dumps(payload, ensure_ascii=False)) // CHARS_PER_TOKEN_WORST + 1


@dataclass(frozen=True)
class Charge:
    """One ledger line: what a request cost, its tokens, and how it was priced. Tokens are 0
    when the charge is a worst case (`basis` other than "usage")."""

    cost_usd: float
    basis: Basis = "usage"
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    problem: str | None = None  # why the usage could not be billed as given

    @property
    def at_worst_case(self) -> bool:
        return self.basis != "usage"


TOKEN_FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")


class LedgerUnreadableError(BudgetExceededError):
    """The ledger holds lines it cannot count, so what the total budget leaves is unknown."""


@dataclass(frozen=True)
class LedgerLines:
    """The ledger as read: the lines that count, and "line N: why" for each that cannot."""

    rows: list[dict[str, Any]]
    refused: list[str]


# more than any one request can cost: two lines of 1e308 would sum to an infinite total
MAX_CHARGE_USD = 1_000_000


def _refusal(row: object) -> str | None:
    """Why a ledger line cannot be counted, or None. A cost that is missing, negative, NaN or
    infinite would make the total look smaller (or unreadable) than what was billed; one
    beyond any request's cost, an infinite sum of finite lines."""
    if not isinstance(row, dict):
        return "not a JSON object"
    cost = row.get("cost_usd")
    if not _amount(cost, (int, float)):
        return f"cost_usd {cost!r} is not a finite number of dollars, 0 or more"
    if cost > MAX_CHARGE_USD:
        return f"cost_usd {cost!r} is more than any one request can cost (${MAX_CHARGE_USD:,})"
    for name in TOKEN_FIELDS:
        value = row.get(name)
        if value is not None and not _amount(value, (int,)):
            return f"{name} {value!r} is not a whole number, 0 or more"
    if not isinstance(row.get("session_id", "?"), str):
        return "session_id is not text"
    return None


def _amount(value: object, kinds: tuple[type, ...]) -> bool:
    """A number of `kinds` (bool is not one), 0 or more, finite even as a float."""
    if not isinstance(value, kinds) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value) and value >= 0
    except OverflowError:  # an int too large for a float
        return False


class Ledger:
    """Every live charge, one JSON line each, in the data dir; the total survives sessions.

    A line: {"at", "session_id", "model", "input_tokens", "cached_input_tokens",
    "output_tokens", "reasoning_tokens", "cost_usd", "basis"} and "problem" when there was
    one. Lines written before cached and reasoning tokens were kept read as 0 of each, basis
    "usage". A line that cannot be counted is refused, never summed (see `read`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> LedgerLines:
        """Every line, each counted or refused with its number. Only a last line cut short
        (no newline: a write interrupted) is passed over, as it was never a whole charge."""
        if not self.path.exists():
            return LedgerLines([], [])
        rows: list[dict[str, Any]] = []
        refused: list[str] = []
        data = self.path.read_bytes()
        for number, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line.decode("utf-8"))
            except (ValueError, RecursionError):  # not UTF-8, not JSON, 5,000 digits, deep
                if not data.endswith(b"\n") and number == data.count(b"\n") + 1:
                    continue  # a torn last line from a killed process
                refused.append(f"line {number}: not JSON")
                continue
            why = _refusal(row)
            if why is None:
                rows.append(row)
            else:
                refused.append(f"line {number}: {why}")
        return LedgerLines(rows, refused)

    def charges(self) -> list[dict[str, Any]]:
        return self.read().rows

    def total(self) -> float:
        """The sum of the lines that count; refused lines are not in it."""
        return sum(float(row["cost_usd"]) for row in self.charges())

    def by_session(self) -> dict[str, dict[str, float]]:
        """Per session: requests, the four token counts, cost_usd, and `unknown`: requests
        whose outcome was unknown, charged at their worst case."""
        sessions: dict[str, dict[str, float]] = defaultdict(
            lambda: dict.fromkeys(("requests", *TOKEN_FIELDS, "cost_usd", "unknown"), 0)
        )
        for row in self.charges():
            entry = sessions[row.get("session_id", "?")]
            entry["requests"] += 1
            for name in TOKEN_FIELDS:
                entry[name] += row.get(name) or 0
            entry["cost_usd"] += float(row["cost_usd"])
            entry["unknown"] += row.get("basis") == "unknown_outcome"
        return dict(sessions)

    def unreadable(self, refused: list[str]) -> str:
        """Why no live session with a total limit may start: lines that cannot be counted
        may be money spent, so what the limit leaves is unknown."""
        return (
            f"the ledger {self.path} holds {len(refused)} line(s) that cannot be counted "
            f"({refused[0]}): the budget left is unknown until they are fixed or removed"
        )

    def record(self, session_id: str, model: str, charge: Charge) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fields = {name: value for name, value in asdict(charge).items() if value is not None}
        line = json.dumps(
            {"at": utc_now().isoformat(), "session_id": session_id, "model": model} | fields
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
        self._worst_tokens = 0  # input and output of the last worst case priced

    def worst_case(self, payload: dict[str, Any]) -> float:
        """The most this request can cost: all context in at the full input rate (no cache),
        the largest answer out."""
        input_tokens = self._input_tokens(payload)
        output_tokens = int(payload.get("max_output_tokens") or 0)
        self._worst_tokens = input_tokens + output_tokens
        return self.price.cost(input_tokens, output_tokens)

    def output_that_fits(self, payload: dict[str, Any]) -> int:
        """The largest output cap, up to the payload's own, whose worst case fits every
        limit; BudgetExceededError when what is left buys fewer than
        MIN_SIZED_OUTPUT_TOKENS (or the payload's cap, when that is smaller)."""
        cap = int(payload.get("max_output_tokens") or 0)
        left = self._left()
        if left is None:
            return cap
        input_tokens = self._input_tokens(payload)
        input_cost = self.price.cost(input_tokens, 0)
        per_token = (self.price.cost(input_tokens, 1_000_000) - input_cost) / 1_000_000
        fits = cap if per_token <= 0 else min(cap, max(int((left - input_cost) / per_token), 0))
        while fits > 0 and self.price.cost(input_tokens, fits) > left:  # float rounding
            fits -= 1
        if fits < min(cap, MIN_SIZED_OUTPUT_TOKENS):
            raise BudgetExceededError(
                f"the ${max(left, 0):.4f} left buys at most {fits} output tokens for the next "
                f"request (its ~{input_tokens} input tokens cost ${input_cost:.4f}), fewer than "
                f"the {min(cap, MIN_SIZED_OUTPUT_TOKENS)} a turn needs"
            )
        return fits

    def _input_tokens(self, payload: dict[str, Any]) -> int:
        """A chained request also carries what the server holds; an unchained one (the
        first, or any without storage) carries all of it in its payload."""
        held = self._context_tokens if payload.get("previous_response_id") else 0
        return held + estimate_tokens(payload)

    def _left(self) -> float | None:
        """What the tighter of the two limits leaves; None without either."""
        lefts = [self.remaining_total()]
        if self.session_limit_usd is not None:
            lefts.append(self.session_limit_usd - self.session_cost_usd)
        known = [left for left in lefts if left is not None]
        return min(known) if known else None

    def session_worst_case(self, first_payload: dict[str, Any], max_turns: int) -> float:
        """An upper bound for the whole session, before any limit: every turn's answer at its
        maximum and carried as context into every later turn (chained or resent)."""
        base = estimate_tokens(first_payload)
        answer = int(first_payload.get("max_output_tokens") or 0)
        return sum(self.price.cost(base + turn * answer, answer) for turn in range(max_turns))

    def quote(self, first_payload: dict[str, Any], max_turns: int, *, sized: bool) -> CostQuote:
        """What the operator approves before the first request, with the worst case's inputs
        and the limit that caps it; reads the ledger. With `sized`, each request's output
        cap is lowered to what the limits leave. BudgetExceededError when not even the first
        request fits: a quote is only shown for a session that can start."""
        cap = int(first_payload.get("max_output_tokens") or 0)
        first_output = self.output_that_fits(first_payload) if sized else cap
        self.preflight({**first_payload, "max_output_tokens": first_output})
        uncapped = self.session_worst_case(first_payload, max_turns)
        remaining = self.remaining_total()
        caps = [(uncapped, "capped by --max-turns x --max-output-tokens")]
        if self.session_limit_usd is not None:
            caps.append((self.session_limit_usd, "capped by --budget-usd"))
        if remaining is not None:
            caps.append((max(remaining, 0.0), "capped by ASTRA_BUDGET_USD"))
        worst, capped_by = min(caps, key=lambda cap: cap[0])
        return CostQuote(
            model=self.model,
            input_per_million_usd=self.price.input_per_million,
            cached_input_per_million_usd=self.price.cached_input_per_million,
            output_per_million_usd=self.price.output_per_million,
            max_turns=max_turns,
            max_output_tokens=cap,
            first_output_tokens=first_output,
            output_sized=sized,
            context_tokens=estimate_tokens(first_payload),
            uncapped_worst_case_usd=uncapped,
            session_worst_case_usd=worst,
            capped_by=capped_by,
            session_limit_usd=self.session_limit_usd,
            total_limit_usd=self.total_limit_usd,
            remaining_total_usd=remaining,
        )

    def remaining_total(self) -> float | None:
        """What ASTRA_BUDGET_USD leaves, from a fresh read of the ledger (other sessions
        write to it too). LedgerUnreadableError when the ledger holds lines it cannot count:
        they may be money spent, and must not count as money left."""
        lines = self.ledger.read()
        self.ledger_total_usd = sum(float(row["cost_usd"]) for row in lines.rows)
        if self.total_limit_usd is None:
            return None
        if lines.refused:
            raise LedgerUnreadableError(self.ledger.unreadable(lines.refused))
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

    def charge_response(
        self, usage: Usage | None, worst_case: float, *, problem: str | None = None
    ) -> Charge:
        """Record a response's cost from its parsed `usage`. Without usage, or with usage that
        could not be billed (`problem`, from agent/turns.py), the worst case its preflight
        priced is charged, so the limits still hold and nothing is under-recorded."""
        if problem is not None:
            return self._book(Charge(worst_case, "malformed_usage", problem=problem))
        if usage is None:
            return self._book(Charge(worst_case, "missing_usage"))
        cost = self.price.cost(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        self._context_tokens = usage.input_tokens + usage.output_tokens
        return self._book(Charge(cost, "usage", **asdict(usage)))

    def charge_unknown(self, worst_case: float) -> Charge:
        """Record a request whose outcome is unknown (sent, then a timeout or a lost
        connection): the server may have run and billed it, so it costs its worst case."""
        return self._book(
            Charge(
                worst_case,
                "unknown_outcome",
                problem="the request was sent and its outcome is unknown",
            )
        )

    def _book(self, charge: Charge) -> Charge:
        if charge.at_worst_case:
            self._context_tokens = self._worst_tokens  # an upper bound of what it holds now
        self.session_cost_usd += charge.cost_usd
        self.ledger_total_usd += charge.cost_usd
        self.ledger.record(self.session_id, self.model, charge)
        return charge
