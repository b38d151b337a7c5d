"""Settings you can trust (issue 14, findings 2 and 4): no `.env` from the current folder, the
key only to the configured https (or loopback) base URL, no redirect carrying it elsewhere, a
URL's password never printed or written, and a budget that is a finite positive number."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.transport import insecure_base_url
from app.cli.main import main, settings_from
from app.config.file import default_env_file
from tests.agent.responses_server import ResponsesServer, message_item, response_body

KEY = "sk-dummy-0123456789abcdefghij"


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASTRA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in ("ASTRA_MEMORY_URL", "ASTRA_BUDGET_USD", "OPENAI_BASE_URL", "ASTRA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data"


def live(alpha: Path, base_url: str, *flags: str) -> int:
    """The exit code, whether main returns it or argparse exits with it."""
    argv = ["run", "--workspace", str(alpha), "--live", "--approve-live-cost", "--json"]
    try:
        return main([*argv, "--base-url", base_url, *flags])
    except SystemExit as exc:
        return int(exc.code)


def test_a_dotenv_in_the_current_folder_is_never_read(data_dir, tmp_path):
    (tmp_path / ".env").write_text("OPENAI_BASE_URL=http://evil.example/v1\nASTRA_MODEL=planted\n")
    assert settings_from(None).openai_base_url == "https://api.openai.com/v1"
    default_env_file().parent.mkdir(parents=True, exist_ok=True)
    default_env_file().write_text("ASTRA_MODEL=from-config-dir\n")
    assert settings_from(None).astra_model == "from-config-dir"
    named = tmp_path / "team.env"
    named.write_text("ASTRA_MODEL=named\n")
    assert settings_from(named).astra_model == "named"


def test_a_missing_env_file_is_one_line_and_exit_2(capsys, data_dir, tmp_path):
    assert main(["--env-file", str(tmp_path / "nope.env"), "ledger"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "--env-file" in captured.err


def test_an_env_file_that_is_not_utf8_is_one_line_and_exit_2(capsys, data_dir, tmp_path):
    named = tmp_path / "team.env"
    named.write_bytes(b"ASTRA_MODEL=\xff\xfe\n")
    assert main(["--env-file", str(named), "ledger"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"cannot read the .env file {named}: byte 12 is not UTF-8 text" in captured.err
    default_env_file().parent.mkdir(parents=True, exist_ok=True)
    default_env_file().write_bytes(b"ASTRA_MODEL=\xff\n")  # the config dir's, read unasked
    assert main(["ledger"]) == 2
    assert f"cannot read the .env file {default_env_file()}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("url", "insecure"),
    [
        ("https://api.openai.com/v1", False),
        ("http://127.0.0.1:8080/v1", False),
        ("http://127.9.9.9/v1", False),
        ("http://[::1]:8080/v1", False),
        ("http://localhost:8080/v1", False),
        ("http://evil.example/v1", True),
        ("http://10.0.0.7/v1", True),
        ("http://127.0.0.1.evil.example/v1", True),
    ],
)
def test_only_https_or_loopback_is_secure(url, insecure):
    assert insecure_base_url(url) is insecure


def test_plain_http_to_another_host_needs_the_flag(capsys, data_dir, alpha):
    assert live(alpha, "http://evil.example/v1") == 2
    captured = capsys.readouterr()
    assert "--allow-insecure-base-url" in captured.err and captured.err.count("\n") == 1
    assert not (data_dir / "ledger.jsonl").exists()


def test_a_redirect_never_takes_the_key_to_another_server(capsys, data_dir, alpha):
    with ResponsesServer() as first, ResponsesServer() as elsewhere:
        elsewhere.enqueue(response_body([message_item("stolen")]))
        first.enqueue("moved", 307, {"Location": f"{elsewhere.base_url}/responses"})
        code = live(alpha, first.base_url)
        assert elsewhere.requests == []
    assert code != 0 and "Traceback" not in capsys.readouterr().err


def test_a_password_in_the_base_url_is_never_printed_or_written(capsys, data_dir, alpha):
    with ResponsesServer() as server:
        server.enqueue(response_body([message_item("x")]), hang_up=True)
        url = server.base_url.replace("http://", "http://user:s3cret-pw@")
        code = live(alpha, url)
    captured = capsys.readouterr()
    written = "".join(p.read_text() for p in data_dir.rglob("*") if p.suffix == ".jsonl")
    assert code == 1 and "user:***@127.0.0.1" in captured.out
    assert "s3cret-pw" not in captured.out + captured.err + written


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "lots", "1e400"])
def test_a_budget_must_be_finite_and_more_than_0(capsys, data_dir, alpha, monkeypatch, value):
    assert live(alpha, "http://127.0.0.1:9/v1", f"--budget-usd={value}") == 2
    flag = capsys.readouterr()
    monkeypatch.setenv("ASTRA_BUDGET_USD", value)
    assert live(alpha, "http://127.0.0.1:9/v1") == 2
    environment = capsys.readouterr()
    for captured, name in ((flag, "--budget-usd"), (environment, "ASTRA_BUDGET_USD")):
        assert captured.out == "" and captured.err.count("\n") == 1 and name in captured.err
    assert not data_dir.exists()  # nothing written
