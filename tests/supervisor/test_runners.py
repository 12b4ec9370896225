"""Each worker skill's spec names the runner that does its work."""

from __future__ import annotations

from supervisor.runners import RUNNERS
from supervisor.skills import SKILLS


def test_every_skill_with_a_worker_names_a_runner_that_exists_and_no_other_skill_does():
    for name, spec in SKILLS.items():
        if spec.worker_schema is not None:
            assert spec.runner in RUNNERS, name
        else:
            assert spec.runner is None, name
