"""The memory browser's header counts the fixes MCP clients proposed that wait for the
operator, read from the pending queue in a worker."""

from __future__ import annotations

from textual.widgets import Label

from app.dashboard.screens.memory_browser import MemoryBrowserScreen
from memory.service import MemoryService
from memory.stores.pending import PendingQueue, queue_path
from memory.stores.protocol import open_store
from tests.app.pilot_helpers import SIZE, idle_app, seed, wait_for, wait_for_screen
from tests.fakes import HashEmbedder


async def propose(url: str, data_dir, count: int) -> None:
    store = open_store(url)
    queue = PendingQueue(queue_path(url, data_dir))
    try:
        service = MemoryService(store, HashEmbedder(), session_id="mcp", scope="tui")
        for i in range(count):
            await queue.add(
                service.propose(
                    client="claude-code",
                    symptom=f"E   KeyError: 'k{i}'",
                    fix_description="Read the key with a default.",
                    error_type="KeyError",
                    file_paths=["app/config.py"],
                    diff="--- a/app/config.py\n+++ b/app/config.py\n",
                    test_command="pytest -q",
                    test_output="3 passed",
                )
            )
    finally:
        await queue.close()
        await store.close()


async def test_the_browser_header_counts_pending_proposals(settings, url):
    await seed(url, [("KeyError: 'port'", "KeyError", "port default")])
    app = idle_app(settings, url)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, MemoryBrowserScreen)
        browser = app.screen
        title = browser.query_one("#browser-title", Label)
        await wait_for(pilot, lambda: str(title.render()).endswith("· 1 record"))
        assert "proposed over MCP" not in str(title.render())  # none: the header as before
        await propose(url, settings.data_dir, 2)
        browser.load()
        await wait_for(pilot, lambda: "2 proposed over MCP" in str(title.render()))
