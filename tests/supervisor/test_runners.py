"""Each worker skill's spec names the runner that does its work."""

from __future__ import annotations

from supervisor.runners import RUNNERS
from supervisor.skills import SKILLS


def test_every_skill_with_a_worker_names_a_runner_that_exists_and_only_apply_runs_without_one():
    for name, spec in SKILLS.items():
        if spec.worker_schema is not None or spec.runner is not None:
            assert spec.runner in RUNNERS, name
    # apply is a run like the others (queued, cancellable, reaped) whose work is the supervisor's own: no worker.
    assert [name for name, spec in SKILLS.items() if spec.worker_schema is None and spec.runner] == ["apply"]
