"""CORS decisions for incoming cross-origin requests."""

from __future__ import annotations

from app.settings import load_settings


def configured_values(raw: str) -> list[str]:
    """Split a comma-separated setting into its values, skipping empty entries."""
    return [value for value in raw.split(",") if value]


def allowed_origins(settings: dict[str, str] | None = None) -> list[str]:
    """Return the origins allowed to make cross-origin requests, in configured order."""
    settings = load_settings() if settings is None else settings
    return configured_values(settings["allowed_origins"])


def cors_headers(origin: str | None, settings: dict[str, str] | None = None) -> dict[str, str]:
    """Return the CORS response headers for a request sent from ``origin``.

    An allowed origin is echoed back in ``Access-Control-Allow-Origin``; any other
    origin (or none) gets no CORS header. ``Vary: Origin`` is always set so shared
    caches keep the responses for different origins apart.
    """
    headers = {"Vary": "Origin"}
    if origin and origin in allowed_origins(settings):
        headers["Access-Control-Allow-Origin"] = origin
    return headers
