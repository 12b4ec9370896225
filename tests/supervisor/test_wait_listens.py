"""A blocking skill call waits on the run's notifications, not by reading its row in a loop (issue 49).

The call's wait (`supervisor.tools.wait_for_run`) runs here, in the test's
thread, with a counter on its database connection; the run itself is run by
the skill worker thread (the real executor, the fake claude). Whatever the
run's length, the wait reads the run's row a fixed few times: once when it
starts listening, once when the run is claimed (to learn its worker), once
when it ends. A loop that polled the row would read it more the longer the
run took.
"""

from __future__ import annotations

import pytest
from django.db import connection

from hyperguild.mcp.registry import ToolContext
from supervisor.models import SkillRun
from supervisor.tools import start_skill_run, wait_for_run

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = {"title": "Zqwait title", "spec": "Sum two numbers.", "acceptance_criteria": ["adds"]}


class RunReads:
    """Counts the SELECTs on the SkillRun table that one connection sends."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):  # noqa: ANN001 - Django's execute_wrapper signature
        if sql.lstrip().upper().startswith("SELECT") and SkillRun._meta.db_table in sql:
            self.count += 1
        return execute(sql, params, many, context)


def waited_call(fake_claude, seconds: float) -> tuple[SkillRun, int, list[str]]:
    """A spec run whose worker works for `seconds` (printing as it goes), waited for as a blocking call does."""
    fake_claude.script([{"sleep": seconds, "tick": 0.2, "report": REPORT}])
    run = start_skill_run("spec", {"text": "we need add(a, b)"})
    messages: list[str] = []
    ctx = ToolContext(
        endpoint="supervisor",
        progress_token="t",
        emit=lambda notification: messages.append(notification["params"].get("message", "")),
    )
    reads = RunReads()
    with connection.execute_wrapper(reads):
        finished = wait_for_run(run, ctx)
    return finished, reads.count, messages


def test_a_blocking_call_reads_the_run_a_fixed_few_times_however_long_it_runs(fake_claude, skill_worker):
    short, short_reads, short_messages = waited_call(fake_claude, 0.5)
    long, long_reads, _ = waited_call(fake_claude, 4)
    print(f"\nSkillRun rows read by a blocking call's wait: {short_reads} (0.5 s run), {long_reads} (4 s run)")
    assert short.status == long.status == SkillRun.Status.PASS, (short.message, long.message)
    assert short_messages[0].startswith("spec: queued")  # progress is still relayed
    # Listening, claimed, ended: the count does not grow with the run's length (a 0.25 s poll read it ~16 times).
    assert long_reads <= 4, long_reads
    assert long_reads <= short_reads + 1, (short_reads, long_reads)
