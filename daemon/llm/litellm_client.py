"""``LiteLLMClient``: the ModelClient that reaches any model through litellm.

litellm is imported on the first call, never at module import: it costs seconds and ~200 MB,
and only an LLM pass should pay that. Before the import, ``LITELLM_LOCAL_MODEL_COST_MAP`` is set
so litellm reads its bundled price list instead of fetching one over the network.

Retries are ours alone. litellm has two retry layers that multiply: its ``num_retries`` wrapper
and the OpenAI SDK's ``max_retries`` (default 2). Every call passes ``num_retries=0`` and
``max_retries=0`` so one ``litellm.completion`` is one HTTP request, and ``settings.retries=2``
means at most 3 requests.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from daemon import logs
from daemon.core.errors import ModelBadOutputError, ModelRequestError, ModelTransientError
from daemon.llm.base import ModelRequest, ModelResponse, ModelSettings
from daemon.llm.limits import FALLBACK, ModelLimits
from daemon.llm.translate import mapped_errors

log = logs.get_logger("dreamd.llm")

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
# Sent as the key to an api_base when no key variable is configured: local OpenAI-compatible
# servers need none, the OpenAI SDK refuses to run without one, and the user's OPENAI_API_KEY
# must not travel to a server it was not made for.
NO_KEY = "no-key"


def _litellm() -> ModuleType:
    """litellm, imported on first use, offline and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stdout
    if hasattr(litellm, "telemetry"):
        litellm.telemetry = False
    if hasattr(litellm, "turn_off_message_logging"):
        litellm.turn_off_message_logging = True  # callbacks never see note text
    # litellm's wrapper falls back to this global when num_retries=0 (0 is falsy there)
    litellm.num_retries = None
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    # pydantic complains about litellm's own TypedDicts on the first call; not ours to fix
    warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning)
    return litellm


def response_format(lit: ModuleType, settings: ModelSettings, request: ModelRequest) -> dict[str, Any]:
    """A JSON schema where the model is known to honour one, JSON mode otherwise."""
    schema = {
        "type": "json_schema",
        "json_schema": {"name": request.schema_name, "schema": request.schema, "strict": True},
    }
    provider = settings.model.split("/", 1)[0]
    if provider == "openai" and settings.api_base:
        return schema  # llama.cpp, vLLM & co. turn the schema into a grammar
    if provider == "anthropic":
        return schema  # litellm sends it as a forced tool call; JSON mode is silently dropped
    try:
        supported = bool(lit.supports_response_schema(model=settings.model))
    except Exception:  # unknown models raise instead of answering False
        supported = False
    return schema if supported else {"type": "json_object"}


