"""A real browser (Debian's chromium, driven by Playwright) against the live ASGI server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
BRAIN_TOKEN = "e2e-brain-token"
PASSWORD = "e2e-reviewer-password"


@pytest.fixture
def live_ui(asgi_server, transactional_db, settings) -> Iterator[str]:
    from brain import bm25

    settings.BRAIN_MCP_TOKEN = BRAIN_TOKEN
    settings.BRAIN_EMBEDDER = "off"  # BM25 only: no embedding work queued by writes
    bm25.reset()
    yield asgi_server
    bm25.reset()


@pytest.fixture
def chromium(monkeypatch):
    """Debian's chromium, one browser for the test (pages and sizes are the test's own)."""
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # playwright's sync API runs an event loop in this thread
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop on this thread; Django then refuses the test's own
    # (plain, synchronous) ORM calls. They are safe here: nothing else runs on this thread.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(accept_downloads=True, viewport={"width": 1360, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def log_in(page, base_url: str, username: str, password: str = PASSWORD, next_url: str = "/") -> None:
    page.goto(f"{base_url}/admin/login/?next={next_url}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base_url}{next_url}")
