"""`apply`: a verified review's findings become commits on a branch of their own, each only when every gate passes.

A real git project under the allowed roots, a review answered by the fake
`claude`, then `apply` run by the real runner: git worktree, the project's
own pytest, a lint command, commits on `hyperguild/apply-<run_id>`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.apply import changed_old_lines, normalise_diff
from supervisor.models import SkillRun
from supervisor.tasks import run_skill
from supervisor.tools import start_skill_run

pytestmark = pytest.mark.django_db

CALC = """def double(x):
    return 2 * x


def add(a, b):
    return a - b


def mean(values):
    total = 0
    for value in values:
        total += value
    return total / len(values)


def describe(values):
    if not values:
        return "empty"
    return f"{len(values)} values"
"""

TESTS = """from calc import double, describe


def test_double():
    assert double(2) == 4


def test_describe():
    assert describe([]) == "empty"
    assert describe([1, 2]) == "2 values"
"""

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def git(project: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=project,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def git_project(allowed_root, settings, tmp_path) -> Path:
    """A committed Python project with an untested bug in `add`, and a dirty working tree of its owner."""
    settings.DATA_DIR = tmp_path / "data"
    project = allowed_root / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    (project / "calc.py").write_text(CALC)
    (project / "tests" / "test_calc.py").write_text(TESTS)
    (project / "README.md").write_text("calc\n")
    (project / ".gitignore").write_text("__pycache__/\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "calc")
    # The owner is in the middle of something: a modified file and an untracked one.
    (project / "README.md").write_text("calc, work in progress\n")
    (project / "notes.txt").write_text("todo\n")
    return project


def finding(title: str, line: int, quote: str, diff: str, *, confidence: float = 0.95, kind: str = "bug") -> dict:
    return {
        "file": "calc.py",
        "line": line,
        "severity": "major",
        "title": title,
        "kind": kind,
        "rationale": f"{title}: wrong result",
        "suggestion": diff,
        "confidence": confidence,
        "quote": quote,
    }


FIX_ADD = """--- a/calc.py
+++ b/calc.py
@@ -5,2 +5,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""

BREAK_DOUBLE = """```diff
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def double(x):
-    return 2 * x
+    return 3 * x
```"""

BIG_MEAN = """--- a/calc.py
+++ b/calc.py
@@ -9,5 +9,9 @@
 def mean(values):
-    total = 0
-    for value in values:
-        total += value
-    return total / len(values)
+    if not values:
+        raise ValueError("mean of nothing")
+    total = 0.0
+    count = 0
+    for value in values:
+        total += value
+        count += 1
+    return total / count
"""

UNSURE_DESCRIBE = """--- a/calc.py
+++ b/calc.py
@@ -16,3 +16,3 @@
 def describe(values):
-    if not values:
+    if len(values) == 0:
         return "empty"
"""


def review_run(fake_claude, project: Path, findings: list[dict]) -> SkillRun:
    fake_claude.script([{"report": {"verdict": "request_changes", "summary": "issues", "findings": findings}}])
    run = start_skill_run("review", {"project_root": str(project), "paths": ["calc.py"]})
    run_skill(run.pk)
    run.refresh_from_db()
    assert run.status == "pass" and run.verified is True, run.result
    return run


def apply_run(project: Path, review: SkillRun, **arguments) -> SkillRun:
    run = start_skill_run("apply", {"project_root": str(project), "run_id": review.pk, "test_cmd": PYTEST, **arguments})
    run_skill(run.pk)
    run.refresh_from_db()
    return run


