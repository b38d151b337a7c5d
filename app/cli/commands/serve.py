"""`astra-memory serve`: the dashboard in a web browser through textual-serve.

Each browser tab starts its own `astra-memory tui` process. textual-serve's `serve()` runs
its own event loop; the CLI's commands already run in one, so its aiohttp application is
run here on ours. Anyone who reaches the port drives the dashboard with this user's key and
memory, so only a loopback address is served unless --allow-remote says otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import shlex
import sys

from aiohttp import web
from textual_serve.server import Server

from app.config.settings import Settings
from app.errors import CommandError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def tab_command(memory: str | None) -> list[str]:
    """The dashboard one browser tab runs. `-P`: the current folder, often a project with its
    own `app/`, is not put on sys.path ahead of our packages."""
    command = [sys.executable, "-P", "-m", "app.cli.main", "tui"]
    return [*command, "--memory", memory] if memory else command


async def serve(args: argparse.Namespace, settings: Settings) -> int:
    if not is_loopback(args.host) and not args.allow_remote:
        raise CommandError(
            f"--host {args.host} is not a loopback address; anyone who reaches it drives "
            "the dashboard with your key and memory (add --allow-remote to mean it)",
            2,
        )
    server = Server(
        shlex.join(tab_command(args.memory)), host=args.host, port=args.port, title="astra-memory"
    )
    runner = web.AppRunner(await server._make_app())  # serve() would start a second loop
    await runner.setup()
    try:
        await web.TCPSite(runner, args.host, args.port).start()
    except OSError as exc:
        await runner.cleanup()
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}", 2) from exc
    try:
        await asyncio.Event().wait()  # until Ctrl+C
    finally:
        await runner.cleanup()
    return 0
