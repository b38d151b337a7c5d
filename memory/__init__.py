"""The codebase memory of confirmed fixes.

`records` and `errors` are the data types and errors everyone shares, `text` how text is
shown; `safety` redacts secrets and flags instruction-like text; `service` is the two model
tools' behaviour; `transfer` exports, imports and migrates; `evaluation` measures retrieval
on labelled queries. Below them: `stores/` (where records live), `embedding/` (text to
vectors) and `retrieval/` (how a failure finds its fix). Inside, one way only: evaluation >
transfer > service > stores | embedding > retrieval.

Nothing here imports Textual or anything of ours outside `memory`. The package imports
nothing itself, so a light module (records, errors, text) loads without numpy.
"""
