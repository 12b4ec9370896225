"""Acceptance 1 and 4 of issue 38: notes are checked against their project's code, and go stale when it changes."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from brain.actions import do_edit_note, do_ingest_note
from brain.anchors import extract
from brain.models import Anchor, Note, NoteStatus, Project
from brain.tasks import verify_projects
from tests.truth.conftest import NOTES, STALE_AFTER_CHANGE, add_project, git, make_repo

pytestmark = pytest.mark.django_db


def states() -> dict[str, str]:
    return dict(Note.objects.values_list("slug", "verification_state"))


def evidence(slug: str) -> dict[str, dict]:
    """The stale note's evidence, by anchor."""
    return {item["anchor"]: item for item in Note.objects.get(slug=slug).verification_evidence}


def test_anchors_are_extracted_by_rules_from_paths_symbols_quotes_commands_and_settings():
    body = (
        "Workers start in `supervisor/executor.py` via `spawn_worker()` and `Executor.run`; see brain/context.py.\n"
        "Set `SUPERVISOR_ALLOWED_ROOTS`, then `manage.py project_sync ledgerly` or `make test`.\n"
        "The call is `subprocess.run(command, timeout=60)`; a plain `word` is no anchor.\n\n"
        "```python\nfor line in lines:\n    total += line.amount\n```\n\n```console\n$ ls -la output here\n```\n"
    )
    found = {(anchor.kind, anchor.value) for anchor in extract(body, {"anchors": ["quote: LIMIT = 5", "Foo.bar"]})}
    assert found == {
        ("path", "supervisor/executor.py"),
        ("path", "brain/context.py"),
        ("symbol", "spawn_worker"),
        ("symbol", "Executor.run"),
        ("setting", "SUPERVISOR_ALLOWED_ROOTS"),
        ("command", "manage.py project_sync ledgerly"),
        ("command", "make test"),
        ("quote", "subprocess.run(command, timeout=60)"),
        ("quote", "for line in lines:"),
        ("quote", "total += line.amount"),
        ("quote", "LIMIT = 5"),
        ("symbol", "Foo.bar"),
    }
    assert extract(body) == extract(body)  # deterministic: the same text, the same anchors, in the same order


def test_ten_notes_are_verified_at_the_head_and_a_change_makes_exactly_the_notes_citing_it_stale(ledgerly):
    assert states() == dict.fromkeys(NOTES, "verified")
    assert set(Note.objects.values_list("verified_commit", flat=True)) == {ledgerly.first}
    new = ledgerly.change()

    out = io.StringIO()
    call_command("project_sync", "ledgerly", stdout=out)

    assert {slug for slug, state in states().items() if state == "stale"} == STALE_AFTER_CHANGE, out.getvalue()
    assert "stale: export, rounding-quote, spawn" in out.getvalue()
    fresh = Note.objects.exclude(slug__in=STALE_AFTER_CHANGE)
    assert set(fresh.values_list("verification_state", "verified_commit")) == {("verified", new)}
    # Nothing is retired automatically: a stale note is still a wiki note, in search, until a person decides.
    assert set(Note.objects.values_list("status", flat=True)) == {NoteStatus.WIKI}
    assert_the_evidence_names_what_changed(new)


def assert_the_evidence_names_what_changed(new: str) -> None:
    renamed = evidence("spawn")["spawn_worker"]
    assert (renamed["state"], renamed["path"], renamed["changed_in"]) == ("changed", "ledgerly/workers.py", new)
    assert "-def spawn_worker(task):" in renamed["hunk"] and "+def start_worker(task):" in renamed["hunk"]
    assert renamed["message"] == f"`spawn_worker` changed in {new[:7]}"

    quoted = evidence("rounding-quote")["return amount.quantize(CENT, rounding=ROUNDING)"]
    assert (quoted["state"], quoted["path"], quoted["changed_in"]) == ("changed", "ledgerly/rounding.py", new)
    assert quoted["quoted"] == "    return amount.quantize(CENT, rounding=ROUNDING)"  # what the code said then
    assert "rounding=ROUND_HALF_EVEN" in quoted["now"]  # and what it says now, at the same place
    assert "-    return amount.quantize(CENT, rounding=ROUNDING)" in quoted["hunk"]

    deleted = evidence("export")
    assert deleted["ledgerly/legacy_export.py"]["state"] == "gone"
    assert deleted["ledgerly/legacy_export.py"]["changed_in"] == new
    assert deleted["export_csv"]["state"] == "gone"
    assert Note.objects.get(slug="worker-start").anchors.get(kind="symbol").location.startswith("ledgerly/workers.py:")


