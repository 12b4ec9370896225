"""Moving a team from the Go hyperguild: `manage.py migrate_from_go DIR [--env FILE] [--models FILE]`.

    report = migrate_from_go(Path("/srv/go-brain"), env_file=Path("/srv/go/.env"))
    print(report.lines())

It imports the Go brain folder (notes and `sessions/*.jsonl`, plus the Go
`SUPERVISOR_SESSIONS_DIR` when that is elsewhere) through the same code as
`brain_import`, reads the Go `.env` and `models.yaml` without changing the
running configuration, and reports what it took, what it mapped, what it
cannot use, and the exact lines to put in our environment. Every step is
idempotent: a second run imports nothing new and prints the same lines.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from brain.folder import FolderError, ProgressWrapper, import_folder
from brain.models import AreaDescription
from hyperguild.lib.env import GO_ALIASES, go_hybrid_rule
from sessions.folder import import_sessions_dir
from supervisor.discipline_files import GO_RULES, GO_TDD
from supervisor.model_table import TDD_KEY, ModelTableError, is_gateway_model, load_table
from supervisor.skills import SKILLS

ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
ENV_EXAMPLE = Path(settings.BASE_DIR) / ".env.example"
# Paths in a Go .env are relative to the .env's folder; ours are absolute.
PATH_VARIABLES = {"BRAIN_DIR", "BRAIN_SESSIONS_DIR", "SUPERVISOR_CONFIG_DIR", "SUPERVISOR_MODELS_FILE"}


class GoMigrationError(ValueError):
    """The Go folder or files cannot be read at all (nothing was imported)."""


@dataclass
class GoMigrationReport:
    took: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    cannot_use: list[str] = field(default_factory=list)
    env_lines: list[str] = field(default_factory=list)
    changes: int = 0

    def add_env(self, name: str, value: str) -> None:
        line = f"{name}={_quote(value)}"
        if line not in self.env_lines:
            self.env_lines.append(line)


def _quote(value: str) -> str:
    return value if re.fullmatch(r"[A-Za-z0-9_./:@,+=%-]*", value) else shlex.quote(value)


def parse_env_file(path: Path) -> Mapping[str, str]:
    """`KEY=value` lines of a .env (comments, `export`, quotes); later lines win, like a shell."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GoMigrationError(f"{path} cannot be read: {exc}") from exc
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = ENV_LINE.match(line)
        if not match:
            raise GoMigrationError(f"{path}:{number} is not a KEY=value line: {line.strip()[:80]!r}")
        name, value = match.groups()
        if value[:1] in {'"', "'"}:
            quote = value[0]
            end = value.find(quote, 1)
            if end == -1:
                raise GoMigrationError(f"{path}:{number}: the quote in {name}= is never closed")
            value = value[1:end]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        values[name] = value
    return values


def our_variable_names() -> set[str]:
    names = set(GO_ALIASES)
    if ENV_EXAMPLE.is_file():
        names |= set(re.findall(r"^([A-Z][A-Z0-9_]*)=", ENV_EXAMPLE.read_text(encoding="utf-8"), re.MULTILINE))
    return names


