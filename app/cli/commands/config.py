"""`astra-memory config path|show|set`: where the config file is, what is in force and
where each value comes from, and changing one value."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from app.cli.arguments import is_utf8
from app.config.file import config_path, load_config, set_value
from app.config.settings import Settings
from app.config.store_url import resolve_memory_url
from app.console import make_console
from app.errors import CommandError
from memory.text import as_markup

console = make_console()


async def config(args: argparse.Namespace, settings: Settings) -> int:
    path = config_path()
    if args.action == "path":
        print(path)
        return 0
    if args.action == "set":
        if args.value is None and not args.unset:
            raise CommandError(f"config set {args.key} needs a value (or --unset)", 2)
        value = None if args.unset else checked_value(args.key, args.value)
        set_value(path, args.key, value)
        console.print(f"{args.key} {'removed' if args.unset else 'set'} in {path}", markup=False)
        return 0
    rows = in_force(settings)
    if args.json:
        print(json.dumps({"path": str(path), "values": rows}))
        return 0
    console.print(
        as_markup(f"config file: {path}" + ("" if path.exists() else " (not written yet)"))
    )
    for key, row in rows.items():  # values are the user's text, never Rich markup
        value, source = as_markup(str(row["value"])), as_markup(str(row["from"]))
        console.print(f"{key:<11} {value}  [dim]({source})[/]")
    return 0


def checked_value(key: str, value: str) -> str:
    """`value` as it is to be written, after what the file cannot check when it is read, as
    it is read before the dashboard's first frame: UTF-8 text with no control character (the
    file must stay readable), a memory URL a store can open (made exact, so every folder
    finds the same store), a theme Textual has. A CommandError (exit 2)."""
    if not is_utf8(value):  # argv's undecodable bytes arrive as lone surrogates
        raise CommandError(f"bad value for {key}: it holds bytes that are not UTF-8 text", 2)
    if any(character < " " or character == "\x7f" for character in value):
        raise CommandError(f"bad value for {key}: it holds a control character", 2)
    if key == "memory_url":
        from memory.errors import MemoryStoreError
        from memory.stores.protocol import sqlite_path_from_url
        from memory.stores.vectorai import vectorai_address

        try:
            value = resolve_memory_url(value)
            (sqlite_path_from_url if value.startswith("sqlite") else vectorai_address)(value)
        except (CommandError, MemoryStoreError) as exc:
            raise CommandError(f"bad value for memory_url: {exc}", 2) from None
    if key == "theme":
        from textual.theme import BUILTIN_THEMES  # the dashboard registers no others

        if value not in BUILTIN_THEMES:
            raise CommandError(
                f"bad value for theme: no theme {value!r} (known: {', '.join(BUILTIN_THEMES)})", 2
            )
    return value


def in_force(settings: Settings) -> dict[str, dict[str, object]]:
    """Each key's value and its source, flags aside (they apply to one run)."""
    kept = asdict(load_config(config_path()))
    rows: dict[str, dict[str, object]] = {}
    for key, default in (("theme", "textual-dark"), ("scope", "default"), ("budget_usd", None)):
        source = "default" if kept[key] is None else "config file"
        rows[key] = {"value": default if kept[key] is None else kept[key], "from": source}
    if settings.astra_memory_url:  # the environment's (main leaves the file out here)
        memory = {"value": settings.memory_url, "from": "environment ASTRA_MEMORY_URL"}
    elif kept["memory_url"]:
        try:
            memory = {"value": resolve_memory_url(kept["memory_url"]), "from": "config file"}
        except CommandError as exc:  # shown, not raised: `config show` is where to look
            memory = {"value": kept["memory_url"], "from": f"config file, unusable: {exc}"}
    else:
        memory = {"value": settings.memory_url, "from": "default: the data dir"}
    rows["memory_url"] = memory
    return rows
