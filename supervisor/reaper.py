"""Runs whose owner is gone: kill what they left running and end them as `error`.

A running SkillRun names its owner: the process that claimed it
(`worker_host`, `worker_pid`), which beats (`heartbeat_at`) every
SUPERVISOR_HEARTBEAT_SECONDS, and the process group of what it runs now
(`worker_pgid`: the `claude` worker or a test command). If the owner dies
(`kill -9` of the django-q2 worker, an OOM kill), the group lives on,
reparented to init. The owner is gone when

- it ran on this host and its pid is dead (or a zombie, or now belongs to a
  process started after the claim), or
- it ran on another host and its last beat is older than
  SUPERVISOR_STALE_SECONDS.

Then its process group gets SIGTERM, SIGKILL shortly after, and the run
ends as `error` (as `cancelled` if the caller had cancelled it), which
frees its worker slot and returns the result to the waiting caller.

Who reaps: the `supervisor-reaper` django-q2 schedule every
SUPERVISOR_REAPER_SECONDS (60 s: django-q2 schedules count in minutes), and
whoever reads a running run: a blocking call waiting on it (when its worker's
pid is gone, or its heartbeat may be stale: `supervisor.tools.wait_for_run`)
and `tasks/get` of a run started as an MCP task (`supervisor.jobs`).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from hyperguild.lib.processes import pid_alive
from supervisor.actions import do_end_orphaned_run
from supervisor.models import SkillRun

logger = logging.getLogger("supervisor")

TERM_GRACE = 2.0
PID_START_SLACK = 2.0  # seconds: /proc/stat's boot time is whole seconds
HOST = socket.gethostname()


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids of a process group, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def kill_process_group(pgid: int) -> None:
    """SIGTERM the group, SIGKILL whatever is left after TERM_GRACE seconds."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + TERM_GRACE
    while time.monotonic() < deadline and _group_members(pgid):
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def process_started_at(pid: int) -> float | None:
    """When `pid` started (epoch seconds, to the clock tick), from /proc; None if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime "))
    except (OSError, IndexError, ValueError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def owner_gone(run: SkillRun) -> str | None:
    """Why the run's owner is gone, or None while it lives.

    On this host the pid decides (a database outage that stopped the heartbeat must not
    get a live run killed); elsewhere only the heartbeat can tell.
    """
    now = timezone.now()
    if run.worker_host == HOST and run.worker_pid is not None:
        if not pid_alive(run.worker_pid):
            return f"its worker process {run.worker_pid} died"
        started = process_started_at(run.worker_pid)
        claimed = (run.started_at or run.created_at).timestamp()
        if started is not None and started > claimed + PID_START_SLACK:
            return f"its worker process {run.worker_pid} died (the pid now belongs to a newer process)"
        return None
    stale = timedelta(seconds=settings.SUPERVISOR_STALE_SECONDS)
    beat = run.heartbeat_at or run.started_at or run.created_at
    if now - beat > stale:
        return f"its worker sent no heartbeat for {int((now - beat).total_seconds())} s (SUPERVISOR_STALE_SECONDS)"
    return None


def stop_run(run: SkillRun, *, status: str, message: str) -> SkillRun | None:
    """Kill the run's process group and end it (None if it had ended already)."""
    if run.worker_pgid and (not run.worker_host or run.worker_host == HOST):
        kill_process_group(run.worker_pgid)
    ended = do_end_orphaned_run(run.pk, status=status, message=message)
    if ended is not None:
        logger.warning("skill run %s ended as %s: %s", run.pk, ended.status, message)
    return ended


def reap_run(run: SkillRun) -> SkillRun | None:
    """Reap one running run if its owner is gone; the ended run, or None."""
    why = owner_gone(run)
    if why is None:
        return None
    return stop_run(
        run,
        status=SkillRun.Status.ERROR,
        message=f"the run was abandoned: {why}; its worker process group was killed",
    )


def reap_if_orphaned(run_id: int) -> SkillRun | None:
    run = SkillRun.objects.running().filter(pk=run_id).first()
    return reap_run(run) if run is not None else None


def reap_orphaned_runs() -> list[int]:
    """Reap every running run whose owner is gone; their ids."""
    return [run.pk for run in SkillRun.objects.running() if reap_run(run) is not None]
