"""Scenario alpha: a small web helper that answers CORS checks from settings."""
