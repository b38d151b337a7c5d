"""Edit approval as policy: the --edits value and where the session runs decide it once,
so the dashboard, a terminal and a headless run decide the same way.

`--edits ask` shows each apply_edit's diff to the operator before it lands; `auto` applies
it at once. Without the flag, a session with someone to ask (the dashboard, a terminal)
asks, and one without (a pipe, CI) edits on its own, as before.
"""

from __future__ import annotations

from typing import Literal

EditPolicy = Literal["ask", "auto"]
EDIT_POLICIES: tuple[EditPolicy, ...] = ("ask", "auto")


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


def operator_rejection(reason: str) -> str:
    """The tool output (after the loop's 'ERROR: ') for an edit the operator refused."""
    return f"operator rejected: {' '.join(reason.split()) or 'no reason given'}"