class LiteLLMClient:
    """Sends a ModelRequest through litellm with bounded retries and returns a ModelResponse."""

    def __init__(
        self,
        *,
        sleep: Callable[[float], None] = time.sleep,
        backoff_base_s: float = BACKOFF_BASE_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._sleep = sleep
        self._base = backoff_base_s
        self._cap = backoff_cap_s
        self._environ = environ  # None: os.environ, read at call time

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        try:
            key = self._api_key(settings)
        except ModelRequestError as exc:
            raise _with_calls(exc, 0)
        lit = _litellm()
        kwargs = self._kwargs(lit, request, settings, key)
        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            try:
                with mapped_errors(lit, settings.model, key):
                    raw = lit.completion(**kwargs)
                break
            except ModelTransientError as exc:
                if attempts > settings.retries:
                    raise _with_calls(
                        ModelTransientError(f"{exc} (gave up after {attempts} attempts)"), attempts
                    ) from None
                wait = self.backoff(attempts)
                log.info(  # the call's end is what a person is told: its error once, or nothing
                    "model call failed, retrying", model=settings.model, attempt=attempts, wait_s=wait, error=str(exc)
                )
                self._sleep(wait)
            except ModelRequestError as exc:
                raise _with_calls(exc, attempts) from None
        response = _to_response(lit, raw, settings, time.monotonic() - started, attempts)
        log.info(
            "model call",
            model=settings.model,
            http_calls=attempts,
            latency_ms=int(response.latency_s * 1000),
            prompt_tokens=response.prompt_tokens,
            completion_tokens=response.completion_tokens,
            finish_reason=response.finish_reason,
        )
        return response

    def count_tokens(self, text: str, settings: ModelSettings) -> int:
        """Tokens of ``text`` for this model (litellm's tokenizer; a 4-chars estimate if it fails)."""
        try:
            return int(_litellm().token_counter(model=settings.model, text=text))
        except Exception:
            return len(text) // 4

    def limits(self, settings: ModelSettings) -> ModelLimits | None:
        """The model's window and longest reply from litellm's bundled model info; None for a
        model it does not list (a local server's alias): the planner then uses its fallback."""
        try:
            info = _litellm().get_model_info(model=settings.model)
        except Exception:  # ModelNotMappedError and friends
            return None
        window = _positive(info.get("max_input_tokens")) or _positive(info.get("max_tokens"))
        reply = _positive(info.get("max_output_tokens")) or _positive(info.get("max_tokens"))
        if window is None and reply is None:
            return None
        return ModelLimits(window, reply, f"litellm's model info for {settings.model}")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based): 0.5, 1, 2, … capped."""
        return float(min(self._cap, self._base * 2 ** (attempt - 1)))

    def missing_key(self, settings: ModelSettings) -> str | None:
        """Why no call could be made for want of a key, or None: the variable api_key_env names
        is unset or empty, or (no api_key_env, no api_base) the provider's own key variable
        that litellm reads is (litellm's validate_environment; only keys and tokens count:
        a local server's base address has a default)."""
        environ = os.environ if self._environ is None else self._environ
        if settings.api_key_env:
            return None if environ.get(settings.api_key_env) else f"the environment variable {settings.api_key_env} (api_key_env) is not set or empty"
        if settings.api_base:
            return None
        try:
            found = _litellm().validate_environment(model=settings.model)
        except Exception:  # a model string litellm cannot place: the call will say more
            return None
        wanted = [name for name in found.get("missing_keys") or () if "KEY" in name or "TOKEN" in name]
        if found.get("keys_in_environment") or not wanted:
            return None
        return f"it reads its key from {' or '.join(wanted)}, which is not set"

    def _api_key(self, settings: ModelSettings) -> str | None:
        environ = os.environ if self._environ is None else self._environ
        if settings.api_key_env:
            value = environ.get(settings.api_key_env, "")
            if not value:
                raise ModelRequestError(
                    f"model {settings.model}: the environment variable {settings.api_key_env} "
                    "(api_key_env) is not set or empty",
                    hint=f"export {settings.api_key_env}=… in the service environment",
                )
            return value
        if settings.api_base:
            return NO_KEY
        return None  # litellm reads the provider's usual variable (OPENAI_API_KEY, ANTHROPIC_API_KEY…)

    @staticmethod
    def _kwargs(lit: ModuleType, request: ModelRequest, settings: ModelSettings, key: str | None) -> dict[str, Any]:
        messages = [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
            *request.extra_messages,
        ]
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "timeout": settings.timeout_s,
            "max_tokens": request.max_output_tokens or settings.max_output_tokens or FALLBACK.max_output_tokens,
            "response_format": response_format(lit, settings, request),
            "num_retries": 0,  # litellm's wrapper: no completion_with_retries
            "max_retries": 0,  # handed to the OpenAI SDK client (its default is 2)
        }
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if key is not None:
            kwargs["api_key"] = key
        return kwargs


def _to_response(lit: ModuleType, raw: Any, settings: ModelSettings, latency_s: float, calls: int) -> ModelResponse:
    """litellm's ModelResponse -> ours; a provider refusal becomes ``refusal`` with empty text."""
    choices = getattr(raw, "choices", None) or []
    if not choices:
        raise ModelBadOutputError(f"model {settings.model}: reply without choices")
    choice = choices[0]
    message = choice.message
    refusal = getattr(message, "refusal", None) or None
    extra = getattr(message, "provider_specific_fields", None) or {}
    if refusal is None and extra.get("stop_reason") == "refusal":
        refusal = "refused by the provider (stop_reason: refusal)"
    text = "" if refusal else (message.content or "")
    usage = getattr(raw, "usage", None)
    return ModelResponse(
        text=text,
        finish_reason=str(choice.finish_reason or ""),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost=_cost(lit, raw),
        latency_s=latency_s,
        model=settings.model,
        http_calls=calls,
        refusal=refusal,
        meta={"id": getattr(raw, "id", None), "provider_model": getattr(raw, "model", None)},
    )


def _cost(lit: ModuleType, raw: Any) -> float | None:
    """USD from litellm's bundled price list; None when the model has no (or a zero) price."""
    try:
        cost = float(lit.completion_cost(completion_response=raw))
    except Exception:  # ModelNotMappedError and friends
        return None
    return cost if cost > 0 else None


def _positive(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _with_calls(exc: ModelTransientError | ModelRequestError, calls: int) -> Exception:
    """Attach how many HTTP requests the failed call made (the pass records it)."""
    exc.http_calls = calls  # type: ignore[attr-defined]
    return exc
