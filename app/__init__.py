"""The Textual application and the `astra-memory` command line."""
