"""Fixtures for the model adapter: litellm imported once, HTTP intercepted by respx, no network.

respx patches httpx's transports, which carry both litellm's OpenAI-SDK path (openai/...) and its
own handler (anthropic/...). Anything that still tries to open a socket fails the test.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import respx

from .helpers import KEY_VAR, SECRET


@pytest.fixture(scope="session")
def lit() -> ModuleType:
    """litellm, imported once per session (the import takes seconds)."""
    from daemon.llm.litellm_client import _litellm

    return _litellm()


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, lit: ModuleType) -> None:
    """No socket opens, litellm stays synchronous on httpx, and only the test key exists."""

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a test tried to reach the network: {address!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("DISABLE_AIOHTTP_TRANSPORT", "True")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_VAR, SECRET)


@pytest.fixture
def http() -> Iterator[respx.MockRouter]:
    """A respx router; unmatched requests fail, unused routes do not."""
    with respx.mock(assert_all_called=False, assert_all_mocked=True) as router:
        yield router


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def client(sleeps: list[float]) -> Any:
    from daemon.llm.litellm_client import LiteLLMClient

    return LiteLLMClient(sleep=sleeps.append)
