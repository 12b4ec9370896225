"""A note's passages are read ahead in the background, so the first question over it does not wait for the encoder.

Issue 45's notes named it as missing: a question over passages nobody had asked about yet paid about 1.3 s on its
first ask (all-MiniLM-L6-v2 reading the READ_POOL best passages of its candidates). Now each write's background work
includes a `brain.tasks.read_note_passages` task for the same notes, which stores their passages' vectors
(PassageVector); brain_answer then finds them stored and encodes only the question.

`transaction=True`: the background work is queued once the write's transaction has committed.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from django_q.models import OrmQ

from brain import passage_reader, tasks
from brain.actions import do_ingest_note, do_write_raw_note
from brain.answers import answer
from brain.indexing import READ_TASK, notes_changed_in_bulk
from brain.models import Note, PassageVector
from brain.passage_reader import digest
from brain.passages import split_passages
from brain.tasks import READ_BRAIN_TASK, read_brain_passages, read_note_passages
from hyperguild.contributions import serve_start_hooks
from hyperguild.lib import minilm

pytestmark = pytest.mark.django_db(transaction=True)

# A project's docs, our own words: several passages each.
PAGES = {
    "Prompts": "# Prompts\n\nA command can prompt the user for a value when it is not given on the command line.\n\n"
    "Pass `prompt=True` to the option.\n\n* `hide_input=True` hides what the user types.\n"
    "* `confirmation_prompt=True` asks for it twice.",
    "Colours": "# Colours\n\nStyled text uses colours in the command output.\n\nNone are used when the output is "
    "piped to another program.",
    "Files": "# Files\n\nThe file type opens a path lazily for the command.\n\n```python\n@click.argument('src', "
    "type=click.File('rb'))\n```\n\nIt closes the file when the command ends.",
}


@pytest.fixture
def reader_brain(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_PASSAGE_READER = "minilm"
    passage_reader.forget()
    with notes_changed_in_bulk():
        ids = [do_ingest_note(title=title, body=body, wing="docs", source="test").id for title, body in PAGES.items()]
    yield ids
    passage_reader.forget()


def queued_reads() -> list[dict]:
    return [row.task for row in OrmQ.objects.all() if row.task["func"] == READ_TASK]


def test_a_write_queues_its_passages_and_the_first_question_encodes_only_itself(reader_brain, monkeypatch):
    ids = reader_brain
    [task] = queued_reads()  # one task for the batch, as for its similar-notes ranking
    assert sorted(task["args"]) == sorted(ids)
    assert PassageVector.objects.count() == 0

    done = read_note_passages(*task["args"])

    assert done["notes"] == len(PAGES) and done["queued"] == 0
    assert done["read"] == done["passages"] == PassageVector.objects.count() > len(PAGES)
    assert read_note_passages(*ids)["read"] == 0  # each passage is read once

    # A web process that never read them (its own cache empty): the question is the only text it encodes.
    passage_reader.forget()
    model = passage_reader.encoder()
    assert model is not None
    encoded: list[str] = []
    real_encode = model.encode

    def counting_encode(texts: list[str]):
        encoded.extend(texts)
        return real_encode(texts)

    monkeypatch.setattr(model, "encode", counting_encode)
    question = "How do I hide what the user types at a prompt?"
    result = answer(question)
    assert "hide_input" in result["answer"], result
    assert encoded == [question]


def test_what_the_slice_did_not_reach_is_queued_as_a_task_of_its_own(reader_brain):
    ids = reader_brain
    OrmQ.objects.all().delete()

    done = read_note_passages(*ids, max_seconds=0)

    assert (done["notes"], done["read"], done["queued"]) == (0, 0, len(ids))
    [task] = queued_reads()
    assert list(task["args"]) == ids
    assert read_note_passages(*task["args"])["notes"] == len(ids)


def test_with_the_reader_off_nothing_is_queued_or_read(settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_PASSAGE_READER = "off"
    note = do_ingest_note(title="Colours", body=PAGES["Colours"], wing="docs", source="test")

    for hook in serve_start_hooks():
        hook()

    assert queued_reads() == []
    assert not [row for row in OrmQ.objects.all() if row.task["func"] == READ_BRAIN_TASK]
    assert read_note_passages(note.id) == {"skipped": "the passage reader is off"}
    assert read_brain_passages() == {"skipped": "the passage reader is off"}
    assert PassageVector.objects.count() == 0


def test_a_raw_note_is_not_read_ahead(reader_brain):
    """brain_answer quotes wiki notes only: a raw note's passages are read when a review asks, not ahead."""
    raw = do_write_raw_note(title="Idea", body=PAGES["Colours"].replace("Colours", "Idea"), source="test")

    done = read_note_passages(raw.id)

    assert (done["notes"], done["read"]) == (0, 0)
    assert PassageVector.objects.count() == 0


