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
from pathlib import Path

import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = ROOT / "tests" / "claude_cli"
CLAUDE = CLI_DIR / "node_modules" / ".bin" / "claude"
MARKETPLACE = ROOT / "claude-plugin"
PINNED = json.loads((CLI_DIR / "package.json").read_text())["dependencies"]["@anthropic-ai/claude-code"]


def offline_env(home: Path, **extra: str) -> dict[str, str]:
    closed = f"http://127.0.0.1:{free_port()}"
    env = {
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

    def run_hook(self, event: str, payload: dict, *, url: str, token: str = "", timeout: float = 10):
        """Run the installed hook command for `event` as Claude Code does: a shell, the JSON on stdin."""
        env = offline_env(self.home, CLAUDE_PLUGIN_ROOT=str(self.root), HYPERGUILD_URL=url, HYPERGUILD_TOKEN=token)
        return subprocess.run(
            ["sh", "-c", self.command(event)],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="module")
def plugin_home(tmp_path_factory) -> Path:
    """A HOME where `claude plugin marketplace add` and `claude plugin install` ran (and succeeded)."""
    home = tmp_path_factory.mktemp("claude-home")
    added = claude(["plugin", "marketplace", "add", str(MARKETPLACE)], home)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = claude(["plugin", "install", "hyperguild@hyperguild"], home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return home


@pytest.fixture(scope="module")
def plugin(plugin_home) -> InstalledPlugin:
    return InstalledPlugin(plugin_home)


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
