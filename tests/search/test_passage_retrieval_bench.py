"""bench/passage_retrieval.py on the suite's frozen excerpt of click's docs: what the passage reader's encoder alone
finds among every passage (issue 45). Its figures are for people to read; this checks that it runs, prints each of
them for the project's own questions, and refuses what it cannot read."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench import passage_retrieval

EXCERPT = Path(__file__).resolve().parents[1] / "fixtures" / "click-docs-excerpt" / "docs"


def test_the_encoder_alone_ranks_every_passage_and_prints_what_it_finds_for_the_projects_questions():
    out = io.StringIO()

    call_command(passage_retrieval.Command(), "--project", "click", "--docs", str(EXCERPT), stdout=out)

    printed = out.getvalue()
    files = len(list(EXCERPT.rglob("*.md")))
    assert re.search(rf"click \(tune\), all-MiniLM-L6-v2: \d+ passages of {files} files read in", printed), printed
    found = re.search(
        r"right file in the top 3 by its closest passage: (\d+)/23; a passage with the fact among", printed
    )
    assert found and 0 < int(found.group(1)) <= 23, printed
    near = re.search(r"the 5 closest: (\d+)/23", printed)
    assert near and int(near.group(1)) <= 23, printed
    assert re.search(r"off-topic reading closer than the on-topic median: \d+/14", printed), printed


def test_a_missing_folder_or_weights_are_a_clear_error():
    with pytest.raises(CommandError, match="is not a folder"):
        call_command(passage_retrieval.Command(), "--project", "click", "--docs", "/nowhere/docs", stdout=io.StringIO())
    with pytest.raises(CommandError, match="has no model.safetensors"):
        call_command(passage_retrieval.Command(), "--mpnet", str(EXCERPT), stdout=io.StringIO())
