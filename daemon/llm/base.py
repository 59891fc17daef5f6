"""The model port: settings, a request, a response, and the ``ModelClient`` protocol.

Every implementation (litellm, the in-package fakes) returns the same ``ModelResponse``;
the planner never sees an HTTP or SDK object. Keys are never held here: ``api_key_env``
names the environment variable the client reads at call time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelSettings:
    """How to reach one model (global ``[llm]`` or a store's ``[stores.llm]``)."""

    model: str  # any litellm model string: openai/..., anthropic/..., ollama_chat/...
    api_base: str | None = None
    api_key_env: str | None = None  # the NAME of the variable holding the key
    temperature: float = 0.0
    timeout_s: float = 60.0
    retries: int = 2  # extra attempts on timeouts, 429 and 5xx (not on 4xx)
    # caps on what the model's own limits allow (see daemon.llm.limits); None: no cap
    max_output_tokens: int | None = None  # the reply of one call
    tokens_per_call: int | None = None  # the prompt of one call
    tokens_per_pass: int = 1_000_000  # prompt + completion budget of one pass
    context_window: int | None = None  # declares the window of a model litellm does not know
    cost_per_pass: float | None = None  # USD; None: no cost limit
    prompt_dir: str | None = None  # a folder of templates overriding the shipped ones


@dataclass(frozen=True)
class ModelRequest:
    """One chat completion: system + user text, and the JSON schema the reply must follow."""

    system: str
    user: str
    schema: dict[str, Any]
    schema_name: str = "dreamd_reply"
    extra_messages: tuple[dict[str, str], ...] = ()  # e.g. a repair turn after invalid JSON
    key: str = ""  # what the request is about (sorted note ids): replay models look replies up by it
    max_output_tokens: int | None = None  # the reply's room this call asks for (None: the settings')


@dataclass(frozen=True)
class ModelResponse:
    text: str
    finish_reason: str  # "stop", "length", "content_filter", ...
    prompt_tokens: int
    completion_tokens: int
    cost: float | None  # USD from litellm's price list; None when the model has no price
    latency_s: float
    model: str
    http_calls: int = 1  # attempts it took (retries included)
    refusal: str | None = None  # a provider's explicit refusal text, when it sends one
    meta: dict[str, Any] = field(default_factory=dict)


class ModelClient(Protocol):
    """Sends one request; raises ModelTransientError, ModelRequestError on failure.

    A client may also offer ``limits(settings) -> daemon.llm.limits.ModelLimits | None`` (what
    it knows of the model's window and longest reply) and ``count_tokens(text, settings)``
    (the model's tokenizer); the planner falls back to documented defaults without them. And
    ``missing_key(settings) -> str | None``: why no call can be made for want of a key, asked
    before a pass starts (without it, nothing is asked).
    """

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse: ...
