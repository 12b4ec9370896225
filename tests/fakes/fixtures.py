"""Fixtures shared across test folders (loaded by tests/conftest.py as a pytest plugin)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible gateway on 127.0.0.1, not wired into the settings."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def gateway(fake_openai: FakeOpenAI, settings) -> FakeOpenAI:
    """The fake gateway as the service's LLM gateway (LITELLM_BASE_URL), with no retries."""
    settings.LITELLM_BASE_URL = fake_openai.url
    settings.LITELLM_API_KEY = "sk-gateway"
    settings.HYPERGUILD_HTTP_RETRIES = 0
    settings.HYPERGUILD_HTTP_TIMEOUT = 10.0
    return fake_openai
