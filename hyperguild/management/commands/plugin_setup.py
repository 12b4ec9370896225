"""`manage.py plugin_setup`: how to connect Claude Code to this server (the plugins, or the endpoints).

The checkout path and the URL differ per machine, so the lines are printed for this one:
the `claude plugin` lines, the two environment variables the plugins read, which token
they need, and where the plugin keeps what it could not send (its spool) with the lines
that flush or clear it by hand. The serve banner prints the same lines.

The marketplace holds two plugins: `hyperguild` (the brain endpoint, the hooks, the loop
skill: every person) and `hyperguild-operator` (the supervisor and routing endpoints:
the roles that run skills). With `--user`, only what that person's role can use is
printed, so no endpoint they register shows as "Failed to connect" (issue 46).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError, CommandParser

from hyperguild.mcp.registry import Endpoint, all_endpoints
from hyperguild.providers import permission_refusal

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

PLUGIN_FOLDER = "claude-plugin"
DEFAULT_URL = "http://127.0.0.1:8000"
# Where the plugin's hook script keeps what the service did not take (HYPERGUILD_SPOOL_DIR moves it).
SPOOL_DIR = "~/.hyperguild/spool"


def claude_mcp_add_line(name: str, url: str, token_setting: str | None, token: str) -> str:
    """The `claude mcp add` line, in user scope (every project of this user, not just the current folder).

    The token is never printed (service logs keep the banner): the line reads it from the shell variable
    of the same name."""
    line = f"claude mcp add --scope user --transport http hyperguild-{name} {url}"
    if token:
        line += f' --header "Authorization: Bearer ${token_setting}"'
    return line


def marketplace_plugins(base_dir: Path | None = None) -> Mapping[str, list[str]]:
    """The marketplace's plugins, each with the endpoints it registers (its `.mcp.json` servers), in order."""
    folder = (base_dir or Path(settings.BASE_DIR)) / PLUGIN_FOLDER
    marketplace = json.loads((folder / ".claude-plugin" / "marketplace.json").read_text())
    plugins = {}
    for plugin in marketplace["plugins"]:
        servers = folder / plugin["source"] / ".mcp.json"
        plugins[plugin["name"]] = list(json.loads(servers.read_text())["mcpServers"]) if servers.exists() else []
    return plugins


def endpoint_usable(endpoint: Endpoint, user: User | AnonymousUser | None) -> bool:
    """Whether the person's role opens `endpoint` (its first scope: what its transport asks); no person: any role's."""
    if user is None or not endpoint.scopes:
        return True
    return bool(role_scopes(user, [endpoint.scopes[0]]))


def usable_endpoints(user: User | AnonymousUser | None = None) -> list[Endpoint]:
    return [endpoint for endpoint in all_endpoints() if endpoint_usable(endpoint, user)]


def plugin_install_lines(base_dir: Path | None = None, user: User | None = None) -> list[str]:
    """The marketplace line and one install line per plugin the person's role can use every endpoint of.

    Without a person: every plugin, the ones not every role can use marked as such."""
    folder = (base_dir or Path(settings.BASE_DIR)) / PLUGIN_FOLDER
    usable = {endpoint.name for endpoint in usable_endpoints(user)}
    anyone = {endpoint.name for endpoint in usable_endpoints(_any_account())}
    lines = [f"claude plugin marketplace add {shlex.quote(str(folder))}"]
    for name, endpoints in marketplace_plugins(base_dir).items():
        if not set(endpoints) <= usable:
            continue  # an endpoint of it would fail to connect with this person's token
        line = f"claude plugin install {name}@hyperguild"
        if user is None and not set(endpoints) <= anyone:
            line += f"   # operators only: the {' and '.join(endpoints)} endpoints"
        lines.append(line)
    return lines


def spool_file_name(url: str) -> str:
    """The spool file the hook script keeps for `url`: every byte outside [A-Za-z0-9.-] becomes '_' (its `tr -c`)."""
    return re.sub(rb"[^A-Za-z0-9.-]", b"_", url.rstrip("/").encode()).decode() + ".jsonl"


def installed_hook_script(base_dir: Path | None = None) -> str:
    """Where `claude plugin install` puts the hook script on the user's machine (the version is the plugin's)."""
    manifest = (base_dir or Path(settings.BASE_DIR)) / PLUGIN_FOLDER / "hyperguild" / ".claude-plugin" / "plugin.json"
    version = json.loads(manifest.read_text())["version"]
    return f"~/.claude/plugins/cache/hyperguild/hyperguild/{version}/hooks/hyperguild-hook"


def spool_lines(base: str) -> list[str]:
    script = installed_hook_script()
    return [
        f"Offline spool: what the hooks cannot deliver waits on your machine in {SPOOL_DIR}/{spool_file_name(base)} "
        "(HYPERGUILD_SPOOL_DIR moves the folder; HYPERGUILD_SPOOL_MAX_BYTES caps it, default 5 MiB) and goes with "
        "the next hook that reaches this server. By hand, with the same HYPERGUILD_URL:",
        f"    sh {script} status   # where it is and what waits",
        f"    sh {script} flush    # send it now",
        f"    sh {script} clear    # throw it away",
    ]


