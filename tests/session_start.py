"""The test session's entry point: loaded by `-p tests.session_start` (pyproject addopts) before pytest-django
reads the settings, it starts what every entry point starts (`hyperguild.boot.prepare_process()`: the secret
key, and without DATABASE_URL the embedded PostgreSQL), in the main process and in each xdist worker."""

from __future__ import annotations

import pytest

from hyperguild.boot import prepare_process, release_process


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    # tryfirst: before pytest-django's own hook, which loads the settings and sets Django up.
    prepare_process()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    # The embedded PostgreSQL this session had to start stops with it (with xdist, the controller started it
    # before its workers and ends after them; a worker that found it running leaves it alone).
    release_process()
