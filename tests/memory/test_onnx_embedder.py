"""The ONNX embedder: the reference model's vectors and rankings, without torch at run time.

One export serves the module (about fifteen seconds with the torch reference); the CLI
tests run in subprocesses against that data dir, so they see what a user's shell sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import onnx
import pytest

from memory.embedding import onnx_export
from memory.embedding.model_files import onnx_path, resolve_model_path, superseded_export
from memory.embedding.onnx_embedder import OnnxEmbedder
from memory.embedding.torch_embedder import SentenceTransformerEmbedder
from memory.errors import EmbedderUnavailableError
from memory.records import EMBEDDING_MODEL
from memory.retrieval.signature import with_signature
from memory.transfer import parse_import

DATA = Path(__file__).with_name("data")
# one corpus of each kind of text: a project's test output, other projects' reported errors
CORPORA = [
    ("recurrence_heldout_fixes", "recurrence_heldout_queries"),
    ("fixes", "queries"),
]
HEAVY = ("torch", "sentence_transformers")
# What one other action alone needs (eval, import and export, progress bars, show's diffs):
# a cold `memory search` must not pay for it.
# detect-secrets: a search in a scope that holds records redacts nothing (MemoryService.find);
# instruction flags: only what is stored or proposed is flagged; pydantic: the records are
# dataclasses (memory.checked), as its models cost a cold search about 0.15 s
NOT_FOR_SEARCH = (
    *("memory.evaluation", "memory.transfer", "rich.progress", "rich.syntax", "rich.table"),
    *("detect_secrets", "memory.instruction_flags", "pydantic"),
)

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A data dir holding an export in the format before EXPORT_FORMAT, which the module's
    export replaces (test_model_prepare_says_where_the_checked_export_is)."""
    data_dir = tmp_path_factory.mktemp("onnx-data")
    old = superseded_export(onnx_path(resolve_model_path(), data_dir))
    old.write_bytes(b"an export made before the graph was optimised")
    onnx_export.weights_path(old).write_bytes(b"its weights")
    return data_dir


@pytest.fixture(scope="module")
def onnx_embedder(data_dir: Path) -> OnnxEmbedder:
    messages: list[str] = []
    embedder = OnnxEmbedder(data_dir, progress=messages.append)
    embedder.load()
    assert embedder.uses_onnx, messages
    assert any("checking the export" in m for m in messages)
    return embedder


def corpus_texts(fixes: str, queries: str) -> tuple[list[str], list[str]]:
    lines = (DATA / f"{fixes}.jsonl").read_text(encoding="utf-8").splitlines()
    records = parse_import(lines, default_scope="default", now=datetime.now(UTC))
    asked = [json.loads(line)["query"] for line in (DATA / f"{queries}.jsonl").open()]
    return [r.embedding_text() for r in records], [with_signature(q) for q in asked]


@pytest.mark.parametrize(("fixes", "queries"), CORPORA)
def test_every_vector_and_ranking_matches_sentence_transformers(
    fixes, queries, onnx_embedder, real_embedder
):
    documents, asked = corpus_texts(fixes, queries)
    ours = [onnx_embedder.embed_many_sync(texts) for texts in (documents, asked)]
    reference = [real_embedder.embed_many_sync(texts) for texts in (documents, asked)]
    for mine, theirs in zip(ours, reference, strict=True):
        assert mine.dtype == np.float32 and mine.shape == theirs.shape
        assert np.allclose(np.linalg.norm(mine, axis=1), 1.0, atol=1e-5)
        assert float(np.min(np.sum(mine * theirs, axis=1))) >= 0.9999
    our_ranks = np.argsort(-(ours[1] @ ours[0].T), axis=1, kind="stable")
    their_ranks = np.argsort(-(reference[1] @ reference[0].T), axis=1, kind="stable")
    assert (our_ranks[:, :10] == their_ranks[:, :10]).all()


