"""The key: read from the variable named by api_key_env at call time, sent only as a header."""

from __future__ import annotations

import json

import pytest
import structlog

from daemon.core.errors import ModelRequestError, ModelTransientError
from daemon.llm.base import ModelSettings

from .helpers import ANTHROPIC_URL, KEY_VAR, LOCAL_BASE, OPENAI_URL, SECRET, reply, request, settings


def test_openai_key_goes_only_into_the_authorization_header(client, http) -> None:
    """The key is the bearer token and appears nowhere in the body or the response."""
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    response = client.complete(request(), settings())
    sent = route.calls[0].request
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert SECRET.encode() not in sent.content
    assert SECRET not in repr(response)


def test_anthropic_key_goes_only_into_the_x_api_key_header(client, http) -> None:
    """Anthropic gets the key as x-api-key, not in the body."""
    route = http.post(ANTHROPIC_URL).mock(return_value=reply(200, "anthropic_message_ok"))
    client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    sent = route.calls[0].request
    assert sent.headers["x-api-key"] == SECRET
    assert "authorization" not in sent.headers
    assert SECRET.encode() not in sent.content


def test_key_is_read_at_call_time(client, http, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rotated key is used on the next call, without a new client."""
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    client.complete(request(), settings())
    monkeypatch.setenv(KEY_VAR, "sk-rotated-key-000111222333")
    client.complete(request(), settings())
    assert route.calls[1].request.headers["authorization"] == "Bearer sk-rotated-key-000111222333"


def test_missing_key_variable_names_the_variable(client, http, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unset variable fails before any HTTP call, naming the variable."""
    monkeypatch.delenv(KEY_VAR)
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    with pytest.raises(ModelRequestError, match=KEY_VAR) as info:
        client.complete(request(), settings())
    assert route.call_count == 0 and info.value.http_calls == 0


def test_key_echoed_by_the_provider_never_reaches_the_exception(client, http) -> None:
    """A 401 whose body quotes the key: the error text has it redacted and no chained cause."""
    echo = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"}}
    http.post(OPENAI_URL).respond(401, json=echo)
    with pytest.raises(ModelRequestError) as info:
        client.complete(request(), settings())
    assert SECRET not in str(info.value) and SECRET not in info.value.one_line()
    assert "[redacted]" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_transient_errors_and_logs_never_carry_the_key(client, http) -> None:
    """Neither the retry warnings nor the final transient error contain the key."""
    echo = {"error": {"message": f"upstream failed for key {SECRET}", "type": "server_error"}}
    http.post(OPENAI_URL).respond(502, json=echo)
    with structlog.testing.capture_logs() as logs, pytest.raises(ModelTransientError) as info:
        client.complete(request(), settings(retries=1))
    assert SECRET not in str(info.value)
    assert logs and SECRET not in json.dumps(logs, default=str)


def test_api_base_without_key_variable_never_sends_the_openai_key(
    client, http, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local server with no api_key_env gets a placeholder, not the user's OPENAI_API_KEY."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-users-real-openai-key-123456")
    route = http.post(f"{LOCAL_BASE}/chat/completions").mock(return_value=reply(200, "local_qwen_ok"))
    client.complete(request(), ModelSettings(model="openai/local-qwen", api_base=LOCAL_BASE))
    assert route.calls[0].request.headers["authorization"] == "Bearer no-key"


def test_no_key_anywhere_is_a_request_error_not_a_retry(client, http, sleeps) -> None:
    """No api_key_env and no provider variable: the SDK's "missing credentials" fails at once."""
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    with pytest.raises(ModelRequestError):
        client.complete(request(), ModelSettings(model="openai/gpt-4o-mini", retries=3))
    assert route.call_count == 0 and sleeps == []


@pytest.mark.parametrize(
    ("given", "environ", "said"),
    [
        ({"api_key_env": KEY_VAR}, {}, f"the environment variable {KEY_VAR} (api_key_env) is not set or empty"),
        ({"api_key_env": KEY_VAR}, {KEY_VAR: ""}, f"the environment variable {KEY_VAR} (api_key_env) is not set or empty"),
        ({"api_key_env": KEY_VAR}, {KEY_VAR: SECRET}, None),
        ({}, {}, "it reads its key from OPENAI_API_KEY, which is not set"),
        ({}, {"OPENAI_API_KEY": SECRET}, None),
        ({"api_base": LOCAL_BASE}, {}, None),
    ],
    ids=["named-unset", "named-empty", "named-set", "provider-unset", "provider-set", "local-server"],
)
def test_a_missing_key_is_found_before_any_call(given, environ, said, monkeypatch) -> None:
    """``missing_key`` says why no call could be made (the variable api_key_env names, else
    the provider's own), and nothing for a local server that needs none."""
    from daemon.llm.litellm_client import LiteLLMClient

    monkeypatch.delenv(KEY_VAR, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert LiteLLMClient().missing_key(ModelSettings("openai/gpt-4o-mini", **given)) == said


def test_a_providers_base_address_is_not_a_missing_key(monkeypatch) -> None:
    """Ollama's OLLAMA_API_BASE has a default: a model of it is never refused for want of a key."""
    from daemon.llm.litellm_client import LiteLLMClient

    monkeypatch.delenv("OLLAMA_API_BASE", raising=False)
    assert LiteLLMClient().missing_key(ModelSettings("ollama_chat/llama3")) is None
