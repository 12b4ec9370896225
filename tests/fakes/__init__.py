"""Shared test fakes: one fake-HTTP-server base and the servers built on it, helpers and fixtures.

- `http.FakeHTTPServer`: a threaded HTTP server on 127.0.0.1 that records requests; subclasses answer.
- `openai.FakeOpenAI`, `anthropic.FakeAnthropic`, `embed.FakeEmbedServer`, `reranker.FakeReranker`:
  the model services, in their own wire formats.
- `helpers`: `wait_for`, `tool_answer`, `run_skill_inline`, `start_qcluster`.
- `fixtures`: pytest fixtures (`fake_openai`, `gateway`), loaded by tests/conftest.py.
"""
