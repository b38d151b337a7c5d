"""The operator's gates, as a protocol: approve live cost, approve each edit (`--edits ask`),
confirm each memory write.

The loop asks; a Supervisor answers. The dashboard answers with modals, the headless CLI
with flags or a terminal prompt. Nothing is sent or written while a question is open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from memory.records import MemoryRecord, MemorySearchResult


@dataclass(frozen=True)
class CostQuote:
    """What the operator approves before the first paid request: the worst case, its inputs
    (the first request's context estimate, max output tokens x turns, the prices) and the
    limit that caps it (`capped_by`)."""

    model: str
    input_per_million_usd: float
    cached_input_per_million_usd: float | None  # None: cached input billed as input
    output_per_million_usd: float
    max_turns: int
    max_output_tokens: int  # each request's cap
    first_output_tokens: int  # the first request's cap: lower when sized to the budget
    output_sized: bool  # each cap is lowered to what the limits leave (the default cap)
    context_tokens: int  # the first request's estimate; each turn adds its answer to it
    uncapped_worst_case_usd: float
    session_worst_case_usd: float  # the uncapped worst case, or the limit below it
    capped_by: str  # "capped by <the flag or variable that sets the limit>"
    session_limit_usd: float | None
    total_limit_usd: float | None
    remaining_total_usd: float | None
    test_command: str = ""  # the command the session's tests run with, and its source

    def sized_cap_text(self) -> str:
        """How a sized output cap works, for the operator."""
        return f"lowered to what the budget leaves: first {self.first_output_tokens}"


@dataclass(frozen=True)
class StoreProposal:
    """The exact record a store would write, beside what memory already holds; when the
    nearest record is a near-duplicate (`duplicate_of`), yes confirms that one again instead."""

    record: MemoryRecord
    nearest: list[MemorySearchResult]
    duplicate_of: MemoryRecord | None = None

    def confirm_again_text(self) -> str:
        """`<short id>, confirmed N times so far` (as `memory show` counts), or ""."""
        other = self.duplicate_of
        if other is None:
            return ""
        times = other.times_confirmed
        return f"{other.short_id}, confirmed {times} time{'' if times == 1 else 's'} so far"


@dataclass(frozen=True)
class EditProposal:
    """One apply_edit as the operator sees it before it lands; or, `by_tests`, a file the
    project's tests wrote, which leaves the session only if the operator approves it."""

    path: str
    diff: str
    by_tests: bool = False


@dataclass(frozen=True)
class EditDecision:
    """The operator's answer; a rejection's reason goes back to the model."""

    approved: bool
    reason: str = ""


class Supervisor(Protocol):
    async def approve_live_cost(self, quote: CostQuote) -> bool: ...

    async def approve_edit(self, proposal: EditProposal) -> EditDecision: ...

    async def confirm_store(self, proposal: StoreProposal) -> bool: ...