def test_the_queued_task_runs_through_django_q(reader_brain):
    """The queued message itself, run by django-q2's own machinery (`sync=True`): its function path and arguments
    reach `read_note_passages`, and the passages are stored."""
    from django_q.tasks import async_task, result

    [task] = queued_reads()
    done = async_task(task["func"], *task["args"], sync=True)

    assert result(done)["notes"] == len(PAGES)
    assert PassageVector.objects.count() > len(PAGES)


def test_a_long_page_is_read_over_several_slices(reader_brain, monkeypatch):
    """A slice stops between batches of the encoder, not only between notes: a reference page of a thousand
    passages never holds a worker for minutes. What one slice stored, the next skips."""
    ids = reader_brain
    notes = list(Note.objects.filter(pk__in=ids).order_by("pk"))
    total = len({p.text for note in notes for p in split_passages(note.title, note.body)})
    monkeypatch.setattr(minilm, "BATCH", 2)
    ticks = itertools.count()  # each look at the clock is one second later
    monkeypatch.setattr(passage_reader, "time", SimpleNamespace(monotonic=lambda: next(ticks)))

    assert passage_reader.read_ahead(notes, deadline=1) == (0, 0, 2)  # one batch, then the deadline had passed
    assert PassageVector.objects.count() == 2
    done, passages, read = passage_reader.read_ahead(notes)
    assert (done, passages, read) == (len(notes), total, total - 2)


def test_the_worker_reading_ahead_keeps_no_vector_in_its_own_memory(reader_brain):
    # The worker never asks for them again: before, it kept up to 50,000 of them (about 75 MB) in its process.
    passage_reader.forget()

    done = read_note_passages(*reader_brain)

    assert done["read"] == PassageVector.objects.count() > len(PAGES)
    assert len(passage_reader._cache) == 0


def wiki_digests() -> set[str]:
    notes = Note.objects.filter(status="wiki")
    return {digest(passage.text) for note in notes for passage in split_passages(note.title, note.body)}


def test_notes_never_read_ahead_are_read_once_serve_starts(reader_brain, monkeypatch):
    """Notes written before passages were read with each write (or while the reader was off) were read only when a
    question first needed them. `serve`'s start queues one task that reads every wiki note's passages, without
    loading the encoder in serve's own process."""
    OrmQ.objects.all().delete()  # the writes' own reading tasks never ran
    raw = do_write_raw_note(
        title="Idea", body="# Idea\n\nA raw thought about prompts nobody reviewed yet.", source="test"
    )

    with monkeypatch.context() as serve_process:
        serve_process.setattr(passage_reader, "encoder", lambda: pytest.fail("serve's start loaded the encoder"))
        for hook in serve_start_hooks():
            hook()
        for hook in serve_start_hooks():  # a second start while the first task waits queues no second one
            hook()

    [task] = [row.task for row in OrmQ.objects.all() if row.task["func"] == READ_BRAIN_TASK]
    done = read_brain_passages(*task["args"])
    assert (done["notes"], done["next_after"]) == (len(PAGES), None)
    stored = set(PassageVector.objects.values_list("digest", flat=True))
    assert stored == wiki_digests()
    assert not {digest(p.text) for p in split_passages(raw.title, raw.body)} & stored
    assert read_brain_passages()["read"] == 0  # the next start finds them stored


def test_reading_the_whole_brain_goes_on_in_slices_each_queueing_the_next(reader_brain, monkeypatch):
    """A slice stops between notes already read too (each costs its split and a lookup): a brain of thousands of
    notes read long ago never holds a worker past its slice at each start."""
    OrmQ.objects.all().delete()
    notes = list(Note.objects.filter(pk__in=reader_brain).order_by("pk"))
    passage_reader.read_ahead(notes[:-1])  # all but the last were read with their writes
    monkeypatch.setattr(tasks, "BRAIN_READ_PAGE", 2)
    ticks = itertools.count()  # each look at the clock is one second later
    clock = SimpleNamespace(monotonic=lambda: next(ticks))
    monkeypatch.setattr(passage_reader, "time", clock)
    monkeypatch.setattr(tasks, "time", clock)

    first = read_brain_passages(0, max_seconds=2)

    assert 0 < first["notes"] < len(PAGES) and first["next_after"] is not None and first["read"] == 0
    [task] = [row.task for row in OrmQ.objects.all() if row.task["func"] == READ_BRAIN_TASK]
    assert list(task["args"]) == [first["next_after"]]
    rest = read_brain_passages(*task["args"], max_seconds=None)
    assert first["notes"] + rest["notes"] == len(PAGES) and rest["next_after"] is None
    assert set(PassageVector.objects.values_list("digest", flat=True)) == wiki_digests()
