"""Unified diffs of a worker's change: written, capped, applied again (hyperguild.lib.diffs)."""

from __future__ import annotations

import subprocess

import pytest

from hyperguild.lib.diffs import BINARY, PatchFailed, apply_diff, diff_block, fenced, file_diff, join_diffs

BEFORE = {"keep.py": "a = 1\n", "change.py": "one\ntwo\nthree\n", "gone.py": "bye\n", "tail.txt": "no newline"}
AFTER = {
    "keep.py": "a = 1\n",
    "change.py": "one\n2\nthree\nfour\n",
    "new/added.py": "hello\n",
    "tail.txt": "no newline!",
}


def write(root, files):
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


def state(root):
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}


def the_diff() -> str:
    paths = sorted(set(BEFORE) | set(AFTER))
    return join_diffs([file_diff(p, BEFORE.get(p), AFTER.get(p)) for p in paths], cap=100_000)[0]


def test_a_diff_of_new_changed_and_deleted_files_applies_back_to_the_after_state(tmp_path):
    write(tmp_path, BEFORE)
    diff = the_diff()
    assert "new file mode" in diff and "deleted file mode" in diff and "\\ No newline at end of file" in diff
    assert apply_diff(tmp_path, diff) == ["change.py", "gone.py", "new/added.py", "tail.txt"]
    assert state(tmp_path) == AFTER


def test_git_apply_reads_the_same_diff(tmp_path):
    write(tmp_path, BEFORE)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tmp_path, input=the_diff().encode(), check=True)
    assert {k: v for k, v in state(tmp_path).items() if not k.startswith(".git/")} == AFTER


def test_a_diff_that_does_not_match_the_files_writes_nothing(tmp_path):
    write(tmp_path, {**BEFORE, "change.py": "one\nTWO\nthree\n"})
    with pytest.raises(PatchFailed, match="change.py, line 2"):
        apply_diff(tmp_path, the_diff())
    assert state(tmp_path) == {**BEFORE, "change.py": "one\nTWO\nthree\n"}  # gone.py still there


def test_binary_files_are_named_not_inlined_and_a_cut_diff_says_so_and_does_not_apply(tmp_path):
    binary = file_diff("logo.png", BINARY, BINARY)
    assert binary == "diff --git a/logo.png b/logo.png\nBinary files a/logo.png and b/logo.png differ\n"
    with pytest.raises(PatchFailed, match="binary"):
        apply_diff(tmp_path, binary)
    long = file_diff("big.py", None, "".join(f"line {n}\n" for n in range(1000)))
    cut, truncated = join_diffs([long], cap=2000)
    assert truncated and len(cut) < 2100 and cut.rstrip().endswith("characters shown]")
    with pytest.raises(PatchFailed, match="truncated"):
        apply_diff(tmp_path, cut)


def test_the_diff_block_of_an_answer_is_found_again():
    answer = "added a test\n\n" + fenced(the_diff())
    assert diff_block(answer) == the_diff()
    assert diff_block("no diff here") is None
