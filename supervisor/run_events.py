"""A run's changes as PostgreSQL notifications: who waits on a run is woken, nobody polls its row.

Every action that changes what a waiter of a run cares about (its status, its
progress, its cancel flag) sends `NOTIFY skill_run_<id>` with the change as
its payload (`notify`), in the action's own transaction: PostgreSQL delivers
a notification only when that transaction commits, and drops it when it rolls
back, so a waiter never hears of a change it cannot read. The heartbeat sends
none (nobody waits on it).

`RunListener` is the waiting side: a dedicated connection (not Django's, which
a request shares with its queries) that LISTENs on one run's channel. A
blocking skill call (`supervisor.tools.wait_for_run`) waits on it for the
run's progress and end; the worker that runs a job waits on it between beats
for the run's cancel flag (`supervisor.tasks`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from types import TracebackType

import psycopg
from django.db import connection
from psycopg import sql

CHANNEL_PREFIX = "skill_run_"


def channel(run_id: int) -> str:
    return f"{CHANNEL_PREFIX}{int(run_id)}"


@dataclass(frozen=True)
class RunChange:
    """What one notification says changed ("" / None: not part of this change)."""

    status: str = ""
    progress: str = ""
    cancel_requested: bool = False

    def payload(self) -> str:
        values: dict[str, str | bool] = {"status": self.status, "progress": self.progress}
        if self.cancel_requested:
            values["cancel_requested"] = True
        return json.dumps(values)

    @classmethod
    def parse(cls, payload: str) -> RunChange:
        try:
            values = json.loads(payload)
        except ValueError:
            return cls()
        if not isinstance(values, dict):
            return cls()
        return cls(
            status=str(values.get("status") or ""),
            progress=str(values.get("progress") or ""),
            cancel_requested=values.get("cancel_requested") is True,
        )


def notify(run_id: int, change: RunChange) -> None:
    """Tell the run's waiters about `change` when the current transaction commits (at once in autocommit)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify(%s, %s)", [channel(run_id), change.payload()])


class RunListener:
    """`with RunListener(run_id) as listener: listener.wait(seconds)`: the run's changes, as they are committed.

    LISTEN is in place when `__enter__` returns: read the row after entering, and no later change is missed."""

    def __init__(self, run_id: int):
        self.run_id = run_id
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def __enter__(self) -> RunListener:
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)  # Django's cursor class wants Django's connection wrapper
        self._conn = psycopg.connect(**params, autocommit=True)
        self._conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(self.run_id))))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def wait(self, seconds: float) -> list[RunChange]:
        """The changes notified within `seconds` (returns at the first one; [] when none came)."""
        assert self._conn is not None, "use RunListener as a context manager"
        changes: list[RunChange] = []
        deadline = time.monotonic() + max(0.0, seconds)
        for notice in self._conn.notifies(timeout=max(0.0, seconds), stop_after=1):
            changes.append(RunChange.parse(notice.payload))
        # stop_after=1 ends at the first; collect what else already arrived with it, without waiting.
        if changes and time.monotonic() < deadline:
            for notice in self._conn.notifies(timeout=0, stop_after=1000):
                changes.append(RunChange.parse(notice.payload))
        return changes
