"""all-MiniLM-L6-v2's forward pass through onnxruntime: texts in, the reference's vectors out.

The run-time half of the ONNX embedder, importing onnxruntime, tokenizers and numpy only.
The pipeline repeats sentence-transformers': strip each text, tokenize with truncation at
the model's max_seq_length and padding to the longest of the batch, mean pooling over the
attention mask, L2 normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedding.model_files import max_seq_length
from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_DIMENSION

BATCH_SIZE = 32  # as sentence-transformers' encode; texts sorted by length, so little padding
# Measured on this 2-core machine shared with other work (bench/bench_embedder.py --sweep,
# figures in docs/benchmarks.md): the export's graph is optimised once (onnx_export), and a
# session that loads it without optimising starts 35-65 ms sooner than one optimising the
# raw graph, with the same vectors and speed. Two intra-op threads beat one (query
# p50 12 vs 21 ms, 256 long texts 9.3 vs 13.4 s) when the machine is quiet, but their
# spinning workers collapsed to 50-90 ms a query under load; with spinning off they keep
# most of the gain (16 ms, 12.5 s) and yield the core when others need it.
INTRA_OP_THREADS = 2
ALLOW_SPINNING = "0"
GRAPH_OPTIMIZATION = "ORT_DISABLE_ALL"  # the export is optimised already (onnx_export)


class OnnxEncoder:
    """One ONNX file and its tokenizer: texts in, normalized float32 vectors out."""

    def __init__(self, onnx_file: Path, model_path: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=max_seq_length(model_path))
        pad_id = tokenizer.token_to_id("[PAD]") or 0
        tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = INTRA_OP_THREADS
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", ALLOW_SPINNING)
        options.graph_optimization_level = getattr(
            onnxruntime.GraphOptimizationLevel, GRAPH_OPTIMIZATION
        )
        self._tokenizer = tokenizer
        try:
            self._session = onnxruntime.InferenceSession(
                str(onnx_file), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime's own errors (a missing or cut weights file)
            raise EmbedderUnavailableError(f"{onnx_file.name} does not load: {exc}") from exc
        self._inputs = {i.name for i in self._session.get_inputs()}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        stripped = [str(text).strip() for text in texts]
        order = sorted(range(len(stripped)), key=lambda i: -len(stripped[i]))
        vectors = np.zeros((len(stripped), EMBEDDING_DIMENSION), dtype=np.float32)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start : start + BATCH_SIZE]
            vectors[batch] = self._encode_batch([stripped[i] for i in batch])
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