def _absolute(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def migrate_from_go(
    directory: Path,
    *,
    env_file: Path | None = None,
    models_file: Path | None = None,
    progress: ProgressWrapper | None = None,
) -> GoMigrationReport:
    directory = Path(directory)
    if not directory.is_dir():
        raise GoMigrationError(
            f"{directory} is not a folder: give the Go brain folder (the one holding wiki/ and raw/)"
        )
    go_env = parse_env_file(env_file) if env_file else {}
    if models_file is None:
        for candidate in ([env_file.parent / "models.yaml"] if env_file else []) + [directory / "models.yaml"]:
            if candidate.is_file():
                models_file = candidate
                break
    report = GoMigrationReport()
    _import_brain(directory, go_env, env_file, report, progress)
    if env_file:
        _map_environment(go_env, env_file.parent.resolve(), directory, report)
    else:
        report.cannot_use.append("no --env FILE given: the Go configuration was not read")
        report.add_env("BRAIN_DIR", str(directory.resolve()))
    _map_models(models_file, go_env, report)
    return report


# -- the folder ------------------------------------------------------------------------------


def _import_brain(
    directory: Path,
    go_env: Mapping[str, str],
    env_file: Path | None,
    report: GoMigrationReport,
    progress: ProgressWrapper | None,
) -> None:
    try:
        summary = import_folder(directory, progress=progress) if progress else import_folder(directory)
    except FolderError as exc:
        raise GoMigrationError(str(exc)) from exc
    report.changes += summary.added + summary.updated
    report.took.append(
        f"notes from {directory}: added {summary.added}, updated {summary.updated}, unchanged {summary.unchanged}"
    )
    report.changes += summary.descriptions
    descriptions = AreaDescription.objects.count()
    report.took.append(
        f"wing/hall descriptions from _index.md: {descriptions} ({summary.descriptions} added or changed)"
    )
    for name, message in summary.errors:
        report.cannot_use.append(f"{name}: {message}")
    for line in summary.ambiguous_links:
        report.mapped.append(line)
    if isinstance(summary.sessions, dict):
        _took_sessions(directory / "sessions", summary.sessions, report)
    # The Go supervisor could keep session logs outside the brain folder.
    go_sessions = go_env.get("SUPERVISOR_SESSIONS_DIR")
    if go_sessions and env_file:
        folder = Path(_absolute(go_sessions, env_file.parent.resolve()))
        if folder.resolve() != (directory / "sessions").resolve():
            if folder.is_dir():
                _took_sessions(folder, import_sessions_dir(folder), report)
            else:
                report.cannot_use.append(
                    f"SUPERVISOR_SESSIONS_DIR={go_sessions}: {folder} is not a folder, no sessions read"
                )
    training = directory / "training-data"
    if training.is_dir():
        files = sorted(p.name for p in training.iterdir() if p.is_file())
        report.cannot_use.append(
            f"training-data/ ({', '.join(files) or 'empty'}): not imported; training examples come from runs the "
            "supervisor verified here (manage.py trainer_extract), and the mirror writes the approved ones back"
        )


def _took_sessions(folder: Path, summary: Mapping[str, Any], report: GoMigrationReport) -> None:
    report.changes += summary.get("entries_created", 0)
    report.took.append(
        f"sessions from {folder}: {summary.get('files', 0)} file(s), {summary.get('entries_created', 0)} new entries, "
        f"{summary.get('entries_existing', 0)} already here"
    )
    for error in summary.get("errors", []):
        report.cannot_use.append(f"sessions/{error['file']}: {error['error']}")


# -- the .env --------------------------------------------------------------------------------


def _map_environment(go_env: Mapping[str, str], base: Path, directory: Path, report: GoMigrationReport) -> None:
    ours = our_variable_names()
    alias_of = {alias: name for name, aliases in GO_ALIASES.items() for alias in aliases}
    given: dict[str, str] = {}
    for name, value in go_env.items():
        if name in alias_of:
            target = alias_of[name]
            if target in go_env:
                report.cannot_use.append(f"{name}: {target} is also set in the .env and wins")
                continue
            if target in given:
                report.cannot_use.append(
                    f"{name}: {target} already comes from another Go name (one port and URL serve every endpoint here)"
                )
                continue
            if target in PATH_VARIABLES:
                value = _absolute(value, base)
            given[target] = value
            report.mapped.append(f"{name} → {target}")
        elif name in ours:
            if name in PATH_VARIABLES and value:
                value = _absolute(value, base)
            given[name] = value
            report.took.append(f"{name} (same name here)")
        else:
            report.cannot_use.append(f"{name}: not read by this service")
    if "BRAIN_DIR" not in given:
        given["BRAIN_DIR"] = str(directory.resolve())
        report.mapped.append(f"the folder you gave → BRAIN_DIR (the mirror keeps {directory} in step)")
    embedder, problem = go_hybrid_rule({**go_env, **given})
    if embedder:
        given["BRAIN_EMBEDDER"] = embedder
        report.mapped.append("BRAIN_PG_DSN + BRAIN_EMBED_URL → BRAIN_EMBEDDER=ollama (hybrid search, as in Go)")
    elif problem:
        report.cannot_use.append(problem)
    config_dir = given.get("SUPERVISOR_CONFIG_DIR")
    if config_dir:
        folder = Path(config_dir)
        found = [name for name in (GO_RULES, GO_TDD) if (folder / name).is_file()]
        if found:
            report.mapped.append(f"SUPERVISOR_CONFIG_DIR in the Go layout ({', '.join(found)}) is read as it is")
        elif not folder.is_dir():
            report.cannot_use.append(f"SUPERVISOR_CONFIG_DIR={config_dir}: not a folder")
    for name, value in given.items():
        report.add_env(name, value)


# -- models.yaml -------------------------------------------------------------------------


def _map_models(models_file: Path | None, go_env: Mapping[str, str], report: GoMigrationReport) -> None:
    if models_file is None:
        report.cannot_use.append("no models.yaml found (next to the .env or in the folder): the model table stays ours")
        return
    try:
        table = load_table(models_file)
        raw_skills = (yaml.safe_load(models_file.read_text(encoding="utf-8")) or {}).get("skills") or {}
    except (ModelTableError, OSError) as exc:
        report.cannot_use.append(f"{models_file}: {exc}")
        return
    known = set(SKILLS) | {TDD_KEY}
    for name in raw_skills:
        if name == TDD_KEY:
            report.mapped.append(
                f"models.yaml tdd: {raw_skills[name]} → tdd_red, tdd_green, tdd_refactor (a phase key wins)"
            )
        elif name not in known:
            report.cannot_use.append(f"models.yaml skills.{name}: no such skill here ({', '.join(sorted(SKILLS))})")
    usable = {name: model for name, model in table.skills.items() if name in known}
    gateway_models = sorted({model for model in [table.default, *usable.values()] if is_gateway_model(model)})
    if gateway_models:
        report.mapped.append(
            f"{', '.join(gateway_models)}: provider/name models run the Claude Code worker through the LiteLLM gateway "
            "(ANTHROPIC_BASE_URL/ANTHROPIC_AUTH_TOKEN in the worker's environment; no key in the prompt)"
        )
        if not (go_env.get("LITELLM_BASE_URL") or settings.LITELLM_BASE_URL):
            report.cannot_use.append(
                "LITELLM_BASE_URL is not set: the provider/name models above need the gateway; add LITELLM_BASE_URL "
                "(and LITELLM_API_KEY) to the lines below"
            )
    report.took.append(f"model table {models_file} (default {table.default}, {len(usable)} skill entries used)")
    report.add_env("SUPERVISOR_MODELS_FILE", str(models_file.resolve()))
    if not any(name in go_env for name in ("HYPERGUILD_FAST_MODEL", "HYPERGUILD_THINKING_MODEL")):
        report.cannot_use.append(
            "the Go defaults for the fast/thinking routing models: ours are the gateway names `fast` and `thinking`; "
            "set HYPERGUILD_FAST_MODEL and HYPERGUILD_THINKING_MODEL to the gateway models your routing used"
        )
