"""The real Claude Code CLI (tests/claude_cli, pinned, installed by `make test`) with the plugin installed.

Every CLI run gets a temporary HOME and an environment that keeps it on this
machine: no auto-update, telemetry or error reports, the model API pointed at
a closed local port, and an HTTP(S) proxy that does not exist for everything
but 127.0.0.1, so nothing it tries can leave the machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ThreadedServer, free_port

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = ROOT / "tests" / "claude_cli"
CLAUDE = CLI_DIR / "node_modules" / ".bin" / "claude"
MARKETPLACE = ROOT / "claude-plugin"
PINNED = json.loads((CLI_DIR / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]


# The plugin's spool folder for the current test (see spool_of_each_test).
_test_spool: list[Path] = []


def offline_env(home: Path, **extra: str) -> dict[str, str]:
    closed = f"http://127.0.0.1:{free_port()}"
    env = {
        "HYPERGUILD_SPOOL_DIR": str(_test_spool[-1]) if _test_spool else "",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "ANTHROPIC_BASE_URL": closed,
        "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed,
        "http_proxy": closed,
        "https_proxy": closed,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    env.update(extra)
    return env


def claude(args: list[str], home: Path, *, cwd: Path | None = None, timeout: float = 120, **env: str):
    assert CLAUDE.exists(), "run `make test` (it installs tests/claude_cli with npm ci)"
    return subprocess.run(
        [str(CLAUDE), *args],
        cwd=cwd or home,
        env=offline_env(home, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


class InstalledPlugin:
    """The plugin as `claude plugin install` left it under a temporary HOME."""

    def __init__(self, home: Path):
        self.home = home
        installed = json.loads((home / ".claude" / "plugins" / "installed_plugins.json").read_text())
        entries = installed["plugins"]["hyperguild@hyperguild"]
        self.root = Path(entries[0]["installPath"])
        self.hooks = json.loads((self.root / "hooks" / "hooks.json").read_text())["hooks"]

    def command(self, event: str) -> str:
        return self.hooks[event][0]["hooks"][0]["command"]

    def hook_env(self, url: str, token: str = "", **extra: str) -> dict[str, str]:
        return offline_env(
            self.home, CLAUDE_PLUGIN_ROOT=str(self.root), HYPERGUILD_URL=url, HYPERGUILD_TOKEN=token, **extra
        )

    def run_hook(self, event: str, payload: dict, *, url: str, token: str = "", timeout: float = 10, **extra: str):
        """Run the installed hook command for `event` as Claude Code does: a shell, the JSON on stdin."""
        env = self.hook_env(url, token, **extra)
        return subprocess.run(
            ["sh", "-c", self.command(event)],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


class ServiceAt:
    """The service (the real ASGI app) at an address of its own, stopped until `start()`."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server: ThreadedServer | None = None

    def start(self) -> None:
        from hyperguild.asgi import application

        self.server = ThreadedServer(application, self.port)
        self.server.start()
        # Up means answering: the first requests of a fresh process (database connections, the search
        # index) would take part of a hook's 2 s, and the test is about the spool, not a cold start.
        for _ in range(2):
            httpx.get(f"{self.url}/health", timeout=30)
            httpx.post(f"{self.url}/api/hooks/SessionStart", json={"cwd": "/warm/up", "source": "startup"}, timeout=30)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


@pytest.fixture
def service():
    """A service that is down until the test starts it, at the same URL the hooks were given."""
    at = ServiceAt()
    yield at
    at.stop()


@pytest.fixture(scope="module")
def plugin_home(tmp_path_factory) -> Path:
    """A HOME where `claude plugin marketplace add` and `claude plugin install` ran (and succeeded)."""
    home = tmp_path_factory.mktemp("claude-home")
    added = claude(["plugin", "marketplace", "add", str(MARKETPLACE)], home)
    assert added.returncode == 0, added.stdout + added.stderr
    for plugin in ("hyperguild@hyperguild", "hyperguild-operator@hyperguild"):  # an operator's set-up: every endpoint
        installed = claude(["plugin", "install", plugin], home)
        assert installed.returncode == 0, installed.stdout + installed.stderr
    return home


@pytest.fixture(scope="module")
def plugin(plugin_home) -> InstalledPlugin:
    return InstalledPlugin(plugin_home)


@pytest.fixture(autouse=True)
def spool_of_each_test(tmp_path):
    """Each test's hooks spool in a folder of their own (HYPERGUILD_SPOOL_DIR; "" in a test's env means the
    default under HOME), so what one test left unsent never reaches another test's service; and no
    background sender outlives its test."""
    folder = tmp_path / "hook-spool"
    _test_spool.append(folder)
    yield folder
    _test_spool.remove(folder)
    deadline = time.monotonic() + 30
    while folder.exists() and any(path.suffix in (".lock", ".flush-lock") for path in folder.iterdir()):
        assert time.monotonic() < deadline, "a hook's background sender kept its lock"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def quiet_services(settings):
    """No embedder, reranker or LLM: the brain answers from BM25, the retrospective from rules."""
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_ANSWER_MODEL = ""
    settings.LITELLM_BASE_URL = ""
    settings.BRAIN_MCP_TOKEN = ""
    settings.SUPERVISOR_MCP_TOKEN = ""
    settings.ROUTING_MCP_TOKEN = ""
