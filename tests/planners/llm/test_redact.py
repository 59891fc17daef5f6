"""Secrets are redacted before note text can reach a prompt."""

from __future__ import annotations

import pytest

from daemon.planners.llm.redact import has_marker, redact

SECRETS = {
    "OPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c": "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "The staging bucket uses AKIAIOSFODNN7EXAMPLE as its key.": "AKIAIOSFODNN7EXAMPLE",
    "Connect with https://user:hunter2@db.internal.example/app please": "hunter2",
    "DATABASE_PASSWORD=correct-horse-battery": "correct-horse-battery",
    "- password: Zx9!qP2vLm#8Rt": "Zx9!qP2vLm#8Rt",
    "Token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB works.": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "slack: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
}
KEY = """-----BEGIN RSA PRIVATE KEY-----
MIIEpAIBAAKCAQEA75FhzT3xQ9mQkVq8x3Yt0Jb9Zr2LwPp4Nc6Hs1Ue7Ga5Dk8Fi
q8x3Yt0Jb9Zr2LwPp4Nc6Hs1Ue7Ga5Dk8FiMIIEpAIBAAKCAQEA75FhzT3xQ9mQkV
-----END RSA PRIVATE KEY-----"""


@pytest.mark.parametrize(("line", "secret"), sorted(SECRETS.items()))
def test_each_kind_of_secret_is_replaced_by_a_typed_marker(line: str, secret: str) -> None:
    out, count = redact(line)
    assert secret not in out and count == 1
    assert has_marker(out)


def test_a_private_key_block_is_redacted_line_for_line() -> None:
    text = f"# Keys\nUse this key:\n{KEY}\nRotate monthly.\n"
    out, count = redact(text)
    assert count == 1 and "MIIEp" not in out and "BEGIN RSA" not in out
    assert out.split("\n")[2:6] == ["[REDACTED:private-key]"] * 4
    assert out.count("\n") == text.count("\n") and out.endswith("Rotate monthly.\n")


def test_names_and_ordinary_text_stay() -> None:
    out, _ = redact("DATABASE_PASSWORD=correct-horse-battery\n")
    assert out.startswith("DATABASE_PASSWORD=[REDACTED:")
    plain = (
        "# Build\nRun make test before pushing; CI checks lint only.\n"
        "Commit 3f2a9c1 fixed it, see src/app/main.py and https://example.com/docs/setup.\n"
        "Request id 123e4567-e89b-12d3-a456-426614174000, port 5433, version 2.14.4.\n"
    )
    assert redact(plain) == (plain, 0)


def test_lines_are_preserved_so_line_numbers_still_match_the_file() -> None:
    text = "a\r\n" + "\n".join(SECRETS) + "\nlast\n"
    out, count = redact(text)
    assert count == len(SECRETS)
    assert out.count("\n") == text.count("\n") and out.startswith("a\r\n")
    for secret in SECRETS.values():
        assert secret not in out
