"""all-MiniLM-L6-v2 through onnxruntime: the same vectors as sentence-transformers, in a second.

Importing torch and sentence-transformers takes seconds; this path imports onnxruntime,
tokenizers and numpy only (memory/embedding/onnx_encoder.py). The ONNX file is made once
from the installed weights by `memory.embedding.onnx_export` (first use, or `astra-memory
model prepare`) into the data dir, keyed by the weights' hash. When the export cannot be
made or fails its check, the embedder says so once and uses sentence-transformers.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory.embedding.model_files import onnx_path, resolve_model_path
from memory.embedding.onnx_encoder import OnnxEncoder
from memory.embedding.onnx_export import Progress, discard_export, export_model
from memory.embedding.torch_embedder import SentenceTransformerEmbedder
from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_DIMENSION, EMBEDDING_MODEL


def say_on_stderr(message: str) -> None:
    print(f"astra-memory: {message}", file=sys.stderr, flush=True)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 through onnxruntime, 384-d, normalized, CPU only. The export is
    made on the first load if missing; sentence-transformers takes over if it cannot be."""

    model_name = EMBEDDING_MODEL
    dimension = EMBEDDING_DIMENSION

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        model_path: str | os.PathLike[str] | None = None,
        progress: Progress = say_on_stderr,
    ) -> None:
        self._data_dir = Path(data_dir).expanduser()
        self._configured_path = model_path
        self._progress = progress
        self._encoder: OnnxEncoder | None = None
        self._fallback: SentenceTransformerEmbedder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None or self._fallback is not None

    @property
    def uses_onnx(self) -> bool:
        return self._encoder is not None

    def load(self) -> None:
        """Load the model once (exporting it first if need be); safe from any thread."""
        with self._lock:
            if self.loaded:
                return
            path = resolve_model_path(self._configured_path)
            try:
                target = onnx_path(path, self._data_dir)
                self._encoder = self._existing_export(target, path)
                if self._encoder is None:
                    export_model(path, target, self._progress)
                    self._encoder = OnnxEncoder(target, path)
            except (EmbedderUnavailableError, OSError, ImportError) as exc:
                self._progress(
                    f"warning: the ONNX embedder is unavailable ({exc}); using "
                    "sentence-transformers instead, which takes seconds longer to load"
                )
                fallback = SentenceTransformerEmbedder(path)
                fallback.load()
                self._fallback = fallback

    def _existing_export(self, target: Path, path: Path) -> OnnxEncoder | None:
        """The export already made, if it loads; one that does not (its weights file lost
        or cut short) is removed, to be made again."""
        if not target.is_file():
            return None
        try:
            return OnnxEncoder(target, path)
        except EmbedderUnavailableError as exc:
            self._progress(f"warning: {exc}; making the export again")
            discard_export(target)
            return None

    def embed_many_sync(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if self._fallback is not None:
            return self._fallback.embed_many_sync(texts)
        assert self._encoder is not None
        return self._encoder.encode(texts)  # onnxruntime sessions take concurrent runs

    async def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.to_thread(self.embed_many_sync, texts)

    async def embed(self, text: str) -> np.ndarray:
        return (await self.embed_many([text]))[0]
