"""Short texts for the screens' fixed widths and the shell's lines: a text cut to a width
where the part that tells it apart survives (the start of a fix, the middle of an id or a
scope, the end of a path), and a count with its noun."""

from __future__ import annotations


def clip(text: str, width: int) -> str:
    """Its start, an ellipsis for the rest."""
    return text if len(text) <= width else text[: width - 1] + "…"


def counted(number: int | None, one: str, many: str) -> str:
    """`1 match`, `2 matches`, `? turns` (not known)."""
    return f"{'?' if number is None else number} {one if number == 1 else many}"


def clip_middle(text: str, width: int) -> str:
    """Its start and, longer, its end: `demo-20…0ab6d-alpha`."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def clip_start(text: str, width: int) -> str:
    """Its end, where one workspace path differs from the next: `…0ab6d/alpha`."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1 :]
