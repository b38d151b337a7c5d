"""Turning text into all-MiniLM-L6-v2 vectors: the `Embedder` protocol (`embedder`), the ONNX
path (`onnx_embedder`, `onnx_encoder`, `onnx_export`), the torch reference (`torch_embedder`),
the model in a child process (`process`) and the installed files (`model_files`).

Imports nothing of ours but `memory.errors`; torch loads only in `torch_embedder` and
`onnx_export`, onnxruntime only in `onnx_encoder`.
"""
