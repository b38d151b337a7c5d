"""The session's gates as pure functions: each returns why a step is refused, or None.

Memory must reach the model before it edits or concludes, and only the exact outcome of
the latest passing test run may be stored.
"""

from __future__ import annotations

NO_SEARCH_YET = (
    "search_codebase_memory first: no memory search result has reached you yet. Search with "
    "the observed failure output before any diagnosis or edit"
)


def edit_refusal(memory_delivered: bool) -> str | None:
    return None if memory_delivered else NO_SEARCH_YET


def final_answer_refusal(memory_delivered: bool) -> str | None:
    return None if memory_delivered else "a final answer came before any memory search result"


def store_refusal(memory_delivered: bool, outcome: str, latest_confirmed: str | None) -> str | None:
    if not memory_delivered:
        return NO_SEARCH_YET
    if latest_confirmed is None:
        return (
            "no passing test run confirms the current code; run_tests after your last edit "
            "and store only when it passes"
        )
    if outcome != latest_confirmed:
        return (
            "outcome must be the exact confirmed_outcome of the latest passing run_tests: "
            f"{latest_confirmed!r}"
        )
    return None
