"""Fakes of the model port that ship with the package, so tests, the eval harness and the
benchmark run without a network or a model.

- ``FakeModel``: replies queued by the test, in order; every request kept for assertions.
- ``ReplayModel``: replies recorded in a versioned JSON file, looked up by ``replay_key(request)``;
  an unknown request gets an empty proposal list (and is counted), never an exception, so that a
  replayed eval over a changed corpus degrades instead of crashing.
- ``RecordingClient``: wraps a real client and writes what it answered into such a file.

File format (``v`` is checked; a newer file is refused)::

    {"v": 1, "model": "openai/gpt-4o-mini",
     "limits": {"max_input_tokens": 128000, "max_output_tokens": 16384, "source": "..."},
     "replies": {"<key>": {"text": "...", "prompt_tokens": 812, "completion_tokens": 95,
                           "finish_reason": "stop"}}}

``limits`` (optional) is what the recorded client knew of the model: a replay packs its calls
with the same room, so it asks for the same keys.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.core.errors import ConfigError
from daemon.llm.base import ModelClient, ModelRequest, ModelResponse, ModelSettings
from daemon.llm.limits import ModelLimits

REPLAY_VERSION = 1
EMPTY_REPLY = '{"proposals": []}'


def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for budgets and benchmarks of fakes."""
    return len(text) // 4


def prompt_text(request: ModelRequest) -> str:
    return "\n".join([request.system, request.user, *(m.get("content", "") for m in request.extra_messages)])


def replay_key(request: ModelRequest) -> str:
    """``request.key``; a repair turn gets a suffix of its own (it must not replay the first answer);
    a request without a key is keyed by a hash of its prompt."""
    key = request.key or "prompt:" + _digest(request.system, request.user)
    if request.extra_messages:
        key += "#" + _digest(json.dumps(request.extra_messages, sort_keys=True))
    return key


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Reply:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str
    cost: float | None
    refusal: str | None


