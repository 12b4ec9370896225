"""Replay a repository's history against anchored notes: how many notes each commit makes stale, and how long
re-verification takes per commit (issue 38, docs/truth.md).

    .venv/bin/python bench/truth_replay.py --repo /work/main --back 200 --notes 2000

It creates a scratch database (dropped at the end) and a bare clone of `--repo` in a temporary folder,
points a branch of the clone at the commit `--back` first-parent commits before HEAD, writes `--notes`
wiki notes anchored there (each cites a file, a symbol defined in it and the line that defines it, taken
from the tree at that commit), verifies them once, then moves the branch one commit at a time and runs
the same sync the schedule runs (`do_sync_project`: `git diff --name-only old..new`, re-check only the
anchors in changed files). Prints one line per commit and a summary. The repository is only read.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from hyperguild.boot import setup_django  # noqa: E402

setup_django()  # the secret key and the embedded database, then Django (hyperguild.boot)

from django.conf import settings  # noqa: E402

from brain.actions import do_sync_project  # noqa: E402
from brain.models import Note, NoteStatus, Project  # noqa: E402
from brain.repository import Repository  # noqa: E402
from brain.scratch import ScratchDatabase  # noqa: E402


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True, check=True).stdout.strip()


def _is_def_or_class(repo: Repository, commit: str, definition) -> bool:
    """Only `def`/`class` lines, as the index held before issue 45 added assignments and parameters: the same notes
    for runs of either version."""
    lines = (repo.read(commit, definition.path) or "").splitlines()
    line = lines[definition.line - 1].strip() if definition.line <= len(lines) else ""
    return line.startswith(("def ", "async def ", "class "))


def anchored_notes(repo: Repository, commit: str, count: int, project: Project) -> list[Note]:
    """Up to `count` notes, one per definition at `commit`, spread over the files (round robin by file)."""
    by_file: dict[str, list] = {}
    for definitions in repo.definitions(commit).values():
        for definition in definitions:
            if definition.path.endswith(".py") and _is_def_or_class(repo, commit, definition):
                by_file.setdefault(definition.path, []).append(definition)
    notes, round_ = [], 0
    while len(notes) < count and any(len(items) > round_ for items in by_file.values()):
        for path in sorted(by_file):
            items = sorted(by_file[path], key=lambda d: d.line)
            if round_ >= len(items) or len(notes) >= count:
                continue
            definition = items[round_]
            text = repo.read(commit, path) or ""
            line = text.splitlines()[definition.line - 1].strip() if text else ""
            body = f"`{path}` defines `{definition.name}`:\n\n```python\n{line}\n```\n"
            notes.append(
                Note(
                    slug=f"replay-{len(notes)}",
                    title=f"{definition.name} in {path}",
                    body=body,
                    status=NoteStatus.WIKI,
                    wing="concepts",
                    project=project,
                )
            )
        round_ += 1
    return notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default="/work/main")
    parser.add_argument("--back", type=int, default=200, help="first-parent commits before HEAD to anchor the notes at")
    parser.add_argument("--notes", type=int, default=2000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="truth-replay-") as tmp, ScratchDatabase(sys.stdout):
        clone = str(Path(tmp) / "replay.git")
        subprocess.run(["git", "clone", "--quiet", "--bare", args.repo, clone], check=True)
        settings.SUPERVISOR_ALLOWED_ROOTS = [tmp]
        history = git(clone, "rev-list", "--first-parent", "--reverse", "HEAD").split()
        base, later = history[-args.back - 1], history[-args.back :]
        git(clone, "update-ref", "refs/heads/replay", base)
        project = Project.objects.create(name="replay", repo=clone, branch="replay")
        notes = anchored_notes(Repository(clone), base, args.notes, project)
        Note.objects.bulk_create(notes, batch_size=1000)
        started = time.perf_counter()
        first = do_sync_project(project)
        first_seconds = time.perf_counter() - started
        anchors = first.anchors_rechecked
        print(
            f"{len(notes)} notes, {anchors} anchors at {base[:7]}: first verification {first_seconds:.2f} s, "
            f"{len(first.stale)} stale"
        )

        timings, rechecked, made_stale, stale_before = [], [], [], len(first.stale)
        for number, commit in enumerate(later, start=1):
            git(clone, "update-ref", "refs/heads/replay", commit)
            project.refresh_from_db()
            started = time.perf_counter()
            outcome = do_sync_project(project)
            seconds = time.perf_counter() - started
            stale_now = Note.objects.filter(project=project, verification_state="stale").count()
            timings.append(seconds)
            rechecked.append(outcome.notes_rechecked)
            made_stale.append(max(0, stale_now - stale_before))
            stale_before = stale_now
            print(
                f"{number:4d} {commit[:7]} files {outcome.changed_files:3d} re-checked {outcome.notes_rechecked:5d} "
                f"notes ({outcome.anchors_rechecked:5d} anchors) newly stale {made_stale[-1]:4d} "
                f"stale {stale_now:5d}  {seconds * 1000:8.1f} ms"
            )

        ordered = sorted(timings)
        p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
        print(
            f"\n{len(later)} commits: re-verification per commit p50 {statistics.median(timings) * 1000:.1f} ms, "
            f"p95 {p95 * 1000:.1f} ms, max {max(timings) * 1000:.1f} ms, total {sum(timings):.1f} s; "
            f"notes re-checked per commit mean {statistics.mean(rechecked):.1f}, max {max(rechecked)}; "
            f"commits that made a note stale {sum(1 for n in made_stale if n)}, notes made stale per commit "
            f"mean {statistics.mean(made_stale):.2f}, max {max(made_stale)}; stale at the end {stale_before} of {len(notes)}"
        )


if __name__ == "__main__":
    main()
