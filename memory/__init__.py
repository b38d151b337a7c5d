"""The codebase memory of confirmed fixes: records, embedder, stores and the tools' service.

Nothing here imports Textual; the TUI, the agent loop and the CLI all build on it.
"""

from memory.embedder import Embedder, EmbedderUnavailableError, SentenceTransformerEmbedder
from memory.errors import (
    MemoryLayerError,
    MemoryStoreError,
    MemoryValidationError,
    RecordNotFoundError,
    UnconfirmedOutcomeError,
)
from memory.records import DeliveryStats, MemoryRecord, MemorySearchResult, TestEvidence
from memory.service import MemoryService, SearchReport, format_search_results
from memory.store import MemoryStore, open_store

__all__ = [
    "DeliveryStats",
    "Embedder",
    "EmbedderUnavailableError",
    "MemoryLayerError",
    "MemoryRecord",
    "MemorySearchResult",
    "MemoryService",
    "MemoryStore",
    "MemoryStoreError",
    "MemoryValidationError",
    "RecordNotFoundError",
    "SearchReport",
    "SentenceTransformerEmbedder",
    "TestEvidence",
    "UnconfirmedOutcomeError",
    "format_search_results",
    "open_store",
]
