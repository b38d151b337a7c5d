"""Edit approval as policy: a pure function from (policy, whether anyone can answer) to a
decision, so the dashboard, a terminal and a headless run decide the same way.

`--edits ask` shows each apply_edit's diff to the operator before it lands; `auto` applies
it at once. Without the flag, a session with someone to ask (the dashboard, a terminal)
asks, and one without (a pipe, CI) edits on its own, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

EditPolicy = Literal["ask", "auto"]
EDIT_POLICIES: tuple[EditPolicy, ...] = ("ask", "auto")


@dataclass(frozen=True)
class Approval:
    """What happens to one edit: applied at once, shown to the operator, or refused."""

    decision: Literal["approve", "ask", "reject"]
    reason: str | None = None  # why a rejection, for the model


def resolve_edit_policy(flag: str | None, *, operator_present: bool) -> EditPolicy:
    """The --edits value, or the default for where the session runs; a bad one is a
    ValueError of one line for the operator."""
    if flag is None:
        return "ask" if operator_present else "auto"
    if flag not in EDIT_POLICIES:
        raise ValueError(f"--edits must be ask or auto, not {flag!r}")
    if flag == "ask" and not operator_present:
        raise ValueError("--edits ask needs the dashboard or a terminal to ask the operator")
    return "ask" if flag == "ask" else "auto"


def edit_approval(policy: EditPolicy, *, operator_present: bool) -> Approval:
    """Whether one apply_edit is applied, asked about, or refused."""
    if policy == "auto":
        return Approval("approve")
    if operator_present:
        return Approval("ask")
    return Approval("reject", operator_rejection("no operator is present to approve edits"))


def operator_rejection(reason: str) -> str:
    """The tool output (after the loop's 'ERROR: ') for an edit the operator refused."""
    return f"operator rejected: {' '.join(reason.split()) or 'no reason given'}"
