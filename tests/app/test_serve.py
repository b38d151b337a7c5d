"""`astra-memory serve` in a real browser: Debian's headless Chromium, driven by Playwright,
opens the served dashboard (idle, on the memory browser), reads a record seeded into a
temporary store, and opens it with `enter`. The terminal draws on a canvas, so the test
reads what the dashboard sends it: the websocket's frames, escape codes removed.

Playwright's own browser download cannot run here; the test uses /usr/bin/chromium, which
the README's test command installs. Without it the test skips, except in CI (CI=true),
where a missing browser is a failure."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiohttp import WSServerHandshakeError, web
from aiohttp.test_utils import TestClient, TestServer

from app.cli.commands.serve import guard, served_hosts
from app.cli.main import main
from tests.app.pilot_helpers import seed

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ESCAPES = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>78]|\x1b\][^\x07]*\x07")
FIX = "strip each origin before splitting the list"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def need_chromium() -> None:
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI") == "true":
        pytest.fail(
            f"CI needs Debian's chromium at {CHROMIUM}: the README's test command installs it"
        )
    pytest.skip("no chromium on this machine (CI installs it and runs this test)")


def test_a_non_loopback_host_is_refused_without_allow_remote(capsys):
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--allow-remote" in err


def test_the_served_dashboard_shows_a_record_in_a_headless_browser(tmp_path):
    need_chromium()
    from playwright.sync_api import sync_playwright

    url = f"sqlite:///{tmp_path / 'memory.sqlite3'}"
    [memory_id] = asyncio.run(seed(url, [("origins list split wrong", "AssertionError", FIX)]))
    port = free_port()
    env = {
        **os.environ,
        "ASTRA_DATA_DIR": str(tmp_path / "data"),
        "ASTRA_MEMORY_URL": url,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    frames: list[str] = []
    try:
        wait_for_port(port, server)
        printed = server.stdout.readline()  # its first line: the URL, with the run's token
        [served] = re.findall(r"http://\S+", printed)
        assert served.startswith(f"http://127.0.0.1:{port}/?token=")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))
                page.goto(f"http://127.0.0.1:{port}/")
                assert "carries this run's token" in page.content()  # no token, no dashboard
                page.goto(served)

                def drawn() -> str:
                    text = "".join(
                        f if isinstance(f, str) else f.decode("utf-8", "replace") for f in frames
                    )
                    return ESCAPES.sub("", text)

                wait_until(page, lambda: "strip each origin" in drawn(), "the record's fix")
                assert "Memory record" not in drawn() and memory_id[:8] in drawn()
                page.mouse.click(700, 450)  # focus the terminal
                page.keyboard.press("Enter")  # open the record whole
                title = f"Memory record {memory_id[:8]}"
                wait_until(page, lambda: title in drawn(), "the record's modal")
            finally:
                browser.close()
    finally:
        server.terminate()
        _, err = server.communicate(timeout=20)
    assert "Traceback" not in err, err


async def guarded(host: str = "127.0.0.1") -> tuple[TestClient, int]:
    """A real loopback server with serve's guard in front of a page and a websocket."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="the dashboard")

    async def socket_(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.close()
        return ws

    port = free_port()
    app = web.Application(middlewares=[guard(TOKEN, served_hosts(host, port))])
    app.add_routes([web.get("/", page), web.get("/ws", socket_)])
    client = TestClient(TestServer(app, host=host, port=port))
    await client.start_server()
    return client, port


TOKEN = "t0ken-of-this-run"


async def test_the_guard_wants_the_token_then_its_cookie():
    client, _ = await guarded()
    try:
        refused = await client.get("/")
        first = await client.get("/", params={"token": TOKEN})
        cookie = first.cookies["astra_token"]
        again = await client.get("/")  # the client keeps the cookie
        wrong = await client.get("/", params={"token": "guess"}, cookies={"astra_token": "x"})
        assert (refused.status, first.status, again.status) == (403, 200, 200)
        assert "carries this run's token" in await refused.text()
        assert cookie.value == TOKEN and cookie["httponly"] and cookie["samesite"] == "Strict"
        assert wrong.status == 403
    finally:
        await client.close()


async def test_the_guard_refuses_another_host_and_another_sites_websocket():
    client, port = await guarded()
    try:
        token = {"token": TOKEN}
        rebound = await client.get("/", params=token, headers={"Host": f"evil.example:{port}"})
        ours = {"Origin": f"http://127.0.0.1:{port}"}
        assert (await client.get("/", params=token, headers=ours)).status == 200
        evil = {"Origin": "https://attacker.example"}
        with pytest.raises(WSServerHandshakeError) as refused:
            await client.ws_connect("/ws", headers=evil)
        socket_ok = await client.ws_connect("/ws", headers=ours)
        await socket_ok.close()
        assert rebound.status == 403 and refused.value.status == 403
    finally:
        await client.close()


def test_only_a_loopback_server_pins_its_host():
    assert served_hosts("127.0.0.1", 8000) == {
        "127.0.0.1:8000",
        "localhost:8000",
        "[::1]:8000",
    }
    assert served_hosts("0.0.0.0", 8000) is None  # --allow-remote: the token still guards


def wait_for_port(port: int, server: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, server.stderr.read().decode()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"serve did not listen on {port} within {timeout} s")


def wait_until(page, condition, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"the browser never showed {what}"
        page.wait_for_timeout(200)
