"""Every ModelClient answers the same request with the same kind of ModelResponse."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from daemon.llm.base import ModelClient, ModelResponse, ModelSettings
from daemon.llm.fakes import FakeModel, ReplayModel
from daemon.llm.litellm_client import LiteLLMClient

from .helpers import OPENAI_URL, payload, reply, request, settings

TEXT = payload("openai_chat_ok")["choices"][0]["message"]["content"]


def fake(http: Any) -> tuple[ModelClient, ModelSettings]:
    return FakeModel().enqueue(TEXT), ModelSettings(model="fake/model")


def replay(http: Any) -> tuple[ModelClient, ModelSettings]:
    return ReplayModel({request().key: {"text": TEXT}}), ModelSettings(model="replay/model")


def litellm(http: Any) -> tuple[ModelClient, ModelSettings]:
    http.post(OPENAI_URL).mock(return_value=reply(200, "openai_chat_ok"))
    return LiteLLMClient(sleep=lambda s: None), settings()


@pytest.mark.parametrize("make", [fake, replay, litellm], ids=["fake", "replay", "litellm"])
def test_client_returns_a_complete_model_response(
    make: Callable[[Any], tuple[ModelClient, ModelSettings]], http: Any
) -> None:
    """Text, finish reason, token counts, model and call count are always filled in."""
    client, cfg = make(http)
    response = client.complete(request(), cfg)
    assert isinstance(response, ModelResponse)
    assert json.loads(response.text) == json.loads(TEXT)
    assert response.finish_reason == "stop"
    assert response.prompt_tokens > 0 and response.completion_tokens > 0
    assert response.model == cfg.model and response.http_calls == 1
    assert response.cost is None or response.cost > 0
