"""The supervisor judges a worker on the code it wrote, never on Python's cached bytecode of the code before.

Python reuses `__pycache__/<module>.pyc` while the source keeps the size and the modification second the cache
was made from. A worker that turns `a - b` into `a + b` within a second of the previous test run leaves both
unchanged: the suite that verified a TDD attempt failed about one run in four on a fast machine
(`tests/sessions/test_training_change.py`, attempts `[False, False, True]` instead of `[False, True]`)."""

from __future__ import annotations

import os

from supervisor import project_tests

WRONG = "def double(x):\n    return 2 * x\n\n\ndef add(a, b):\n    return a - b\n"
RIGHT = "def double(x):\n    return 2 * x\n\n\ndef add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def test_a_rewrite_within_the_same_second_and_size_is_tested_as_written(python_project):
    source = python_project / "calc.py"
    source.write_text(WRONG)
    (python_project / "tests" / "test_add.py").write_text(TEST)
    command = project_tests.detect_test_command(python_project)
    first = project_tests.run_command(python_project, command)
    assert not first.passed
    stamp = source.stat()
    assert list(python_project.rglob("calc*.pyc")), "the first run cached calc's bytecode"

    source.write_text(RIGHT)  # same size; and the same modification time, as a fast worker's rewrite has
    os.utime(source, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    second = project_tests.run_command(python_project, command)
    assert second.passed, second.output


def test_forgetting_bytecode_leaves_sources_and_dependencies_alone(python_project):
    for folder in ("__pycache__", "tests/__pycache__", ".venv/lib/__pycache__"):
        (python_project / folder).mkdir(parents=True)
        (python_project / folder / "mod.cpython-311.pyc").write_bytes(b"\0")
    assert project_tests.forget_bytecode(python_project) == 2
    assert not (python_project / "__pycache__").exists() and not (python_project / "tests" / "__pycache__").exists()
    assert (python_project / ".venv" / "lib" / "__pycache__" / "mod.cpython-311.pyc").exists()
    assert (python_project / "calc.py").exists() and (python_project / "tests" / "test_double.py").exists()
