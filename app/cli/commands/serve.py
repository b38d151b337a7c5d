"""`astra-memory serve`: the dashboard in a web browser through textual-serve.

Each browser tab starts its own `astra-memory tui` process. textual-serve's `serve()` runs
its own event loop; the CLI's commands already run in one, so its aiohttp application is
run here on ours. Anyone who reaches the port drives the dashboard with this user's key and
memory, so only a loopback address is served unless --allow-remote says otherwise, and
every request, websocket upgrades included, must pass `guard`: the run's random token (in
the printed URL, then a cookie), a `Host` this server answers to (a page on another
domain that resolves to 127.0.0.1 does not), and no `Origin` but this server's (another
site's page cannot open the websocket).
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import secrets
import shlex
import sys
from collections.abc import Awaitable, Callable

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


TOKEN_COOKIE = "astra_token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def served_hosts(host: str, port: int) -> set[str] | None:
    """The `Host` headers a loopback server answers to; None (any) for one bound elsewhere,
    which only --allow-remote allows and the token still guards."""
    if not is_loopback(host):
        return None
    return {f"{name}:{port}" for name in (host, "localhost", "127.0.0.1", "[::1]")}


def guard(token: str, hosts: set[str] | None) -> Callable[..., Awaitable[web.StreamResponse]]:
    """aiohttp middleware: 403 unless the request carries the token (`?token=`, which sets
    the cookie, or the cookie) to a host in `hosts`, from no other origin than its own."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if hosts is not None and host not in hosts:
            raise web.HTTPForbidden(text=f"astra-memory serve does not answer to Host {host!r}")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in (f"http://{host}", f"https://{host}"):
            raise web.HTTPForbidden(text=f"requests from {origin!r} are refused")
        given = request.query.get("token")
        if given is not None and secrets.compare_digest(given, token):
            response = await handler(request)
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
            return response
        if not secrets.compare_digest(request.cookies.get(TOKEN_COOKIE, ""), token):
            raise web.HTTPForbidden(
                text="open the URL astra-memory serve printed: it carries this run's token"
            )
        return await handler(request)

    return check


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
    token = secrets.token_urlsafe(24)
    app = await server._make_app()  # serve() would start a second loop
    app.middlewares.append(guard(token, served_hosts(args.host, args.port)))
    app.on_startup.remove(server.on_startup)  # its banner's URL lacks the token
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, args.host, args.port).start()
    except OSError as exc:
        await runner.cleanup()
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}", 2) from exc
    print(f"astra-memory serve: open {server.public_url}/?token={token} (Ctrl+C stops)", flush=True)
    try:
        await asyncio.Event().wait()  # until Ctrl+C
    finally:
        await runner.cleanup()
    return 0
