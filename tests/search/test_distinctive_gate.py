"""The passage gate of brain_answer weighs a question's words by the brain's own vocabulary (issue 45).

A question from another field shares only words most of a project's docs use ("run", "tests", "Python",
"command"); among the few candidate notes search returns those words look rare, so the candidates' own
passages made them look like evidence. Weighed by how many of the brain's notes use them, they are not.
"""

from __future__ import annotations

import pytest

from brain import bm25, passage_reader
from brain.actions import do_ingest_note, do_write_raw_note
from brain.answers import NOTHING_FOUND, answer, distinctive_coverage, mentions
from brain.models import Note
from brain.passages import brain_weights, score_passages, split_passages, tokenize
from brain.search import search

# A project's docs: every page talks about commands, tests and Python.
PAGES = [
    ("Options", "Run the command with an option. Options are declared in Python and each has a test."),
    ("Arguments", "Arguments of a command are positional. Run the tests of your Python code after adding one."),
    ("Prompts", "A command can prompt for a value. The Python function gets it; tests can run it too."),
    ("Shell completion", "Completion for bash and zsh is generated. Run the command in Python tests to see it."),
    ("Parameter types", "Types convert a command line string into a Python value; tests run each conversion."),
    ("Entry points", "Install the package so its console script runs the command. Tests run against Python 3."),
    ("Exceptions", "A usage error prints the command usage and exits. Run tests to check the Python exit code."),
    ("Groups", "A group nests commands; its callback runs first. Python tests run groups like commands."),
    ("Context", "The context carries state from a group to its commands. Tests run it from Python."),
    ("Environment variables", "An option reads an environment variable. Run the command; Python tests set it."),
    ("Files", "The file type opens a path lazily for the command. Tests run it with Python temporary files."),
    ("Progress bars", "A progress bar wraps an iterable in the command. Run it from Python; tests skip the bar."),
    ("Colours", "Styled text uses colours in the command output. Python tests run without a terminal."),
]
# The page that matches: GitHub and the version are each on it once, in passages of their own; its passage about
# tests says only what every page says.
RELEASES = """# Releases

Bugs are reported on GitHub.

The version option prints the version.

Run the tests of a command from Python.
"""
TESTING = """# Testing

The test runner invokes a command in isolation and captures its output and exit code.

Tests run the command in Python.
"""


@pytest.fixture
def project_brain(db, settings):
    settings.BRAIN_EMBEDDER = "off"
    settings.BRAIN_ANSWER_MODEL = ""
    settings.BRAIN_RERANKER_URL = ""
    settings.BRAIN_BM25_FLOOR = 0.25
    settings.BRAIN_BM25_ALONE_FLOOR = 0.40
    bm25.reset()
    for title, body in PAGES:
        do_ingest_note(title=title, body=body, wing="toolkit", source="test")
    do_ingest_note(title="Testing", body=TESTING, wing="toolkit", slug="testing", source="test")
    do_ingest_note(title="Releases", body=RELEASES, wing="toolkit", slug="releases", source="test")
    yield
    bm25.reset()


def test_a_question_sharing_only_words_every_page_uses_is_not_answered(project_brain):
    # (Lower case: "Actions" capitalised is a name no note mentions, which abstains before the passages are
    # weighed, `test_a_question_naming_a_thing_no_note_mentions_is_not_answered`.)
    question = "How do I set up a GitHub actions matrix to run the tests of a command on several Python versions?"

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND, result["answer"]
    assert "its words weighed by how few notes use them" in result["reason"]
    # A question about what only the testing page says is still answered from it.
    answered = answer("How does the test runner capture the output and exit code?")
    assert "captures its output and exit code" in answered["answer"]


def test_words_are_weighed_by_how_many_of_the_brains_notes_use_them():
    notes = 100
    frequency = {"python": 90, "matrix": 1}.get
    weights = brain_weights("Where is the Python matrix?", lambda term: frequency(term, 0), notes)
    assert weights["matrix"] > 5 * weights["python"]
    # "where" says what is asked, not about what: BM25 indexes no stopword, so it must not weigh as unseen.
    assert weights["where"] < weights["python"]


def test_latin_abbreviations_and_negations_are_not_words_of_their_own():
    assert tokenize("Write the docs of my commands, e.g. into a README") == tokenize(
        "Write the docs of my commands, into a README"
    )
    assert tokenize("The keys doesn't change") == tokenize("The keys does not change")
    # An option's single letter is still a word.
    assert "v" in tokenize("repeat -v to raise the level")


def test_e_g_in_a_question_does_not_pick_a_passage_that_says_e_g():
    body = """# Docs

The progress bar is generated from the length of the iterable (e.g. the list of users).

## Docs

* `--output <file>`: An output file to write the generated docs to, like README.md.
"""
    passages = split_passages("Docs", body)
    ranked = score_passages(
        "Can I auto-generate a Markdown reference of all my commands, e.g. into a README?",
        [(None, passage) for passage in passages],
    )
    assert "like README.md" in ranked[0].passage.text


