"""What a bench script needs to run outside `manage.py`: Django set up, and a command's options, output and errors.

A script that reads the database or the settings starts with

    if __name__ == "__main__":  # `python bench/x.py` puts bench/ first on the path: the checkout belongs there
        sys.path[0] = str(Path(__file__).resolve().parents[1])
    from bench.script import setup_django
    setup_django()

before it imports an app, and ends with `run(Command())`: its `Command` is a `BenchCommand`, so it has the
options, the styled output and the error handling of a management command without being one (`manage.py help`
lists only what operators use). Tests call the same `Command` in process with `call_command(Command(), ...)`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

ROOT = Path(__file__).resolve().parents[1]


def setup_django() -> None:
    """The secret key and the embedded database, then Django (`hyperguild.boot.setup_django()`), for a script run
    from the command line; nothing when Django is ready (a test imported the script)."""
    from django.apps import apps

    from hyperguild.boot import setup_django as boot

    if not apps.ready:
        boot()


class BenchCommand(BaseCommand):
    """A management command's parser and output, for a script: its usage line names the script."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.prog = prog_name or f"bench/{subcommand}.py"
        return parser


def run(command: BaseCommand, argv: list[str] | None = None) -> None:
    """Run `command` with the command line's arguments (or `argv`): a CommandError prints and exits 1."""
    script = Path(sys.argv[0]).resolve()
    prog = str(script.relative_to(ROOT)) if script.is_relative_to(ROOT) else sys.argv[0]
    command.run_from_argv([prog, "", *(sys.argv[1:] if argv is None else argv)])
