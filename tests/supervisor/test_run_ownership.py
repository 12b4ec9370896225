"""Run ownership: a run whose worker process is gone is killed and ended; its slot stays taken until then.

The orphaned `claude` here is a real process group (a sleeping Python with
sleeping children) whose parent is gone, the way `kill -9` of the django-q2
worker leaves it; the owner is a real process that has exited. The
end-to-end version through a real qcluster is in test_worker_crash.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from supervisor import executor, reaper, tools
from supervisor.actions import do_claim_skill_run, do_record_run_ownership
from supervisor.models import SkillRun
from supervisor.tasks import reap_runs
from supervisor.tools import start_skill_run
from tests.supervisor.conftest import process_alive

pytestmark = pytest.mark.django_db

ORPHAN = (
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']) for _ in range(2)]\n"
    "print(' '.join(str(k.pid) for k in kids), flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def orphan_group():
    """A process group like a claude worker's: a leader and two children, all sleeping."""
    leader = subprocess.Popen([sys.executable, "-c", ORPHAN], stdout=subprocess.PIPE, text=True, start_new_session=True)
    children = [int(pid) for pid in leader.stdout.readline().split()]
    pids = [leader.pid, *children]
    yield leader, pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    leader.wait(timeout=5)


def dead_pid() -> int:
    """The pid of a process that has exited (and was reaped): an owner that is gone."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def wait_gone(pids: list[int], leader: subprocess.Popen, seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        leader.poll()  # the test process is the leader's parent: reap it, as init would
        alive = [pid for pid in pids if process_alive(pid)]
        if not alive:
            return []
        time.sleep(0.05)
    return alive


def running_run(python_project, *, pid: int, host: str = reaper.HOST) -> SkillRun:
    run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})
    assert do_claim_skill_run(run.pk, host=host, pid=pid) is not None
    return run


def test_a_run_whose_worker_process_died_is_killed_and_ended_as_error_by_the_reaper(
    fake_claude, python_project, orphan_group
):
    leader, pids = orphan_group
    run = running_run(python_project, pid=dead_pid())
    do_record_run_ownership(run.pk, worker_pgid=leader.pid, worker_slot=1)

    assert reap_runs() == 1

    assert wait_gone(pids, leader) == []
    run.refresh_from_db()
    assert run.status == "error" and run.is_finished
    assert "abandoned" in run.message and "died" in run.message
    assert run.result["status"] == "error" and run.result["run_id"] == run.pk
    assert run.worker_slot is None and run.worker_pgid is None
    assert reap_runs() == 0  # once


def test_a_run_whose_owner_lives_and_beats_is_left_alone(fake_claude, python_project, orphan_group):
    leader, pids = orphan_group
    run = running_run(python_project, pid=os.getpid())
    do_record_run_ownership(run.pk, worker_pgid=leader.pid)

    assert reap_runs() == 0

    run.refresh_from_db()
    assert run.status == "running"
    assert all(process_alive(pid) for pid in pids)


def test_a_run_on_another_host_without_a_heartbeat_for_stale_seconds_is_ended(fake_claude, python_project, settings):
    settings.SUPERVISOR_STALE_SECONDS = 30
    run = running_run(python_project, pid=1, host="some-other-host")
    SkillRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=10))
    assert reap_runs() == 0
    SkillRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=31))

    assert reap_runs() == 1

    run.refresh_from_db()
    assert run.status == "error" and "no heartbeat for 31 s" in run.message


def test_a_slot_held_by_a_running_run_stays_taken_after_its_lock_is_gone(
    fake_claude, python_project, settings, orphan_group
):
    """The dead owner's advisory lock went with its connection; its worker did not: no extra worker may start."""
    settings.SUPERVISOR_MAX_WORKERS = 1
    settings.SUPERVISOR_QUEUE_WAIT = 1
    leader, pids = orphan_group
    run = running_run(python_project, pid=dead_pid())
    do_record_run_ownership(run.pk, worker_pgid=leader.pid, worker_slot=1)

    result = executor.run_worker(
        prompt="x", schema={"type": "object"}, cwd=python_project, model=None, allowed_tools="Read"
    )

    assert result.status == "error" and "worker slots stayed busy" in result.message
    assert fake_claude.calls() == []

    reap_runs()  # the reaper kills the orphan and ends its run: the slot is free again
    assert wait_gone(pids, leader) == []
    with executor.worker_slot() as slot:
        assert slot == 1