def test_only_the_finding_that_passes_every_gate_is_committed_and_the_owners_tree_is_untouched(
    fake_claude, git_project, settings
):
    settings.SUPERVISOR_MIN_CONFIDENCE = 0.4  # the review keeps the unsure finding: apply's own gate must refuse it
    review = review_run(
        fake_claude,
        git_project,
        [
            finding("add subtracts", 5, "return a - b", FIX_ADD),
            finding("double is wrong", 1, "def double(x):", BREAK_DOUBLE),
            finding("mean is fragile", 9, "def mean(values):", BIG_MEAN),
            finding("describe could be clearer", 17, "if not values:", UNSURE_DESCRIBE, confidence=0.5),
        ],
    )
    head, status = git(git_project, "rev-parse", "HEAD"), git(git_project, "status", "--porcelain")
    assert review.result["reviewed_commit"] == head.strip()

    run = apply_run(git_project, review)

    result = run.result
    branch = f"hyperguild/apply-{review.pk}"
    assert result["status"] == "pass" and result["verified"] is True and result["branch"] == branch
    outcomes = [(f["title"], f["outcome"], f["gate"]) for f in result["findings"]]
    assert outcomes == [
        ("add subtracts", "applied", None),
        ("double is wrong", "refused", "tests"),
        ("mean is fragile", "refused", "size"),
        ("describe could be clearer", "refused", "confidence"),
    ]
    applied, broken, big, unsure = result["findings"]
    assert "test_double" in broken["output"] and "exit code 1" in broken["reason"]
    assert big["reason"] == "12 changed line(s), limit 6"
    assert "0.5 < 0.9" in unsure["reason"]
    assert [g["gate"] for g in applied["gates"]] == ["confidence", "size", "apply", "rationale", "tests"]
    assert all(g["passed"] for g in applied["gates"])
    # Exactly one commit on the branch, on top of the reviewed commit, naming the finding and the run.
    log = git(git_project, "log", "--format=%H %P%n%B", f"{head.strip()}..{branch}")
    commits = git(git_project, "rev-list", f"{head.strip()}..{branch}").split()
    assert commits == [applied["commit"]]
    assert "add subtracts" in log and f"review run {review.pk}" in log and f"apply run {run.pk}" in log
    assert "return a + b" in git(git_project, "show", f"{branch}:calc.py")
    assert "return 2 * x" in git(git_project, "show", f"{branch}:calc.py")  # the broken patch was reverted
    # The owner's working tree, index and HEAD are as they were; no worktree is left behind.
    assert git(git_project, "rev-parse", "HEAD") == head
    assert git(git_project, "status", "--porcelain") == status
    assert git(git_project, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert (git_project / "calc.py").read_text() == CALC
    assert len(git(git_project, "worktree", "list").splitlines()) == 1
    # The run is recorded like every other: one attempt per finding, the branch's change with its pre-state.
    assert run.skill == "apply" and run.attempts == 4 and run.model == ""
    assert [entry["outcome"] for entry in run.attempt_log] == ["applied", "refused", "refused", "refused"]
    assert run.change["test_cmd"] == PYTEST and [f["path"] for f in run.change["files"]] == ["calc.py"]


def test_the_run_page_shows_each_findings_gates_and_the_branch(fake_claude, git_project, client, admin_user):
    review = review_run(
        fake_claude,
        git_project,
        [
            finding("add subtracts", 5, "return a - b", FIX_ADD),
            finding("double is wrong", 1, "def double(x):", BREAK_DOUBLE),
        ],
    )
    run = apply_run(git_project, review)
    assert client.get(f"/runs/{run.pk}/").status_code == 302  # people log in first

    client.force_login(admin_user)
    page = client.get(f"/runs/{run.pk}/").content.decode()

    assert f"hyperguild/apply-{review.pk}" in page and f"git merge hyperguild/apply-{review.pk}" in page
    assert run.result["findings"][0]["commit"][:12] in page
    assert "refused: tests" in page and "tests ✗" in page and "rationale ✓" in page and "test_double" in page
    assert f'href="/runs/{review.pk}/"' in page
    admin_page = client.get(f"/admin/supervisor/skillrun/{run.pk}/change/").content.decode()
    assert "refused (tests)" in admin_page and "rationale ok" in admin_page


def test_a_patch_that_raises_the_lint_count_or_strays_from_its_quote_is_refused(fake_claude, git_project):
    adds_todo = """--- a/calc.py
+++ b/calc.py
@@ -5,2 +5,2 @@
 def add(a, b):
-    return a - b
+    return a + b  # TODO: overflow
"""
    far_away = """--- a/calc.py
+++ b/calc.py
@@ -18,2 +18,2 @@
         return "empty"
-    return f"{len(values)} values"
+    return f"{len(values)} values"  # reviewed
"""
    review = review_run(
        fake_claude,
        git_project,
        [
            finding("add subtracts", 5, "return a - b", adds_todo),
            finding("double overflows", 2, "return 2 * x", far_away),
        ],
    )

    run = apply_run(git_project, review, lint_cmd="grep -rn --include=*.py TODO . || true")

    result = run.result
    lint, stray = result["findings"]
    assert (lint["outcome"], lint["gate"]) == ("refused", "warnings")
    assert "finds 1 after the patch, 0 before" in lint["reason"] and "TODO: overflow" in lint["output"]
    assert (stray["outcome"], stray["gate"]) == ("refused", "rationale")
    assert "changes line(s) 19 of calc.py, outside lines 1-5" in stray["reason"]
    assert result["status"] == "fail" and result["branch"] is None and result["applied"] == 0
    # Nothing applied: no branch is left behind.
    assert git(git_project, "branch", "--list", "hyperguild/*").strip() == ""


def test_apply_refuses_a_run_that_is_not_a_verified_review_and_records_nothing(fake_claude, git_project):
    from supervisor.errors import SupervisorError

    with pytest.raises(SupervisorError, match="does not exist"):
        start_skill_run("apply", {"project_root": str(git_project), "run_id": 999999})
    failed = SkillRun.objects.create(skill="review", project_root=str(git_project), status="fail", verified=False)
    with pytest.raises(SupervisorError, match="not a verified review"):
        start_skill_run("apply", {"project_root": str(git_project), "run_id": failed.pk})
    tdd = SkillRun.objects.create(skill="tdd_green", project_root=str(git_project), status="pass", verified=True)
    with pytest.raises(SupervisorError, match="review or debug"):
        start_skill_run("apply", {"project_root": str(git_project), "run_id": tdd.pk})
    assert SkillRun.objects.filter(skill="apply").count() == 0


def test_apply_refuses_a_second_apply_while_its_branch_exists(fake_claude, git_project):
    from supervisor.errors import SupervisorError

    review = review_run(fake_claude, git_project, [finding("add subtracts", 5, "return a - b", FIX_ADD)])
    assert apply_run(git_project, review).result["applied"] == 1

    with pytest.raises(SupervisorError, match="already exists"):
        start_skill_run("apply", {"project_root": str(git_project), "run_id": review.pk, "test_cmd": PYTEST})


def test_a_rationale_reads_the_changed_lines_from_git_and_a_bare_hunk_is_about_the_finding_file():
    diff = normalise_diff("@@ -5,2 +5,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n", "calc.py", "sub/")
    assert diff.splitlines()[:2] == ["--- a/sub/calc.py", "+++ b/sub/calc.py"]
    u0 = "--- a/calc.py\n+++ b/calc.py\n@@ -6 +6 @@\n-x\n+y\n@@ -9,0 +10,2 @@\n+a\n+b\n"
    assert changed_old_lines(u0) == {"calc.py": [(6, 6), (9, 9)]}


def test_an_applied_patch_is_an_sft_example_and_a_refused_one_the_rejected_side_and_both_replay(
    fake_claude, git_project
):
    from django.core.management import call_command

    from sessions.models import TrainingExample
    from sessions.trainer import run_trainer

    swap = """--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def double(x):
-    return 2 * x
+    return x * 2
"""
    review = review_run(
        fake_claude,
        git_project,
        [
            finding("double is wrong", 2, "return 2 * x", BREAK_DOUBLE),  # the same finding, twice: a bad patch first
            finding("double is wrong", 2, "return 2 * x", swap),
            finding("add subtracts", 5, "return a - b", FIX_ADD),
        ],
    )
    run = apply_run(git_project, review)
    assert [(f["outcome"], f["gate"]) for f in run.result["findings"]] == [
        ("refused", "tests"),
        ("applied", None),
        ("applied", None),
    ]

    run_trainer()
    call_command("trainer_verify", stdout=open("/dev/null", "w"))

    examples = {(e.kind, e.provenance["finding"]["title"]): e for e in TrainingExample.objects.filter(skill="apply")}
    assert sorted(examples) == [("dpo", "double is wrong"), ("sft", "add subtracts"), ("sft", "double is wrong")]
    sft = examples[("sft", "add subtracts")]
    assert sft.replay_status == "valid", sft.replay
    assert "+    return a + b" in sft.completion[0]["content"] and "```diff" in sft.completion[0]["content"]
    prompt = sft.prompt[1]["content"]
    assert "Title: add subtracts" in prompt and "return a - b" in prompt and "--- calc.py" in prompt
    # The later patch starts from the state with the earlier commit: its pre-state is after attempt 2.
    assert sft.provenance["pre_state"]["after_attempt"] == 2
    dpo = examples[("dpo", "double is wrong")]
    assert dpo.replay_status == "valid", dpo.replay
    assert "+    return x * 2" in dpo.chosen[0]["content"] and "+    return 3 * x" in dpo.rejected[0]["content"]
    assert examples[("sft", "double is wrong")].replay_status == "valid"


@pytest.mark.django_db(transaction=True)
def test_a_cancelled_apply_kills_the_test_command_and_leaves_no_worktree_or_branch(fake_claude, git_project, settings):
    import threading
    import time

    from supervisor.actions import do_request_cancel

    review = review_run(fake_claude, git_project, [finding("add subtracts", 5, "return a - b", FIX_ADD)])
    marker = git_project.parent / "tests-started"
    run = start_skill_run(
        "apply",
        {
            "project_root": str(git_project),
            "run_id": review.pk,
            "test_cmd": f"touch {marker} && sleep 60",
        },
    )
    worker = threading.Thread(target=run_skill, args=(run.pk,))
    started = time.monotonic()
    worker.start()
    while not marker.exists() and time.monotonic() - started < 20:
        time.sleep(0.1)
    do_request_cancel(run.pk)
    worker.join(timeout=30)

    run.refresh_from_db()
    assert run.status == "cancelled" and time.monotonic() - started < 30
    assert git(git_project, "branch", "--list", "hyperguild/*").strip() == ""
    assert len(git(git_project, "worktree", "list").splitlines()) == 1
    assert not any((settings.DATA_DIR / "apply").iterdir())


@pytest.mark.django_db(transaction=True)
def test_review_then_apply_over_mcp(asgi_server, settings, fake_claude, git_project, skill_worker):
    from tests.conftest import call_tool

    settings.SUPERVISOR_MCP_TOKEN = ""
    url = f"{asgi_server}/mcp/supervisor"
    fake_claude.script(
        [
            {
                "report": {
                    "verdict": "request_changes",
                    "summary": "s",
                    "findings": [finding("add subtracts", 5, "return a - b", FIX_ADD)],
                }
            }
        ]
    )
    reviewed = call_tool(url, "review", {"project_root": str(git_project), "paths": ["calc.py"]})["structuredContent"]

    answer = call_tool(
        url, "apply", {"project_root": str(git_project), "run_id": reviewed["run_id"], "test_cmd": PYTEST}
    )

    assert answer.get("isError") is not True, answer
    content = answer["structuredContent"]
    assert content["branch"] == f"hyperguild/apply-{reviewed['run_id']}" and content["applied"] == 1
    assert content["findings"][0]["commit"] == git(git_project, "rev-parse", content["branch"]).strip()
    refused = call_tool(url, "apply", {"project_root": str(git_project), "run_id": reviewed["run_id"]})
    assert refused["isError"] is True and "already exists" in refused["content"][0]["text"]


def test_a_project_inside_a_larger_repository_is_applied_in_its_own_folder(
    fake_claude, allowed_root, settings, tmp_path
):
    settings.DATA_DIR = tmp_path / "data"
    repo = allowed_root / "mono"
    project = repo / "services" / "calc"
    (project / "tests").mkdir(parents=True)
    (repo / "README.md").write_text("mono\n")
    (project / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0"\n\n[tool.pytest.ini_options]\npythonpath = ["."]\n'
    )
    (project / "calc.py").write_text(CALC)
    (project / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mono")
    prose = (
        "Change the operator:\n\n```diff\ndiff --git a/calc.py b/calc.py\nold mode 100644\nnew mode 120000\n"
        + FIX_ADD
        + "```\n"
    )
    review = review_run(fake_claude, project, [finding("add subtracts", 5, "return a - b", prose)])

    run = apply_run(project, review)

    assert [(f["outcome"], f["gate"]) for f in run.result["findings"]] == [("applied", None)], run.result
    branch = run.result["branch"]
    assert "return a + b" in git(repo, "show", f"{branch}:services/calc/calc.py")
    assert git(repo, "diff", "--name-only", f"main..{branch}").split() == ["services/calc/calc.py"]
    assert git(repo, "ls-tree", branch, "services/calc/calc.py").startswith("100644")  # no mode change got through
    assert git(repo, "status", "--porcelain") == ""


def test_every_gate_apply_can_name_is_in_the_answers_schema():
    from supervisor import apply
    from supervisor.skills import APPLY_GATE_NAMES

    gates = [getattr(apply, name) for name in dir(apply) if name.startswith("GATE_")]
    assert len(gates) == 7 and set(gates) <= set(APPLY_GATE_NAMES)


def test_findings_left_when_the_runs_time_budget_is_spent_are_refused_with_gate_time(
    fake_claude, git_project, monkeypatch
):
    from supervisor import executor

    review = review_run(fake_claude, git_project, [finding("add subtracts", 5, "return a - b", FIX_ADD)])
    monkeypatch.setattr(executor, "run_budget_seconds", lambda: 0.0)

    run = apply_run(git_project, review)

    [only] = run.result["findings"]
    assert (only["outcome"], only["gate"]) == ("refused", "time") and run.result["branch"] is None


def test_the_worktree_a_killed_apply_left_is_removed_by_the_next_apply(fake_claude, git_project, settings):
    from supervisor.apply import remove_stale_worktrees

    dead = SkillRun.objects.create(skill="apply", project_root=str(git_project), status="error")
    alive = SkillRun.objects.create(skill="apply", project_root=str(git_project), status="running")
    git(git_project, "worktree", "add", "-q", "-b", "left-behind", str(settings.DATA_DIR / "apply" / f"run-{dead.pk}"))
    (settings.DATA_DIR / "apply" / f"run-{alive.pk}").mkdir()

    remove_stale_worktrees(git_project)

    assert sorted(p.name for p in (settings.DATA_DIR / "apply").iterdir()) == [f"run-{alive.pk}"]
    assert len(git(git_project, "worktree", "list").splitlines()) == 1  # its metadata is pruned too


def test_a_patch_refused_by_its_rationale_is_never_run(fake_claude, git_project, tmp_path):
    """Finding 9 of issue 35: the `tests` gate ran a `conftest.py` the `rationale` gate then refused."""
    marker = tmp_path / "conftest-ran"
    plant = f"""--- /dev/null
+++ b/conftest.py
@@ -0,0 +1 @@
+open({str(marker)!r}, "w").write("the patch ran")
"""
    review = review_run(fake_claude, git_project, [finding("add subtracts", 5, "return a - b", plant)])

    run = apply_run(git_project, review)

    (only,) = run.result["findings"]
    assert (only["outcome"], only["gate"]) == ("refused", "rationale")
    assert "the patch changes conftest.py, but the finding is about calc.py" in only["reason"]
    assert [g["gate"] for g in only["gates"]] == ["confidence", "size", "apply", "rationale"]
    assert not marker.exists()
    assert run.result["branch"] is None


def test_apply_leaves_the_owners_moved_aside_worktree_registered(fake_claude, git_project, tmp_path):
    """Finding 9 of issue 35: `git worktree prune` dropped the metadata of a worktree whose folder was moved aside."""
    own = tmp_path / "my-feature"
    git(git_project, "worktree", "add", "-q", "-b", "my-feature", str(own))
    aside = tmp_path / "my-feature-aside"
    own.rename(aside)
    review = review_run(fake_claude, git_project, [finding("add subtracts", 5, "return a - b", FIX_ADD)])

    run = apply_run(git_project, review)

    assert run.result["applied"] == 1
    aside.rename(own)
    assert git(own, "rev-parse", "--abbrev-ref", "HEAD").strip() == "my-feature"
    listed = git(git_project, "worktree", "list", "--porcelain")
    assert f"worktree {own}" in listed and "apply/run-" not in listed


def test_a_stale_apply_worktree_whose_folder_is_gone_is_unregistered_and_the_owners_are_kept(
    fake_claude, git_project, settings, tmp_path
):
    from supervisor.apply import remove_stale_worktrees

    dead = SkillRun.objects.create(skill="apply", project_root=str(git_project), status="error")
    folder = settings.DATA_DIR / "apply" / f"run-{dead.pk}"
    git(git_project, "worktree", "add", "-q", "-b", "left-behind", str(folder))
    own = tmp_path / "mine"
    git(git_project, "worktree", "add", "-q", "-b", "mine", str(own))
    import shutil

    shutil.rmtree(folder)
    own.rename(tmp_path / "mine-aside")

    remove_stale_worktrees(git_project)

    listed = git(git_project, "worktree", "list", "--porcelain")
    assert f"run-{dead.pk}" not in listed and f"worktree {own}" in listed
