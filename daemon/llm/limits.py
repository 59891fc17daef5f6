"""How much one call may send and receive: the model's own limits, capped by the user's keys.

Today's models read 128k to 1M tokens; a fixed per-call budget of a few thousand tokens cuts
a small store into groups that never show the model two notes a person would merge. So the
budgets come from the model: ``ModelLimits`` is what a client knows of it (litellm's model
info: ``max_input_tokens``, ``max_output_tokens``), and ``budget`` turns it into the room a
call has, after the config's keys, which stay as caps:

- ``context_window`` declares the window of a model litellm does not know (a local server);
- ``max_output_tokens`` caps the reply, ``tokens_per_call`` the prompt, ``tokens_per_pass``
  a whole pass (prompts and replies), ``cost_per_pass`` its money.

A model no one knows gets ``FALLBACK``: a window of 8,192 tokens and a reply of 2,048, small
enough for the local servers that run with their default context, so an unknown model is
never sent more than it can read. The reply's room comes out of the window (providers count
the prompt and the reply against one context), and ``MARGIN`` of it is left for the
difference between dreamd's token count and the provider's.
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.llm.base import ModelSettings

MARGIN = 0.03  # of the window: tokenizers disagree a little, chat wrappers add a few tokens
MIN_REPLY = 256  # the least reply room a small window is left with (unless a cap says less)


@dataclass(frozen=True)
class ModelLimits:
    """What is known of a model: its window (prompt and reply together) and its longest reply."""

    max_input_tokens: int | None
    max_output_tokens: int | None
    source: str  # where the figures come from, said in the pass's report


FALLBACK = ModelLimits(8192, 2048, "fallback for a model whose limits are unknown")


@dataclass(frozen=True)
class Budget:
    """The room of one call and of a pass, as a pass plans with it."""

    window: int  # the model's context: prompt and reply
    reply: int  # max_output_tokens asked of every call
    prompt: int  # tokens the prompt of one call may take
    per_pass: int  # prompt and reply tokens of the whole pass
    source: str

    def describe(self) -> dict[str, int | str]:
        return {"window": self.window, "reply": self.reply, "prompt": self.prompt, "per_pass": self.per_pass, "source": self.source}


def budget(settings: ModelSettings, known: ModelLimits | None) -> Budget:
    """The budgets of a pass with ``settings`` on a model of which ``known`` is known (None: nothing)."""
    window, source = _window(settings, known)
    out_limit = (known.max_output_tokens if known and known.max_output_tokens else None) or FALLBACK.max_output_tokens
    reply = min(out_limit, max(MIN_REPLY, window // 2))
    if settings.max_output_tokens:  # the user's cap, even below MIN_REPLY: theirs to set
        reply = min(reply, settings.max_output_tokens)
    prompt = window - reply - int(window * MARGIN)
    if settings.tokens_per_call is not None:
        prompt = min(prompt, settings.tokens_per_call)
    prompt = max(0, min(prompt, settings.tokens_per_pass - reply))
    return Budget(window, reply, prompt, settings.tokens_per_pass, source)


def _window(settings: ModelSettings, known: ModelLimits | None) -> tuple[int, str]:
    if settings.context_window:
        return settings.context_window, "context_window in the config"
    if known is not None and known.max_input_tokens:
        return known.max_input_tokens, known.source
    assert FALLBACK.max_input_tokens is not None
    return FALLBACK.max_input_tokens, FALLBACK.source
