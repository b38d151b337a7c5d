"""The session's gates as pure functions: each returns why a step is refused, or None.

Memory must reach the model before it edits or concludes, and only the exact outcome of
the latest passing test run may be stored, of a fix this session made: red before its first
edit, green after its last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

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


# Red before green: a stored fix must be one this session made, not one it found done.

Step = Literal["red", "green", "edit"]  # a failing run, a passing run, an applied edit

NOTHING_TO_FIX = (
    "the tests already pass before any edit: there is nothing to fix. Do not edit; say so in "
    "your final answer. Nothing will be stored"
)


def red_green_refusal(history: Sequence[Step]) -> str | None:
    """Why store_fix_memory is refused, given this session's runs and edits in order: it
    needs a failing run before the first edit, an edit, and a passing run after the last."""
    if "edit" not in history:
        return (
            "no edit in this session: only a fix this session made is stored. Run the tests, "
            "edit the code, and run them again"
        )
    first_edit = history.index("edit")
    if "red" not in history[:first_edit]:
        return (
            "no failing run_tests before your first edit: this session never saw the tests "
            "fail, so it cannot show that its edits fixed them; nothing can be stored"
        )
    last_edit = len(history) - 1 - history[::-1].index("edit")
    runs_after = history[last_edit + 1 :]
    if not runs_after or runs_after[-1] != "green":
        return "no passing run_tests after your last edit; run_tests and store only when it passes"
    return None


def nothing_to_fix(history: Sequence[Step]) -> bool:
    """True when the session's first step was a passing test run: green before any edit."""
    return bool(history) and history[0] == "green"