class FakeModel:
    """Answers with queued replies, in order; raises queued errors; records every request.
    ``known`` is what it says of the model's limits (None: nothing, as for an unknown model)."""

    def __init__(self, known: ModelLimits | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self._queue: deque[_Reply | BaseException] = deque()
        self.known = known

    def limits(self, settings: ModelSettings) -> ModelLimits | None:
        return self.known

    def enqueue(
        self,
        text: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        finish_reason: str = "stop",
        cost: float | None = None,
        refusal: str | None = None,
    ) -> FakeModel:
        """Queue one reply; token counts left out are estimated from the texts."""
        self._queue.append(_Reply(text, prompt_tokens, completion_tokens, finish_reason, cost, refusal))
        return self

    def enqueue_error(self, exc: BaseException) -> FakeModel:
        """Queue an exception (e.g. ``ModelTransientError``) that the next call raises."""
        self._queue.append(exc)
        return self

    @property
    def pending(self) -> int:
        return len(self._queue)

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        self.requests.append(request)
        if not self._queue:
            raise RuntimeError("FakeModel: no reply queued")
        item = self._queue.popleft()
        if isinstance(item, BaseException):
            raise item
        return ModelResponse(
            text=item.text,
            finish_reason=item.finish_reason,
            prompt_tokens=estimate_tokens(prompt_text(request)) if item.prompt_tokens is None else item.prompt_tokens,
            completion_tokens=estimate_tokens(item.text) if item.completion_tokens is None else item.completion_tokens,
            cost=item.cost,
            latency_s=0.0,
            model=settings.model,
            refusal=item.refusal,
            meta={"fake": True},
        )


class ReplayModel:
    """Answers from recorded replies keyed by ``replay_key(request)``; unknown keys are misses."""

    def __init__(self, replies: dict[str, dict[str, Any]] | None = None, model: str = "", known: ModelLimits | None = None) -> None:
        self.replies: dict[str, dict[str, Any]] = dict(replies or {})
        self.model = model
        self.known = known
        self.requests: list[ModelRequest] = []
        self.misses = 0
        self.missed_keys: list[str] = []

    def limits(self, settings: ModelSettings) -> ModelLimits | None:
        return self.known

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ReplayModel:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"replay file {path}: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("replies"), dict):
            raise ConfigError(f"replay file {path}: not a replay file (no 'replies' object)")
        if data.get("v") != REPLAY_VERSION:
            raise ConfigError(f"replay file {path}: version {data.get('v')!r}, this dreamd reads {REPLAY_VERSION}")
        return cls(data["replies"], model=str(data.get("model", "")), known=_limits_of(data.get("limits"), path))

    def record(
        self,
        request: ModelRequest | str,
        reply: ModelResponse | str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        finish_reason: str = "stop",
    ) -> None:
        """Store a reply for a request (or a key); a ModelResponse brings its own counts."""
        key = request if isinstance(request, str) else replay_key(request)
        if isinstance(reply, ModelResponse):
            entry: dict[str, Any] = {
                "text": reply.text,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "finish_reason": reply.finish_reason,
            }
            if reply.refusal:
                entry["refusal"] = reply.refusal
        else:
            entry = {"text": reply, "finish_reason": finish_reason}
            if prompt_tokens is not None:
                entry["prompt_tokens"] = prompt_tokens
            if completion_tokens is not None:
                entry["completion_tokens"] = completion_tokens
        self.replies[key] = entry

    def to_json(self) -> dict[str, Any]:
        limits = {} if self.known is None else {"limits": {"max_input_tokens": self.known.max_input_tokens, "max_output_tokens": self.known.max_output_tokens, "source": self.known.source}}
        return {"v": REPLAY_VERSION, "model": self.model, **limits, "replies": dict(sorted(self.replies.items()))}

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file atomically (a crash mid-recording keeps the previous version)."""
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, target)

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        self.requests.append(request)
        key = replay_key(request)
        entry = self.replies.get(key)
        if entry is None:
            self.misses += 1
            self.missed_keys.append(key)
            return _replayed(EMPTY_REPLY, 0, 0, "stop", None, settings, hit=False)
        text = str(entry.get("text", ""))
        prompt = entry.get("prompt_tokens")
        completion = entry.get("completion_tokens")
        return _replayed(
            text,
            estimate_tokens(prompt_text(request)) if prompt is None else int(prompt),
            estimate_tokens(text) if completion is None else int(completion),
            str(entry.get("finish_reason") or "stop"),
            entry.get("refusal"),
            settings,
            hit=True,
        )


def _limits_of(raw: Any, path: str | os.PathLike[str]) -> ModelLimits | None:
    if raw is None:
        return None
    ok = isinstance(raw, dict) and all(raw.get(k) is None or (isinstance(raw.get(k), int) and raw[k] > 0) for k in ("max_input_tokens", "max_output_tokens"))
    if not ok:
        raise ConfigError(f"replay file {path}: 'limits' must hold positive max_input_tokens and max_output_tokens")
    return ModelLimits(raw.get("max_input_tokens"), raw.get("max_output_tokens"), str(raw.get("source") or f"recorded in {path}"))


def _replayed(
    text: str, prompt: int, completion: int, finish: str, refusal: str | None, settings: ModelSettings, *, hit: bool
) -> ModelResponse:
    return ModelResponse(
        text=text,
        finish_reason=finish,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=None,
        latency_s=0.0,
        model=settings.model,
        refusal=refusal,
        meta={"replay": "hit" if hit else "miss"},
    )


class RecordingClient:
    """Passes requests to a real client and saves each answer into a replay file (for CI replays)."""

    def __init__(self, inner: ModelClient, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self.replay = ReplayModel.load(self.path) if self.path.exists() else ReplayModel()

    def complete(self, request: ModelRequest, settings: ModelSettings) -> ModelResponse:
        response = self.inner.complete(request, settings)
        self.replay.model = self.replay.model or settings.model
        self.replay.record(request, response)
        self.replay.save(self.path)
        return response

    def count_tokens(self, text: str, settings: ModelSettings) -> int:
        counter = getattr(self.inner, "count_tokens", None)
        return int(counter(text, settings)) if counter else estimate_tokens(text)

    def limits(self, settings: ModelSettings) -> ModelLimits | None:
        """The inner client's, kept in the file so that its replay packs calls alike."""
        known = getattr(self.inner, "limits", lambda _s: None)(settings)
        if known != self.replay.known:
            self.replay.known = known
            self.replay.save(self.path)
        return known