def test_a_failed_check_keeps_no_file_and_falls_back_to_sentence_transformers(
    tmp_path, monkeypatch, real_embedder
):
    def differs(onnx_file, model_path, reference):
        assert onnx_file.is_file() and onnx_file.parent.name.endswith(".tmp")
        assert onnx_export.weights_path(onnx_file).is_file()
        raise EmbedderUnavailableError("the ONNX export differs from sentence-transformers")

    monkeypatch.setattr(onnx_export, "check_export", differs)
    messages: list[str] = []
    embedder = OnnxEmbedder(tmp_path, progress=messages.append)
    vectors = embedder.embed_many_sync(["KeyError: 'timeout'"])
    assert not embedder.uses_onnx
    assert "warning: the ONNX embedder is unavailable" in messages[-1]
    assert "differs" in messages[-1]
    assert list((tmp_path / "models").glob("*.onnx*")) == []
    assert np.allclose(vectors, real_embedder.embed_many_sync(["KeyError: 'timeout'"]), atol=1e-6)


def test_an_export_whose_weights_file_is_cut_short_is_made_again(
    tmp_path, monkeypatch, data_dir, onnx_embedder
):
    """A lost or cut weights file makes onnxruntime fail its own way: the export is removed
    and made again (here copied from the module's good one), not a crash on every search."""
    good = onnx_path(resolve_model_path(), data_dir)
    target = onnx_path(resolve_model_path(), tmp_path)
    target.write_bytes(good.read_bytes())
    onnx_export.weights_path(target).write_bytes(onnx_export.weights_path(good).read_bytes()[:4096])

    def export_again(model_path, graph, progress):
        assert not graph.exists() and not onnx_export.weights_path(graph).exists()
        graph.write_bytes(good.read_bytes())
        onnx_export.weights_path(graph).write_bytes(onnx_export.weights_path(good).read_bytes())

    monkeypatch.setattr("memory.embedding.onnx_embedder.export_model", export_again)
    messages: list[str] = []
    embedder = OnnxEmbedder(tmp_path, progress=messages.append)
    vectors = embedder.embed_many_sync(["KeyError: 'timeout'"])
    assert embedder.uses_onnx
    assert "does not load" in messages[0] and "making the export again" in messages[0]
    assert np.allclose(vectors, onnx_embedder.embed_many_sync(["KeyError: 'timeout'"]))


def test_a_killed_export_leaves_nothing_under_the_real_name(tmp_path):
    target = onnx_path(resolve_model_path(), tmp_path)
    script = (
        "import os, sys; from pathlib import Path; from memory.embedding import onnx_export;"
        "from memory.embedding.model_files import resolve_model_path;"
        "onnx_export.check_export = lambda *a: os.kill(os.getpid(), 9);"
        "onnx_export.export_model(resolve_model_path(), Path(sys.argv[1]), print)"
    )
    done = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True)
    assert done.returncode == -9
    assert not target.exists()
    leftovers = list(target.parent.glob("*.tmp"))
    assert [p.name.startswith(target.name) for p in leftovers] == [True]
    old = 2 * onnx_export.STALE_TEMPORARY_S
    os.utime(leftovers[0], (leftovers[0].stat().st_atime - old, leftovers[0].stat().st_mtime - old))
    onnx_export._remove_stale_temporaries(target.parent)
    assert not leftovers[0].exists()


def cli(data_dir: Path, *args: str) -> dict:
    """Run the CLI in a fresh process; report its exit code, output, the heavy modules (and
    those of NOT_FOR_SEARCH) it imported and how many onnxruntime sessions it opened."""
    probe = (
        "import json, sys, onnxruntime; from app.cli.main import main;"
        "opened = []; real = onnxruntime.InferenceSession;"
        "onnxruntime.InferenceSession = lambda *a, **k: opened.append(1) or real(*a, **k);"
        "code = main(sys.argv[1:]);"
        f"heavy = sorted(m for m in sys.modules if m in {HEAVY!r});"
        f"others = sorted(m for m in sys.modules if m in {NOT_FOR_SEARCH!r});"
        "print(json.dumps({'code': code, 'heavy': heavy, 'sessions': len(opened), "
        "'others': others}))"
    )
    env = {**os.environ, "ASTRA_DATA_DIR": str(data_dir), "ASTRA_EMBEDDER": "onnx"}
    env.pop("ASTRA_MEMORY_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env
    )
    *output, last = done.stdout.strip().splitlines()
    return {**json.loads(last), "output": "\n".join(output), "stderr": done.stderr}


