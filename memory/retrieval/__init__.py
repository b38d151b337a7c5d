"""How a failure finds its fix: reading failure text (`failure_text`, `signature`), ranking
and fusing (`ranking`) and explaining a match (`explain`).

Pure functions over text: imports only `memory.records`, `memory.errors` and
`memory.safety`; both stores rank through it, so it never imports a store.
"""
