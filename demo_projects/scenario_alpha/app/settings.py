"""Settings for the web helper, read from the process environment."""

from __future__ import annotations

import os
from collections.abc import Mapping

ALLOWED_ORIGINS_VAR = "APP_ALLOWED_ORIGINS"


def load_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the app settings taken from ``environ`` (default: ``os.environ``).

    ``APP_ALLOWED_ORIGINS`` is a comma-separated list of origins, for example
    ``"https://a.example, https://b.example"``; when unset, no origin is allowed.
    """
    env = os.environ if environ is None else environ
    return {"allowed_origins": env.get(ALLOWED_ORIGINS_VAR, "")}
