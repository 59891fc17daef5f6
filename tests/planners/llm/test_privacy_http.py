"""Privacy at the wire: through the real litellm client (HTTP intercepted by respx), the
request body carries no secret and no private or excluded note."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest
import respx

from daemon.llm.base import ModelSettings
from daemon.planners.llm.planner import LLMPlanner

from ..factory import note
from .store import BUILD, NOW, excluded, reply, store, tokens

BASE = "http://127.0.0.1:8779/v1"
SECRETS = ("AKIAIOSFODNN7EXAMPLE", "hunter2", "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c", "MIIEpAIBAAKCAQEA75Fh")
LEAKY = (
    BUILD
    + "Staging key AKIAIOSFODNN7EXAMPLE; db at https://ci:hunter2@db.example/ci\n"
    + "OPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\n"
    + "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75FhzT3xQ9mQkVq8x3Yt0Jb9Zr2LwPp4Nc6Hs1Ue7Ga5Dk8Fi\n-----END RSA PRIVATE KEY-----\n"
)


def completion(text: str) -> dict[str, Any]:
    """An OpenAI-compatible chat completion body, as a local server sends it."""
    return {
        "id": "chatcmpl-dreamd-1",
        "object": "chat.completion",
        "created": 1780000000,
        "model": "local-test",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1210, "completion_tokens": 12, "total_tokens": 1222},
    }


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a test tried to reach the network: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("DISABLE_AIOHTTP_TRANSPORT", "True")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.mark.usefixtures("offline")
def test_the_http_body_holds_no_secret_and_no_private_or_excluded_note() -> None:
    pytest.importorskip("litellm")
    from daemon.llm.litellm_client import LiteLLMClient

    v = store(note("notes/build-secrets.md", LEAKY))
    changed = {"notes/build-secrets.md", "notes/private.md", "vendor/excluded.md"}
    settings = ModelSettings(model="openai/local-test", api_base=BASE, retries=0)
    with respx.mock(assert_all_mocked=True) as router:
        route = router.post(f"{BASE}/chat/completions").mock(return_value=httpx.Response(200, json=completion(reply())))
        result = LLMPlanner(LiteLLMClient(sleep=lambda s: None), settings, tokens).plan(v, NOW, changed, set(), excluded)
    assert route.call_count == 1
    body = route.calls[0].request.content.decode("utf-8")
    sent = json.loads(body)
    text = json.dumps(sent)
    for secret in SECRETS:
        assert secret not in body and secret not in text
    assert "[REDACTED:aws-access-key]" in text and "[REDACTED:private-key]" in text
    assert "notes/private.md" not in text and "hunter2-staging" not in text and "vendor/excluded.md" not in text
    (call,) = result.calls
    assert call.status == "ok" and call.redactions == 4 and call.prompt_tokens == 1210
    assert "notes/build-secrets.md" in call.notes
