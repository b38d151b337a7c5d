"""`astra-memory model prepare`: export and check the ONNX embedder once, ahead of first use."""

from __future__ import annotations

import argparse
import asyncio

from app.config.settings import Settings


async def model(args: argparse.Namespace, settings: Settings) -> int:
    """Export and check the ONNX embedder into the data dir; once made, say where it is."""
    from memory.embedding.model_files import onnx_path, resolve_model_path
    from memory.embedding.onnx_embedder import say_on_stderr
    from memory.embedding.onnx_export import export_model

    model_path = resolve_model_path(settings.astra_embedding_model_path)
    target = onnx_path(model_path, settings.data_dir)
    if target.is_file():
        say_on_stderr("the embedding model is already prepared")
    else:
        await asyncio.to_thread(export_model, model_path, target, say_on_stderr)
    print(target)
    return 0