def test_a_cancelled_call_kills_the_process_group_of_a_run_whose_owner_died(fake_claude, python_project, orphan_group):
    leader, pids = orphan_group
    run = running_run(python_project, pid=dead_pid())
    do_record_run_ownership(run.pk, worker_pgid=leader.pid)

    tools._cancel(run.pk)

    assert wait_gone(pids, leader) == []
    run.refresh_from_db()
    assert run.status == "cancelled" and run.cancel_requested


@pytest.mark.django_db(transaction=True)  # the heartbeat thread writes on its own connection
def test_the_owner_records_its_pid_group_and_slot_and_beats_while_the_run_goes_on(
    fake_claude, python_project, settings, monkeypatch, tmp_path
):
    import supervisor.tasks as tasks_module

    settings.SUPERVISOR_HEARTBEAT_SECONDS = 0.5
    # The worker works until three heartbeats were seen while it holds its slot (at most 5 s), not a fixed 2.5 s.
    enough = tmp_path / "three-heartbeats-seen"
    fake_claude.script([{"sleep": 5, "tick": 0.2, "until": str(enough), "report": {}}])
    run = start_skill_run("tdd_red", {"project_root": str(python_project), "spec": "add"})
    seen: list[tuple] = []
    fields = ("worker_pid", "worker_host", "worker_pgid", "worker_slot", "heartbeat_at")

    def watch() -> None:  # called with the executor's cancel checks, while a process runs
        seen.append(SkillRun.objects.values_list(*fields).get(pk=run.pk))
        if len({row[4] for row in seen if row[3] == 1}) >= 3:
            enough.touch()

    real = tasks_module.run_worker_skill
    monkeypatch.setattr(
        tasks_module,
        "run_worker_skill",
        lambda run_, progress, cancel_check: real(run_, progress, lambda: watch() or cancel_check()),
    )
    tasks_module.run_skill(run.pk)

    claude_pids = {call["pid"] for call in fake_claude.calls()}
    assert {(pid, host) for pid, host, *_ in seen} == {(os.getpid(), reaper.HOST)}
    during_worker = [row for row in seen if row[2] in claude_pids]  # the claude's own process group
    assert during_worker and all(row[3] == 1 for row in during_worker)  # holding slot 1
    # the baseline and verification test commands: their groups are recorded too, holding no slot
    during_tests = [row for row in seen if row[2] is not None and row[2] not in claude_pids]
    assert during_tests and all(row[3] is None for row in during_tests)
    assert len({row[4] for row in during_worker}) >= 3  # the heartbeat moved while the worker ran
    run.refresh_from_db()
    assert run.is_finished
    assert run.worker_slot is None and run.worker_pgid is None


def test_a_stale_limit_shorter_than_three_heartbeats_fails_the_system_check(settings):
    from supervisor.system_checks import heartbeat_problems

    settings.SUPERVISOR_HEARTBEAT_SECONDS, settings.SUPERVISOR_STALE_SECONDS = 5, 10
    assert "SUPERVISOR_STALE_SECONDS=10" in heartbeat_problems()[0]
    settings.SUPERVISOR_STALE_SECONDS = 30
    assert heartbeat_problems() == []


def test_on_this_host_a_live_owner_is_not_reaped_for_a_missed_heartbeat(fake_claude, python_project, settings):
    """A database outage stops the beats; the owner's pid says it is alive, so its run goes on."""
    run = running_run(python_project, pid=os.getpid())
    SkillRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    assert reap_runs() == 0


def test_on_this_host_a_pid_that_now_belongs_to_a_newer_process_is_an_owner_gone(
    fake_claude, python_project, orphan_group
):
    leader, pids = orphan_group
    newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run = running_run(python_project, pid=newer.pid)
        # claimed an hour ago, by a process that cannot be the one running under that pid now
        SkillRun.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(hours=1))
        do_record_run_ownership(run.pk, worker_pgid=leader.pid)

        assert reap_runs() == 1

        run.refresh_from_db()
        assert run.status == "error" and "newer process" in run.message
        assert wait_gone(pids, leader) == []
        assert newer.poll() is None  # the unrelated process that reused the pid is left alone
    finally:
        newer.kill()
        newer.wait()
