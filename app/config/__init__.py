"""Configuration: the environment and `.env` (`settings`), the user's config file (`file`),
and a memory URL made exact (`store_url`).

Light on purpose (pydantic-settings and the standard library): the dashboard reads it before
its first frame. Imports nothing of ours but `app.errors` and `memory`'s light modules.
"""