def test_one_run_of_the_scheduled_task_does_the_same_as_project_sync(ledgerly):
    new = ledgerly.change()

    result = verify_projects()

    assert result["ledgerly"]["new"] == new and sorted(result["ledgerly"]["stale"]) == sorted(STALE_AFTER_CHANGE)
    assert {slug for slug, state in states().items() if state == "stale"} == STALE_AFTER_CHANGE
    assert evidence("spawn")["spawn_worker"]["changed_in"] == new
    # A second run with the head where it was re-checks nothing and changes nothing.
    again = verify_projects()["ledgerly"]
    assert (again["notes_rechecked"], again["anchors_rechecked"]) == (0, 0)
    assert {slug for slug, state in states().items() if state == "stale"} == STALE_AFTER_CHANGE


def test_project_sync_right_after_the_schedule_says_what_that_sync_found(ledgerly):
    """Issue 47: `project_sync` after a commit printed "x → x, 0 files changed … stale: none" while notes were
    stale, because the schedule had synced two seconds earlier."""
    new = ledgerly.change()
    verify_projects()  # the schedule gets there first

    out = io.StringIO()
    call_command("project_sync", "ledgerly", stdout=out)

    printed = out.getvalue()
    assert f"already at {new[:7]}" in printed and "by another sync" in printed, printed
    assert "stale now: export, rounding-quote, spawn" in printed, printed
    assert "stale: none" not in printed


def test_a_sync_re_checks_only_the_notes_anchored_to_the_files_that_changed(ledgerly):
    invoices = ledgerly.repo / "ledgerly/invoices.py"
    invoices.write_text(invoices.read_text() + "\n\ndef invoice_tax(lines):\n    return 0\n")
    git(ledgerly.repo, "commit", "-qam", "taxes")

    outcome = verify_projects()["ledgerly"]

    assert (outcome["changed_files"], outcome["notes_rechecked"], outcome["stale"]) == (1, 1, [])


def test_an_edit_re_extracts_anchors_and_checks_them_at_the_projects_head(ledgerly):
    note = Note.objects.get(slug="invoices")
    do_edit_note(note, body="`ledgerly/invoices.py` sums the lines (`invoice_sum`).")
    note.refresh_from_db()
    # A name the code never had is not stale (nothing of it changed): it is unresolved, and said (issue 45).
    assert note.verification_state == "verified"
    assert note.anchors.get(value="invoice_sum").state == "unresolved"
    assert note.unresolved_anchors == [f"`invoice_sum` is not in ledgerly at {ledgerly.first[:7]}"]
    assert not note.anchors.filter(value="invoice_total").exists()


def test_a_git_url_is_kept_as_a_bare_mirror_and_fetched_on_sync(code_root, tmp_path, settings):
    origin = make_repo(code_root / "upstream")  # a file:// URL inside the allowed roots, mirrored as any git URL
    add_project("ledgerly", f"file://{origin}", "ledgerly")
    note = do_ingest_note(
        title="Rounding",
        body="Round with `round_line` in `ledgerly/rounding.py`.",
        wing="concepts",
        frontmatter={"project": "ledgerly"},
    )
    note.refresh_from_db()
    assert note.verification_state == "verified"
    assert (tmp_path / "mirrors" / "ledgerly.git" / "HEAD").exists()

    rounding = origin / "ledgerly/rounding.py"
    rounding.write_text(rounding.read_text().replace("def round_line(", "def round_amount("))
    git(origin, "commit", "-qam", "rename")
    call_command("project_sync", stdout=io.StringIO())

    note.refresh_from_db()
    assert note.verification_state == "stale"


