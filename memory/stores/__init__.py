"""Where records live: the `MemoryStore` protocol and `open_store` (`protocol`), the embedded
SQLite store (`sqlite`, `sqlite_rows`, `migrations`, `vector_index`) and the Actian VectorAI DB
store (`vectorai`).

Imports `memory.records`, `memory.errors` and `memory.retrieval.ranking` (both stores rank
alike); never the embedding package, the service or anything outside `memory`.
"""
