"""A call's room comes from the model's own limits, capped by the config's keys; unknown models get the fallback."""

from __future__ import annotations

import pytest

from daemon.llm.base import ModelSettings
from daemon.llm.limits import FALLBACK, MARGIN, ModelLimits, budget

KNOWN = ModelLimits(128_000, 16_384, "litellm's model info for openai/gpt-4o-mini")


def test_a_known_model_gets_its_window_less_the_reply_and_a_margin() -> None:
    b = budget(ModelSettings(model="openai/gpt-4o-mini"), KNOWN)
    assert (b.window, b.reply, b.source) == (128_000, 16_384, KNOWN.source)
    assert b.prompt == 128_000 - 16_384 - int(128_000 * MARGIN)


def test_an_unknown_model_gets_the_documented_fallback() -> None:
    b = budget(ModelSettings(model="openai/local-qwen"), None)
    assert (b.window, b.reply, b.source) == (8192, 2048, FALLBACK.source)
    assert b.prompt == 8192 - 2048 - int(8192 * MARGIN)


def test_context_window_declares_a_local_models_window() -> None:
    b = budget(ModelSettings(model="openai/local-qwen", context_window=32_768), None)
    assert (b.window, b.source) == (32_768, "context_window in the config")


@pytest.mark.parametrize(
    ("caps", "reply", "prompt"),
    [
        ({"max_output_tokens": 700}, 700, 128_000 - 700 - 3840),
        ({"tokens_per_call": 20_000}, 16_384, 20_000),
        ({"tokens_per_pass": 50_000}, 16_384, 50_000 - 16_384),
    ],
)
def test_the_config_keys_stay_caps(caps: dict[str, int], reply: int, prompt: int) -> None:
    b = budget(ModelSettings(model="openai/gpt-4o-mini", **caps), KNOWN)
    assert (b.reply, b.prompt) == (reply, prompt)


def test_a_cap_never_raises_a_limit() -> None:
    """A tokens_per_call or max_output_tokens above what the model takes is no use: the model's limit holds."""
    b = budget(ModelSettings(model="openai/gpt-4o-mini", tokens_per_call=10**7, max_output_tokens=10**6), KNOWN)
    assert b.reply == 16_384 and b.prompt == 128_000 - 16_384 - 3840


def test_litellm_knows_the_common_hosted_models_offline() -> None:
    """litellm's bundled model info (LITELLM_LOCAL_MODEL_COST_MAP=True): the figures a user meets."""
    from daemon.llm.litellm_client import LiteLLMClient

    client = LiteLLMClient()
    mini = client.limits(ModelSettings(model="openai/gpt-4o-mini"))
    assert mini is not None and (mini.max_input_tokens, mini.max_output_tokens) == (128_000, 16_384)
    assert client.limits(ModelSettings(model="openai/no-such-local-alias")) is None