PLUGIN_SCOPES = ("brain:read", "brain:write", "sessions:write", "supervisor:run", "routing:run")


def _any_account() -> AnonymousUser:
    """An active account with no role, for role_scopes (AnonymousUser says is_active False)."""
    user = AnonymousUser()
    user.is_active = True  # type: ignore[assignment]  # deliberately overridden on this instance
    return user


def plugin_scopes(user: User | AnonymousUser | None = None) -> list[str]:
    """The plugin's scopes a person's role allows now (people.permissions); without a person, those every account may hold."""
    # Without a person: every active account's; a person with a role adds theirs (docs/people.md).
    return role_scopes(user if user is not None else _any_account(), list(PLUGIN_SCOPES))


def plugin_token_advice(endpoints: list[Endpoint], user: User | None = None) -> str:
    """Which token HYPERGUILD_TOKEN must hold: the plugin sends one token to the three endpoints and the hooks.

    Only the scopes the person's role allows (a token can hold no more); without a person, those any account may
    hold, and which roles add the others."""
    scopes = plugin_scopes(user)
    who = user.get_username() if user is not None else "USERNAME"
    more = [scope for scope in PLUGIN_SCOPES if scope not in scopes]
    personal = (
        "HYPERGUILD_TOKEN: "
        + ("the" if user is not None else "your")
        + f" personal token with the scopes {' '.join(scopes)}"
        + (f" (the scopes {who}'s role allows)" if user is not None else "")
        + f" (make it on the Tokens page, /tokens/, or with `manage.py token create {who} "
        + " ".join(f"--scope {scope}" for scope in scopes)
        + "`)"
    )
    if more and user is None:
        personal += (
            f"; add {' '.join(more)} if your role allows them (writing notes: member, reviewer or curator; "
            "skills: operator)"
        )
    tokens = {endpoint.token_setting: endpoint.token() for endpoint in endpoints if endpoint.token_setting}
    set_tokens = {name: value for name, value in tokens.items() if value}
    if not set_tokens:
        return personal + "; or leave it empty (this server has no environment tokens set)."
    names = ", ".join(tokens)
    if len(set(tokens.values())) == 1:
        return personal + f"; or the service's own token, the value of {names} (all the same here)."
    return (
        personal + f"; the service's own tokens {names} differ here, so none of them opens every endpoint "
        "and the hooks (the hooks use BRAIN_MCP_TOKEN's): give them one value, or add the endpoints one by one "
        "with the lines above."
    )


def setup_lines(base: str, user: User | None = None) -> list[str]:
    """What a user on another machine needs, as lines to print (no secret among them); `user`: for that person,
    only the plugins and endpoints their role can use."""
    endpoints = usable_endpoints(user)
    lines = [
        "Claude Code plugins (hyperguild: the brain, hooks that log each session and bring the project's notes "
        "in, the loop skill; hyperguild-operator: the supervisor and routing endpoints):"
    ]
    lines += [f"    {line}" for line in plugin_install_lines(user=user)]
    url_line = f"    export HYPERGUILD_URL={shlex.quote(base)}"
    if base.rstrip("/") == DEFAULT_URL:
        url_line += "   # the default; needed only for another address"
    lines += [url_line, f"    {plugin_token_advice(all_endpoints(), user)}"]
    lines += spool_lines(base)
    lines.append(
        "Or only the endpoints, for every project of this user (--scope user; without it `claude mcp add` "
        "adds a server to the current folder only):"
    )
    for endpoint in endpoints:
        url = f"{base}/mcp/{endpoint.name}"
        lines.append(f"    {claude_mcp_add_line(endpoint.name, url, endpoint.token_setting, endpoint.token())}")
    return lines


def role_scopes(user: User | AnonymousUser | None, scopes: list[str]) -> list[str]:
    """Of `scopes`, those the person's role allows now (the people app's check: a browser's rule, role only)."""
    return [scope for scope in scopes if permission_refusal(user, scope) is None]


def local_host(host: str) -> str:
    """The address a client on this machine uses for a server bound to `host`."""
    return "127.0.0.1" if host in ("0.0.0.0", "::", "") else host


class Command(BaseCommand):
    help = "Print how to connect Claude Code to this server: the plugin's two lines, its settings, the endpoints."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url",
            default=settings.HYPERGUILD_PUBLIC_URL
            or f"http://{local_host(settings.HYPERGUILD_HOST)}:{settings.HYPERGUILD_PORT}",
            help="the server's address as Claude Code reaches it (default: HYPERGUILD_PUBLIC_URL, else host:port)",
        )
        parser.add_argument(
            "--user", default="", help="the person the token is for: ask only for the scopes their role allows"
        )

    def handle(self, *args: Any, url: str, user: str = "", **options: Any) -> None:
        person = None
        if user:
            person = get_user_model().objects.filter(username=user).first()
            if person is None:
                raise CommandError(f"No account called {user!r}; create it in the admin first.")
        for line in setup_lines(url.rstrip("/"), person):
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS("docs/plugin.md explains each step."))
