"""The codebase memory of confirmed fixes: records, embedder, stores and the tools' service.

Nothing here imports Textual; the TUI, the agent loop and the CLI all build on it. The
package imports nothing itself, so a light module (records, errors) loads without numpy.
"""
