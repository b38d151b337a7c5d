"""The one-time export of all-MiniLM-L6-v2 to ONNX, checked against sentence-transformers.

Run by `OnnxEmbedder` on first use or by `astra-memory model prepare`; the only module on
the ONNX path that imports torch (and `onnx`, which torch's exporter needs to write the
file), and only once it runs, so importing it costs nothing. The graph is saved with
onnxruntime's optimisations applied, so that no session spends its start on them, and its
weights apart in a raw file, which onnxruntime maps instead of copying 90 MB out of the
graph (both shorten every cold `memory search`; docs/benchmarks.md). Both files are
written in a temporary folder, checked, then renamed into place, weights first: a
process killed part-way leaves no graph under the real name, only a temporary folder that a
later export removes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from memory.embedding.model_files import superseded_export
from memory.embedding.onnx_encoder import OnnxEncoder
from memory.embedding.torch_embedder import SentenceTransformerEmbedder
from memory.errors import EmbedderUnavailableError

Progress = Callable[[str], None]  # told each step, for a user waiting on the first export

OPSET = 17
MIN_COSINE = 0.9999
STALE_TEMPORARY_S = 3600.0
CHECK_TEXTS = [
    "",
    "AssertionError: expected 3 origins, got 1",
    "FAILED tests/test_config.py::test_parse_origins - ValueError: invalid literal for int()",
    "strip whitespace from comma separated origins before splitting them",
    "KeyError: 'timeout' in settings.load when the config file omits the section",
    "  leading and trailing spaces, UPPER case, ünïcödé and emoji 🚀 ",
    "word " * 400,  # past the 256-token limit: truncation must match
]


def export_model(model_path: Path, target: Path, progress: Progress) -> None:
    """Export the model at `model_path` to `target`, check it, and only then name it so.

    Raises EmbedderUnavailableError when the export cannot be made or fails its check.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temporaries(target.parent)
    workdir = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir()
    candidate = workdir / target.name
    started = time.monotonic()
    try:
        progress("preparing the embedding model, once: loading it with torch")
        reference = SentenceTransformerEmbedder(model_path)
        reference.load()
        progress(f"exporting it to ONNX ({target.name})")
        _export(reference, workdir / "traced.onnx")
        _optimized(workdir / "traced.onnx", candidate)
        progress("checking the export against sentence-transformers")
        worst = check_export(candidate, model_path, reference)
        os.replace(weights_path(candidate), weights_path(target))
        os.replace(candidate, target)
        with contextlib.suppress(OSError):  # 90 MB no session loads any more; best effort
            discard_export(superseded_export(target))
    except EmbedderUnavailableError:
        raise
    except Exception as exc:  # torch's exporter fails in many ways; all mean "no export"
        raise EmbedderUnavailableError(f"the ONNX export failed: {exc}") from exc
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    progress(f"embedding model ready in {time.monotonic() - started:.1f} s (cosine {worst:.6f})")


def check_export(
    onnx_file: Path, model_path: Path, reference: SentenceTransformerEmbedder
) -> float:
    """The lowest cosine between the export's vectors and the reference's on CHECK_TEXTS."""
    exported = OnnxEncoder(onnx_file, model_path).encode(CHECK_TEXTS)
    expected = reference.embed_many_sync(CHECK_TEXTS)
    worst = float(np.min(np.sum(exported * expected, axis=1)))
    if not worst >= MIN_COSINE:
        raise EmbedderUnavailableError(
            f"the ONNX export differs from sentence-transformers (cosine {worst:.6f} < "
            f"{MIN_COSINE}); it was not kept"
        )
    return worst


def _export(reference: SentenceTransformerEmbedder, destination: Path) -> None:
    import torch

    transformer = reference.transformer()

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = torch.ones((2, 8), dtype=torch.long)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes on shapes that the check covers
        torch.onnx.export(
            LastHiddenState().eval(),
            (sample, sample, torch.zeros_like(sample)),
            str(destination),
            dynamo=False,  # the TorchScript exporter: no onnxscript needed, dynamic shapes easy
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={
                name: {0: "batch", 1: "tokens"} for name in [*names, "last_hidden_state"]
            },
            opset_version=OPSET,
        )


def discard_export(graph: Path) -> None:
    """Remove an export, its weights file with it."""
    for path in (graph, weights_path(graph)):
        path.unlink(missing_ok=True)


def weights_path(graph: Path) -> Path:
    """The raw weights file beside an exported graph, named in the graph itself."""
    return graph.with_name(f"{graph.name}.data")


def _optimized(traced: Path, graph: Path) -> None:
    """Rewrite torch's one-file export as onnxruntime's optimised graph (matrix products
    with their scaling, and the bias with GELU, fused: the extended level; the level above
    adds layouts for this CPU alone) with its weights in `weights_path(graph)`. Sessions
    then load it without optimising (onnx_encoder.GRAPH_OPTIMIZATION): the same vectors at
    the same speed."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(graph)
    weights = "session.optimized_model_external_initializers"
    options.add_session_config_entry(f"{weights}_file_name", weights_path(graph).name)
    options.add_session_config_entry(f"{weights}_min_size_in_bytes", "1024")
    onnxruntime.InferenceSession(str(traced), options, providers=["CPUExecutionProvider"])
    traced.unlink()


def _remove_stale_temporaries(folder: Path) -> None:
    """Temporary folders (or files, from older versions) left by an export that was killed
    an hour or more ago."""
    now = time.time()
    for leftover in folder.glob("*.onnx.*.tmp"):
        try:
            if now - leftover.stat().st_mtime > STALE_TEMPORARY_S:
                if leftover.is_dir():
                    shutil.rmtree(leftover)
                else:
                    leftover.unlink()
        except OSError:
            pass
