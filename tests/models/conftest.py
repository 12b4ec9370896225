"""Fixtures for the model-facing tests."""

from tests.core.conftest import child_env  # noqa: F401 - the environment for manage.py child processes
