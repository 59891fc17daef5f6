"""The one place where litellm's exceptions become dreamd's.

litellm raises subclasses of the OpenAI SDK's exceptions for every provider, but not always the
class one expects (a 403 arrives as a bare ``APIError``, a 502 as ``BadGatewayError``, a missing
key as a 500 ``InternalServerError``), so the decision also looks at ``status_code``:

    timeout, connection error, 408, 429, 5xx  ->  ModelTransientError  (retried, bounded)
    context window exceeded, missing key,
    401, 403, 400, 404, 422, anything else    ->  ModelRequestError    (fails at once)

Messages are one line, name the model, and never contain the key: providers echo keys back
(masked or not) and the SDK exception holds the HTTP request with its Authorization header,
which is why the mapped error is raised ``from None`` instead of chaining the original.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from daemon.core.errors import ModelRequestError, ModelTransientError, PlannerError

RETRYABLE_STATUS = frozenset({408, 429})
_MAX_DETAIL = 240
_PREFIX = re.compile(r"^(?:litellm\.\w+:\s*|\w+Error:\s*|\w+Exception\s*-\s*)+")
_KEYLIKE = re.compile(r"\b(?:sk|pk|rk|key|token)[-_][A-Za-z0-9_\-*.]{6,}", re.IGNORECASE)
_MISSING_KEY = ("missing credentials", "api_key client option must be set", "missing api key")


def scrub(text: str, secret: str | None) -> str:
    """One line, without the key or anything that looks like one, of bounded length."""
    if secret:
        text = text.replace(secret, "[redacted]")
    text = _KEYLIKE.sub("[redacted]", text)
    text = " ".join(text.split())
    text = _PREFIX.sub("", text)
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 1] + "…"


def is_transient(exc: BaseException, lit: ModuleType) -> bool:
    """Whether another attempt may succeed (timeouts, rate limits, server errors)."""
    errors = lit.exceptions
    if isinstance(exc, errors.ContextWindowExceededError):
        return False
    if any(marker in str(exc).lower() for marker in _MISSING_KEY):
        return False  # the SDK's "no key" arrives as a 500; retrying cannot help
    if isinstance(exc, (errors.Timeout, errors.APIConnectionError, errors.RateLimitError)):
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in RETRYABLE_STATUS or status >= 500)


def translate(exc: BaseException, lit: ModuleType, model: str, secret: str | None) -> PlannerError:
    """The dreamd error for one failed litellm call."""
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    where = f"{kind} {status}" if isinstance(status, int) else kind
    detail = scrub(str(exc), secret)
    message = f"model {model}: {where}: {detail}" if detail else f"model {model}: {where}"
    if is_transient(exc, lit):
        return ModelTransientError(message)
    hint = None
    if status in (401, 403) or any(marker in str(exc).lower() for marker in _MISSING_KEY):
        hint = "check the key variable named by api_key_env"
    elif isinstance(exc, lit.exceptions.ContextWindowExceededError):
        hint = "the model reads less than dreamd assumed: set context_window (or tokens_per_call) in [llm]"
    return ModelRequestError(message, hint=hint)


@contextmanager
def mapped_errors(lit: ModuleType, model: str, secret: str | None) -> Iterator[None]:
    """Turn whatever litellm (or the OpenAI SDK under it) raises into a PlannerError.

    Only litellm's and the SDK's exceptions are mapped; a TypeError or the like is a bug in
    dreamd and keeps its traceback.
    """
    try:
        yield
    except PlannerError:
        raise
    except Exception as exc:
        import openai  # loaded with litellm; every litellm exception of a call derives from it

        if not isinstance(exc, openai.OpenAIError):
            raise
        raise translate(exc, lit, model, secret) from None
