"""Acceptance tests for the CORS helper."""

from app.service import allowed_origins, cors_headers

ORIGINS = "https://a.example, https://b.example"


def test_origins_are_read_from_the_setting(monkeypatch):
    monkeypatch.setenv("APP_ALLOWED_ORIGINS", ORIGINS)
    assert allowed_origins() == ["https://a.example", "https://b.example"]


def test_second_configured_origin_is_allowed(monkeypatch):
    monkeypatch.setenv("APP_ALLOWED_ORIGINS", ORIGINS)
    allowed = cors_headers("https://b.example").get("Access-Control-Allow-Origin")
    assert allowed == "https://b.example"


def test_unknown_origin_gets_no_cors_header(monkeypatch):
    monkeypatch.setenv("APP_ALLOWED_ORIGINS", ORIGINS)
    headers = cors_headers("https://evil.example")
    assert "Access-Control-Allow-Origin" not in headers
    assert headers["Vary"] == "Origin"


def test_unset_setting_allows_no_origin(monkeypatch):
    monkeypatch.delenv("APP_ALLOWED_ORIGINS", raising=False)
    assert "Access-Control-Allow-Origin" not in cors_headers("https://a.example")