def test_the_commands_load_the_model_once_and_never_import_torch(data_dir, onnx_embedder):
    queries = DATA / "queries.jsonl"
    for args in (
        ["memory", "import", str(DATA / "fixes.jsonl"), "--scope", "eval"],
        ["memory", "search", "AssertionError: origins differ", "--scope", "eval"],
        ["memory", "eval", str(queries), "--scope", "eval", "--json", "--baseline"],
    ):
        ran = cli(data_dir, *args)
        assert (ran["code"], ran["heavy"], ran["sessions"]) == (0, [], 1), ran
        if args[1] == "search":
            assert ran["others"] == [], ran
    first = json.loads(cli(data_dir, "memory", "list", "--json", "--limit", "1")["output"])[0]
    for args in (
        ["memory", "list"],
        ["memory", "show", first["memory_id"][:8]],
        ["memory", "stats"],
        ["memory", "export"],
        ["memory", "delete", first["memory_id"], "--yes"],
    ):
        ran = cli(data_dir, *args)
        assert (ran["code"], ran["heavy"], ran["sessions"]) == (0, [], 0), ran


def test_doctor_and_smoke_check_the_embedder_sessions_use(data_dir, onnx_embedder):
    """They built torch's whatever ASTRA_EMBEDDER said: doctor checked another model than
    sessions search with, and took seconds to import it."""
    ran = cli(data_dir, "doctor")
    assert (ran["heavy"], ran["sessions"]) == ([], 1), ran
    assert "embedding model" in ran["output"]
    stored = cli(data_dir, "smoke", "store")
    assert (stored["code"], stored["heavy"], stored["sessions"]) == (0, [], 1), stored
    verified = cli(data_dir, "smoke", "verify", "--memory-id", stored["output"].strip())
    assert (verified["code"], verified["heavy"], verified["sessions"]) == (0, [], 1), verified


def test_model_prepare_says_where_the_checked_export_is(data_dir, onnx_embedder):
    ran = cli(data_dir, "model", "prepare")
    assert ran["code"] == 0 and ran["heavy"] == []
    graph = onnx_path(resolve_model_path(), data_dir)
    assert ran["output"] == str(graph)
    assert "already prepared" in ran["stderr"]
    # The weights sit apart, raw, for onnxruntime to map: the graph itself is small, and
    # optimised already (fused nodes); the export it superseded is gone.
    assert onnx_export.weights_path(graph).stat().st_size > 80e6 > 1e6 > graph.stat().st_size
    assert sorted(p.name for p in graph.parent.glob("*.onnx*")) == [
        graph.name,
        onnx_export.weights_path(graph).name,
    ]
    nodes = onnx.load(str(graph), load_external_data=False).graph.node
    assert any(node.domain == "com.microsoft" for node in nodes)


def test_a_bad_embedder_setting_is_one_line_and_exit_2(data_dir):
    env = {**os.environ, "ASTRA_DATA_DIR": str(data_dir), "ASTRA_EMBEDDER": "cuda"}
    done = subprocess.run(
        [sys.executable, "-m", "app.cli.main", "memory", "search", "x"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2
    assert "ASTRA_EMBEDDER" in done.stderr and "onnx or torch" in done.stderr


def test_records_keep_the_model_name_whichever_path_embeds_them():
    assert OnnxEmbedder.model_name == SentenceTransformerEmbedder.model_name == EMBEDDING_MODEL
    assert EMBEDDING_MODEL.endswith("/all-MiniLM-L6-v2")