def test_a_question_naming_a_thing_no_note_mentions_is_not_answered(project_brain):
    """Issue 45: "How do I set an environment variable for all build steps in a Dockerfile?" was answered from click's
    page on environment variables, and "… safely with PyYAML?" from its page on defaults: the notes matched the
    question's other words, not what it is about."""
    for question, name in (
        ("How do I set an environment variable for all build steps in a Dockerfile?", "Dockerfile"),
        ("How do I read an option from a file safely with PyYAML?", "PyYAML"),
        ("Can the command run the tests of a Python package as a Celery task?", "Celery"),
    ):
        assert search(question).hits, question  # search lists what matched the other words …

        result = answer(question)

        assert result["answer"] == NOTHING_FOUND and result["sources"] == [], question  # … but nothing answers
        assert result["reason"] == f"Nothing relevant: no note mentions `{name}`, which the question names."


def test_names_the_brain_mentions_an_opening_word_and_acronyms_do_not_stop_an_answer(project_brain):
    # "GitHub" is on the releases page; "Where" opens the sentence; "OS" is an acronym a page may spell out.
    answered = answer("Where are bugs reported, on GitHub?")
    assert "reported on GitHub" in answered["answer"]
    answered = answer("Which OS gets the test runner's captured output and exit code?")
    assert "captures its output and exit code" in answered["answer"]
    answered = answer("Tell me, where does the test runner put the captured output and exit code?")
    assert "captures its output and exit code" in answered["answer"]


def test_the_notes_that_answer_must_mention_what_the_question_names(project_brain):
    """Issue 45, a large brain: some note mentions almost any name ("Flask" in a lab's glassware notes), so "no note
    mentions it" no longer stops "How do I register a Flask blueprint…" from being answered with the pages on
    groups and commands. The notes that answer must mention the name themselves."""
    do_write_raw_note(title="Glassware", body="Rinse the flask with distilled water before each titration.")
    question = "Does a command group in Flask run its callback first?"
    assert search(question).hits  # the page on groups matches its other words

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND and result["sources"] == []
    assert result["reason"] == (
        "Nothing relevant: notes matched its words, but none of them mentions `Flask`, which the question names."
    )
    # A question naming what the page says is answered as before.
    assert "reported on GitHub" in answer("Are bugs of a command group reported on GitHub?")["answer"]


def test_a_note_mentions_a_name_by_its_stem():
    releases = Note(title="Releases", body=RELEASES)
    assert mentions(releases, ["GitHub"]) and mentions(releases, ["Bugs"])
    assert not mentions(releases, ["Flask"]) and not mentions(releases, ["GitHub", "Flask"])


def test_words_a_passage_holds_are_no_answer_when_nothing_reads_like_the_question(project_brain):
    """Issue 45, a large brain: among 5,000 science abstracts "How long should I boil an egg to get a runny yolk?"
    was answered from one on sperm membranes and egg-yolk particles: it holds half the question's weight."""
    # The brain's other notes (raw, waiting for review) hold the question's other words, as a large brain does.
    do_write_raw_note(title="Kitchen", body="Boil the water for a long time. A runny sauce needs to get thicker.")
    do_ingest_note(
        title="Cryopreservation",
        body="Sperm membrane integrity after thawing was measured by flow cytometry with egg-yolk particles in the "
        "extender.",
        wing="lab",
        source="test",
    )
    question = "How long should I boil an egg to get a runny yolk?"
    assert distinctive_coverage(question, list(Note.objects.filter(title="Cryopreservation"))) >= 0.25

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND and result["sources"] == []
    assert result["reason"].startswith("Nothing relevant: passages hold the question's words, but none reads like it")


def test_the_note_that_holds_the_words_must_be_the_one_that_reads_like_the_question(project_brain):
    """Issue 45, a large brain: "How do I make zsh share its command history across open terminal windows?" was
    answered from typer's docs because one science abstract held a third of the question's weight ("make",
    "command", "window") and, another note, a page of the docs read 0.53 like it. Words and reading must be one
    note's."""
    do_ingest_note(
        title="Stroke cohort",
        body="Patients with a history of stroke share risk factors across age groups; the open-label follow-up "
        "lasted two years.",
        wing="lab",
        source="test",
    )
    # A page of the docs holding the question's words one section at a time.
    do_ingest_note(
        title="Shell setup",
        body="# Shell setup\n\nCompletion scripts for bash and zsh are installed in the shell's startup file.\n\n"
        "## History\n\nThe history of this project is in the changelog.\n\n"
        "## Terminals\n\nColours need a terminal that supports them.\n",
        wing="toolkit",
        source="test",
    )
    question = "How do I make zsh share its command history across open terminal windows?"
    cohort = list(Note.objects.filter(title="Stroke cohort"))
    setup = list(Note.objects.filter(title="Shell setup"))
    assert {note.title for note in cohort + setup} <= {hit.title for hit in search(question, vector_veto=False).hits}
    assert distinctive_coverage(question, cohort) >= 0.25 > distinctive_coverage(question, setup)
    pool = [(note.title, passage) for note in cohort + setup for passage in split_passages(note.title, note.body)]
    readings = passage_reader.closest_by_source(question, pool)
    assert readings is not None
    assert readings["Stroke cohort"] < passage_reader.UNRELATED_READING <= readings["Shell setup"], readings
    assert readings["Shell setup"] < passage_reader.GATE_SIMILARITY, readings

    result = answer(question)

    assert result["answer"] == NOTHING_FOUND and result["sources"] == [], result["answer"]
    assert result["reason"].startswith("Nothing relevant: passages hold the question's words, but none reads like it")
