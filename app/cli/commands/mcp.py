"""`astra-memory mcp`: serve the memory to MCP clients over stdio until stdin closes.

stdout carries the protocol alone; what the operator should know goes to stderr. The model
starts loading in a thread before the SDK is imported, so the two overlap and the first
search waits for neither.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from app.config.settings import Settings
from memory.stores.pending import PendingQueue, queue_path
from memory.stores.protocol import open_store


async def mcp(args: argparse.Namespace, settings: Settings) -> int:
    url = args.memory or settings.memory_url
    store = open_store(url)
    try:
        queue = PendingQueue(queue_path(url, settings.data_dir))
        try:
            embedder = settings.embedder()
            warm = asyncio.create_task(embedder.embed_many(["warm up"]))
            warm.add_done_callback(lambda task: task.cancelled() or task.exception())
            await asyncio.sleep(0)  # the load starts in its thread now
            from app.cli.mcp_server import MemoryTools, build_server  # the SDK: ours alone

            tools = MemoryTools(
                store,
                queue,
                embedder,
                scope=args.scope or "default",
                stale_after=settings.astra_stale_after,
                min_relevance=settings.astra_min_relevance,
            )
            print(
                f"astra-memory mcp: scope {tools.scope}, store {store.url}, proposals wait in "
                f"{queue.path} for `astra-memory memory pending`",
                file=sys.stderr,
                flush=True,
            )
            await build_server(tools).run_stdio_async()
            warm.cancel()
        finally:
            await queue.close()
    finally:
        await store.close()
    return 0
