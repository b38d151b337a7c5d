"""A memory URL as the user gave it, made exact: a relative `sqlite:///` path is resolved
against the current folder (and shown so), and its folder must already exist;
`sqlite:///:memory:` is refused, not taken as a file named `:memory:`. Only the
default store, inside the data dir, has its folder made for it (by the store)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from app.errors import CommandError

SQLITE = "sqlite:///"


def resolve_memory_url(url: str) -> str:
    """`url` with a relative or `~` SQLite path made absolute; other URLs as they are.
    A scheme no store serves, or a SQLite path whose folder does not exist, is a
    CommandError (exit 2)."""
    text = url.removeprefix(SQLITE)
    if (urlsplit(url).scheme if "://" in url else "") not in ("sqlite", "vectorai"):
        raise CommandError(  # open_store (memory/stores/protocol.py) says it later, heavier
            f"unsupported memory URL {url!r}: expected sqlite:///PATH or vectorai://HOST:PORT", 2
        )
    if not url.startswith(SQLITE) or not text or text.endswith("/"):
        return url  # malformed SQLite, or a server: the store says which
    if text == ":memory:" or text.startswith("file::memory:"):
        raise CommandError(
            f"{url} is not supported: memory must outlive the process; name a file, e.g. "
            "sqlite:///memory.sqlite3",
            2,
        )
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    path = path.resolve()
    if not path.parent.is_dir():
        raise CommandError(
            f"the folder for the memory store {path} does not exist: create it, or choose "
            "another path",
            2,
        )
    return f"{SQLITE}{path}"
