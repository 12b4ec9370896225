"""The long commands (brain_import, brain_export, migrate_from_go) show a progress bar on stderr.

They write it through the command's own `self.stderr` (no private attribute): into the
`stderr=` a caller hands `call_command`, and on a terminal as one line redrawn in place,
in plain colours rather than the red Django gives error text.
"""

from __future__ import annotations

import io
import os
import pty
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from brain.actions import do_write_raw_note
from brain.management.commands.brain_export import Command as ExportCommand

pytestmark = pytest.mark.django_db

GO_BRAIN = Path(__file__).resolve().parents[1] / "go" / "fixtures" / "go-brain"
RED = "\x1b[31"


def write_folder(root: Path, count: int) -> None:
    (root / "raw").mkdir(parents=True)
    for i in range(count):
        (root / "raw" / f"idea-{i}.md").write_text(f"---\ntitle: Idea {i}\n---\nText {i}.\n", encoding="utf-8")


def test_brain_import_shows_its_progress_in_the_callers_stderr(tmp_path):
    write_folder(tmp_path, 5)
    out, err = io.StringIO(), io.StringIO()
    call_command("brain_import", str(tmp_path), stdout=out, stderr=err)
    assert "importing: 100%" in err.getvalue() and "5/5" in err.getvalue()
    assert "importing" not in out.getvalue()  # the report stays clean on stdout


def test_brain_export_shows_its_progress_in_the_callers_stderr(tmp_path):
    for i in range(3):
        do_write_raw_note(title=f"Note {i}", body="text")
    err = io.StringIO()
    call_command("brain_export", str(tmp_path), stdout=io.StringIO(), stderr=err)
    assert "exporting: 100%" in err.getvalue() and "3/3" in err.getvalue()


def test_migrate_from_go_shows_its_progress_in_the_callers_stderr(tmp_path):
    shutil.copytree(GO_BRAIN, tmp_path / "go-brain")
    err = io.StringIO()
    call_command("migrate_from_go", str(tmp_path / "go-brain"), stdout=io.StringIO(), stderr=err)
    assert "importing: 100%" in err.getvalue()


def test_no_progress_writes_nothing_to_stderr(tmp_path):
    write_folder(tmp_path, 2)
    err = io.StringIO()
    call_command("brain_import", str(tmp_path), "--no-progress", stdout=io.StringIO(), stderr=err)
    assert err.getvalue() == ""


def read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal's other end is closed: everything has been read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8")


def test_on_a_terminal_the_bar_is_one_line_redrawn_in_place_without_error_colours(tmp_path):
    for i in range(4):
        do_write_raw_note(title=f"Note {i}", body="text")
    leader, follower = pty.openpty()
    terminal = os.fdopen(follower, "w", encoding="utf-8", buffering=1)
    try:
        # As `manage.py brain_export` on a colour terminal: stderr is a tty and Django styles it red.
        command = ExportCommand(stdout=io.StringIO(), stderr=terminal, force_color=True)
        assert command.stderr.isatty()
        command.export_directory(tmp_path / "out", show_progress=True)
    finally:
        terminal.close()
    shown = read_all(leader)
    os.close(leader)
    assert "exporting: 100%" in shown and "4/4" in shown
    assert "\r" in shown  # redrawn in place
    assert shown.count("\n") <= 1, repr(shown)  # not one line per redraw (the terminal turns \n into \r\n)
    assert RED not in shown, repr(shown)