def test_a_project_without_a_readable_repository_leaves_its_notes_unverified_and_nothing_fails(code_root, tmp_path):
    outside = make_repo(tmp_path / "not-allowed")
    said = add_project("ledgerly", str(outside), "ledgerly")
    assert "cannot be read" in said and "outside SUPERVISOR_ALLOWED_ROOTS" in said
    note = do_ingest_note(
        title="Rounding",
        body="Round with `round_line` in `ledgerly/rounding.py`.",
        wing="concepts",
        frontmatter={"project": "ledgerly"},
    )
    note.refresh_from_db()
    assert note.verification_state == "unverified"
    assert "repository cannot be read" in note.verification_evidence[0]["message"]

    add_project("gone", str(code_root / "no-such-repo"))
    out = io.StringIO()
    call_command("project_sync", stdout=out)  # neither project stops the command
    assert "synced 0 of 2 projects" in out.getvalue()
    assert verify_projects()["gone"]["error"].endswith("does not exist")
    assert Project.objects.get(name="gone").sync_error


@pytest.mark.parametrize("url", ["file://{path}", "file://localhost{path}", "FILE://{path}"])
def test_a_file_url_outside_the_allowed_roots_is_not_mirrored_or_read(code_root, tmp_path, url):
    # Issue 46: `file:///…` was a "git URL", mirrored and synced from anywhere on the server.
    outside = make_repo(tmp_path / "not-allowed")
    said = add_project("ledgerly", url.format(path=outside), "ledgerly")
    assert "cannot be read" in said and "outside SUPERVISOR_ALLOWED_ROOTS" in said
    assert not (tmp_path / "mirrors" / "ledgerly.git").exists()
    assert not Project.objects.get(name="ledgerly").last_synced_commit


def test_a_file_url_on_another_host_is_not_read(code_root, tmp_path):
    said = add_project("ledgerly", "file://evil.example/srv/ledgerly", "ledgerly")
    assert "names another host" in said and not (tmp_path / "mirrors" / "ledgerly.git").exists()


def test_a_folder_under_the_roots_that_is_no_repository_does_not_read_the_one_around_it(tmp_path, settings):
    # Issue 46: git looks up the folders for a repository, and found one outside the allowed roots.
    settings.HYPERGUILD_REPO_MIRRORS_DIR = str(tmp_path / "mirrors")
    settings.BRAIN_EMBEDDER = "off"
    outer = make_repo(tmp_path / "outer")  # a repository outside the roots…
    root = outer / "src"
    (root / "app").mkdir(parents=True)  # …around an allowed root whose folder is no repository
    settings.SUPERVISOR_ALLOWED_ROOTS = [str(root)]
    said = add_project("app", str(root / "app"), "app")
    assert "is not a repository; the one around it" in said and "outside SUPERVISOR_ALLOWED_ROOTS" in said
    assert not Project.objects.get(name="app").last_synced_commit


def test_a_folder_inside_a_repository_inside_the_roots_reads_that_repository(code_root):
    repo = make_repo(code_root)
    said = add_project("ledgerly", str(repo / "ledgerly"), "ledgerly")  # a subfolder of a repository: a monorepo's part
    assert "cannot be read" not in said
    assert Project.objects.get(name="ledgerly").last_synced_commit == git(repo, "rev-parse", "HEAD")


def test_a_note_with_no_project_or_nothing_cited_is_unverified_and_says_why(ledgerly):
    loose = do_ingest_note(title="Loose", body="Call `round_line` for amounts.", wing="concepts")
    plain = do_ingest_note(
        title="Plain", body="Be kind in reviews.", wing="concepts", frontmatter={"project": "ledgerly"}
    )
    loose.refresh_from_db()
    plain.refresh_from_db()
    assert (loose.verification_state, plain.verification_state) == ("unverified", "unverified")
    assert "belongs to no project" in loose.verification_evidence[0]["message"]
    assert "cites nothing in the code" in plain.verification_evidence[0]["message"]


def test_bad_project_input_is_refused_and_writes_nothing(code_root):
    from django.core.management.base import CommandError

    for args in (
        ["bad name!", "--repo", "/x"],
        ["ok", "--repo", "relative/path"],
        ["ok", "--repo", "/x", "--branch", "-x"],
    ):
        with pytest.raises(CommandError):
            call_command("project", "add", *args, stdout=io.StringIO())
    assert Project.objects.count() == 0 and Anchor.objects.count() == 0
    with pytest.raises(CommandError, match="no project named"):
        call_command("project_sync", "nobody", stdout=io.StringIO())
