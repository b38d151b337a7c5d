"""Cutting a text to a width, where the part that tells it apart survives: the end of a
fix, the middle of an id or a scope (its kind and its unique tail kept), the start of a
path (its end kept). The screens' tables and pickers have fixed widths; none of these
wraps."""

from __future__ import annotations


def clip(text: str, width: int) -> str:
    """Its start, an ellipsis for the rest."""
    return text if len(text) <= width else text[: width - 1] + "…"


def clip_middle(text: str, width: int) -> str:
    """Its start and, longer, its end: `demo-20…0ab6d-alpha`."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def clip_start(text: str, width: int) -> str:
    """Its end, where one workspace path differs from the next: `…0ab6d/alpha`."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]
