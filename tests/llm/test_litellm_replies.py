"""What LiteLLMClient makes of real-shaped provider replies, and what it sends."""

from __future__ import annotations

import json
from typing import Any

import respx

from daemon.llm.base import ModelSettings

from .helpers import ANTHROPIC_URL, LOCAL_BASE, OPENAI_URL, SCHEMA, payload, reply, request, settings


def sent(route: respx.Route, index: int = 0) -> dict[str, Any]:
    return json.loads(route.calls[index].request.content)


def test_openai_json_reply_is_returned_with_tokens_and_cost(client, http) -> None:
    """A valid OpenAI reply comes back as text with usage, a price and one HTTP call."""
    http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    response = client.complete(request(), settings())
    body = payload("openai_chat_ok")
    assert response.text == body["choices"][0]["message"]["content"]
    assert json.loads(response.text)["proposals"][0]["kind"] == "merge"
    assert (response.finish_reason, response.prompt_tokens, response.completion_tokens) == ("stop", 812, 95)
    assert isinstance(response.cost, float) and response.cost > 0
    assert response.http_calls == 1 and response.refusal is None
    assert response.model == "openai/gpt-4o-mini"
    assert response.meta["provider_model"] == "gpt-4o-mini-2024-07-18"
    assert response.latency_s >= 0


def test_anthropic_tool_reply_becomes_json_text(client, http) -> None:
    """litellm asks Claude for a forced json_tool_call; its input comes back as the text."""
    route = http.post(ANTHROPIC_URL).mock(return_value=reply(200, "anthropic_message_ok"))
    response = client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    expected = payload("anthropic_message_ok")["content"][0]["input"]
    assert json.loads(response.text) == expected
    assert (response.prompt_tokens, response.completion_tokens) == (1024, 138)
    assert isinstance(response.cost, float) and response.cost > 0
    body = sent(route)
    assert body["tool_choice"] == {"name": "json_tool_call", "type": "tool"}
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert body["system"][0]["text"] == request().system
    assert body["max_tokens"] == 2048 and body["temperature"] == 0


def test_anthropic_text_reply_is_passed_through(client, http) -> None:
    """A plain text block (a model that ignored the tool) is returned as it is."""
    http.post(ANTHROPIC_URL).mock(return_value=reply(200, "anthropic_message_text"))
    response = client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    assert response.text == '{"proposals": []}'
    assert response.finish_reason == "stop"


def test_malformed_json_is_passed_through_untouched(client, http) -> None:
    """Parsing is the planner's job: broken JSON arrives verbatim, no error here."""
    http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_malformed"))
    response = client.complete(request(), settings())
    assert response.text == payload("openai_chat_malformed")["choices"][0]["message"]["content"]
    assert response.finish_reason == "stop"


def test_openai_refusal_sets_refusal_and_empty_text(client, http) -> None:
    """An explicit refusal is reported as such, with no text to parse."""
    http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_refusal"))
    response = client.complete(request(), settings())
    assert response.refusal == "I'm sorry, but I can't assist with that request."
    assert response.text == ""


def test_anthropic_refusal_sets_refusal_and_empty_text(client, http) -> None:
    """Claude's stop_reason "refusal" is reported as a refusal, not as an empty answer."""
    http.post(ANTHROPIC_URL).mock(return_value=reply(200, "anthropic_message_refusal"))
    response = client.complete(request(), settings("anthropic/claude-haiku-4-5-20251001"))
    assert response.refusal and "refusal" in response.refusal
    assert (response.text, response.finish_reason) == ("", "content_filter")


def test_truncated_reply_keeps_finish_reason_length(client, http) -> None:
    """A reply cut at max_tokens says so, so the planner can refuse to parse half of it."""
    http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_length"))
    response = client.complete(request(), settings())
    assert response.finish_reason == "length"
    assert response.text.endswith("the slow suite")
    assert (response.prompt_tokens, response.completion_tokens) == (1930, 64)


def test_request_body_carries_schema_messages_and_settings(client, http) -> None:
    """The body has the json_schema response_format, all messages in order and the settings."""
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    repair = ({"role": "assistant", "content": "{oops"}, {"role": "user", "content": "Reply with valid JSON."})
    req = request(extra_messages=repair)
    client.complete(req, settings(temperature=0.2, max_output_tokens=777, timeout_s=12.5))
    body = sent(route)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "dreamd_reply", "schema": SCHEMA, "strict": True},
    }
    assert body["messages"] == [
        {"role": "system", "content": req.system},
        {"role": "user", "content": req.user},
        *repair,
    ]
    assert body["model"] == "gpt-4o-mini"
    assert body["temperature"] == 0.2 and body["max_tokens"] == 777
    assert route.calls[0].request.extensions["timeout"]["read"] == 12.5


def test_model_without_schema_support_gets_json_mode(client, http) -> None:
    """Where litellm says no JSON schema is supported, JSON mode is asked for instead."""
    route = http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    client.complete(request(), settings("openai/gpt-3.5-turbo"))
    assert sent(route)["response_format"] == {"type": "json_object"}


def test_local_openai_compatible_server_gets_schema_and_no_price(client, http) -> None:
    """openai/local-qwen at an api_base: json_schema is sent there, and cost is None."""
    route = http.post(f"{LOCAL_BASE}/chat/completions").mock(return_value=reply(200, "local_qwen_ok"))
    local = ModelSettings(model="openai/local-qwen", api_base=LOCAL_BASE)
    response = client.complete(request(), local)
    assert sent(route)["response_format"]["type"] == "json_schema"
    assert sent(route)["model"] == "local-qwen"
    assert response.cost is None
    assert (response.prompt_tokens, response.completion_tokens) == (486, 71)
    assert json.loads(response.text)["proposals"][0]["survivor"] == "a.md"
