"""Retries are bounded and counted in HTTP requests: litellm's and the SDK's own are off."""

from __future__ import annotations

from types import ModuleType

import httpx
import pytest

from daemon.core.errors import ModelRequestError, ModelTransientError
from daemon.llm.litellm_client import LiteLLMClient

from .helpers import ANTHROPIC_URL, OPENAI_URL, reply, request, settings


def test_429_then_success_takes_exactly_two_calls(client, http, sleeps) -> None:
    """A rate limit is retried once after a short backoff, then the reply is returned."""
    route = http.post(OPENAI_URL).mock(side_effect=[reply(429, "openai_error_429"), reply(200, "openai_chat_ok")])
    response = client.complete(request(), settings())
    assert route.call_count == 2
    assert response.http_calls == 2
    assert sleeps == [0.5]


def test_500_three_times_with_two_retries_is_three_calls(client, http, sleeps) -> None:
    """retries=2 means at most 3 HTTP requests, then ModelTransientError."""
    route = http.post(OPENAI_URL).mock(side_effect=[reply(500, "openai_error_500")] * 10)
    with pytest.raises(ModelTransientError, match="gave up after 3 attempts") as info:
        client.complete(request(), settings(retries=2))
    assert route.call_count == 3
    assert sleeps == [0.5, 1.0]
    assert info.value.http_calls == 3
    assert "openai/gpt-4o-mini" in str(info.value)


def test_timeouts_are_retried_then_give_up(client, http, sleeps) -> None:
    """A read timeout counts as transient: 1 + retries calls, then ModelTransientError."""
    route = http.post(OPENAI_URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(ModelTransientError, match="Timeout"):
        client.complete(request(), settings(retries=1, timeout_s=5))
    assert route.call_count == 2
    assert sleeps == [0.5]


def test_no_retries_means_one_call(client, http, sleeps) -> None:
    """retries=0: a single request, no sleep."""
    route = http.post(OPENAI_URL).mock(side_effect=[reply(503, "openai_error_500")] * 3)
    with pytest.raises(ModelTransientError):
        client.complete(request(), settings(retries=0))
    assert (route.call_count, sleeps) == (1, [])


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (400, "openai_error_400"),
        (401, "openai_error_401"),
        (403, "openai_error_401"),
        (404, "openai_error_404"),
        (422, "openai_error_400"),
        (400, "openai_error_context"),
    ],
)
def test_request_errors_fail_after_one_call(client, http, sleeps, status: int, name: str) -> None:
    """Authentication, bad requests and context overflow are not retried."""
    route = http.post(OPENAI_URL).mock(side_effect=[reply(status, name)] * 3)
    with pytest.raises(ModelRequestError) as info:
        client.complete(request(), settings(retries=5))
    assert route.call_count == 1 and sleeps == []
    assert info.value.http_calls == 1
    message = str(info.value)
    assert "\n" not in message and message.startswith("model openai/gpt-4o-mini: ")


def test_context_window_error_says_what_to_lower(client, http) -> None:
    """A context overflow is a request error with a hint about the per-call budget."""
    http.post(OPENAI_URL).mock(return_value=reply(400, "openai_error_context"))
    with pytest.raises(ModelRequestError, match="ContextWindowExceededError") as info:
        client.complete(request(), settings())
    assert info.value.hint == "the model reads less than dreamd assumed: set context_window (or tokens_per_call) in [llm]"


def test_anthropic_overloaded_is_retried(client, http, sleeps) -> None:
    """Anthropic's 529 overloaded goes through litellm's own HTTP handler and is retried too."""
    route = http.post(ANTHROPIC_URL).mock(
        side_effect=[reply(529, "anthropic_error_529"), reply(200, "anthropic_message_ok")]
    )
    response = client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    assert route.call_count == 2 and response.http_calls == 2


def test_anthropic_auth_error_fails_at_once(client, http) -> None:
    """Anthropic's 401 is a request error after exactly one call."""
    route = http.post(ANTHROPIC_URL).mock(side_effect=[reply(401, "anthropic_error_401")] * 3)
    with pytest.raises(ModelRequestError, match="401"):
        client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    assert route.call_count == 1


def test_litellm_global_num_retries_does_not_multiply(
    client, http, lit: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with litellm.num_retries set globally, retries=1 stays 2 HTTP requests."""
    monkeypatch.setattr(lit, "num_retries", 3)
    route = http.post(OPENAI_URL).mock(side_effect=[reply(500, "openai_error_500")] * 20)
    with pytest.raises(ModelTransientError):
        client.complete(request(), settings(retries=1))
    assert route.call_count == 2


def test_backoff_doubles_and_is_capped() -> None:
    """Waits grow 0.5, 1, 2, 4… up to the cap."""
    backoff = LiteLLMClient(backoff_base_s=0.5, backoff_cap_s=3.0).backoff
    assert [backoff(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
