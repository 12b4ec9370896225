"""One input model per write: MCP schemas, REST serializers and forms take their fields and limits from brain.inputs."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from brain import inputs
from brain.actions import do_ingest_note, do_promote_note, do_write_raw_note
from brain.api import IngestSerializer, NoteInputSerializer, QuerySerializer
from brain.errors import BrainInputError
from brain.limits import MAX_PLACE_LENGTH, MAX_QUERY_LENGTH, MAX_SEARCH_LIMIT, MAX_TAGS, MAX_TITLE_LENGTH
from brain.models import Note, NoteLink
from brain.views import EditForm, PromoteForm, RefileForm
from hyperguild.mcp.contracts import input_schema
from hyperguild.mcp.registry import find_endpoint

BRAIN = Path(inputs.__file__).parent
WRITES = {
    "brain_write": inputs.RawNoteInput,
    "brain_ingest_raw": inputs.RawNoteInput,
    "brain_ingest": inputs.WikiNoteInput,
    "brain_edit": inputs.NoteEditInput,
    "brain_archive": inputs.NoteArchiveInput,
    "brain_query": inputs.QueryInput,
}


@pytest.mark.parametrize("tool_name", sorted(WRITES))
def test_each_write_tool_takes_its_input_model_from_brain_inputs(tool_name):
    tool = find_endpoint("brain").tools[tool_name]
    assert tool.input_model is WRITES[tool_name]
    assert tool.input_schema == input_schema(WRITES[tool_name])


def test_the_rest_bodies_have_the_fields_of_brain_write_and_brain_query():
    assert set(NoteInputSerializer().fields) == set(inputs.RawNoteInput.model_fields)
    assert set(IngestSerializer().fields) == set(inputs.RawNoteInput.model_fields) | {"wing", "hall", "raw"}
    assert set(QuerySerializer().fields) == set(inputs.QueryInput.model_fields)


@pytest.mark.django_db
def test_the_title_limit_is_one_number_for_mcp_rest_forms_the_model_and_the_action():
    longest, too_long = "t" * MAX_TITLE_LENGTH, "t" * (MAX_TITLE_LENGTH + 1)
    assert input_schema(inputs.RawNoteInput)["properties"]["title"]["maxLength"] == MAX_TITLE_LENGTH
    assert Note._meta.get_field("title").max_length == MAX_TITLE_LENGTH
    assert NoteLink._meta.get_field("target_slug").max_length == Note._meta.get_field("slug").max_length
    assert NoteInputSerializer(data={"title": longest, "body": "b"}).is_valid()
    refused = NoteInputSerializer(data={"title": too_long, "body": "b"})
    assert not refused.is_valid() and "title" in refused.errors
    assert EditForm({"title": longest, "body": "b"}).is_valid()
    assert "title" in EditForm({"title": too_long, "body": "b"}).errors
    with pytest.raises(BrainInputError, match=f"keep it under {MAX_TITLE_LENGTH}"):
        do_write_raw_note(title=too_long, body="b")
    assert not Note.objects.exists()


def test_the_place_limit_is_one_number_for_mcp_rest_and_forms():
    too_long = "w" * (MAX_PLACE_LENGTH + 1)
    assert input_schema(inputs.WikiNoteInput)["properties"]["wing"]["maxLength"] == MAX_PLACE_LENGTH
    assert not IngestSerializer(data={"title": "t", "body": "b", "wing": too_long}).is_valid()
    for form in (PromoteForm, RefileForm):
        assert "wing" in form({"wing": too_long, "title": "t", "slug": "s", "body": "b"}).errors
        assert "hall" in form({"wing": "w", "hall": too_long, "title": "t", "slug": "s", "body": "b"}).errors


def test_a_body_keeps_its_whitespace_and_a_one_line_field_is_trimmed_in_the_forms():
    form = EditForm({"title": "  A title  ", "body": "  indented\n"})
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {"title": "A title", "body": "  indented\n", "version": None, "check": ""}


def test_no_brain_module_restates_the_title_or_the_place_limit():
    restated = re.compile(r'(max_length=|"maxLength":\s*|\[:\s*)(300|100)\b')
    found = [
        f"{path.relative_to(BRAIN)}: {line.strip()}"
        for path in sorted([*BRAIN.glob("*.py"), *BRAIN.glob("actions/*.py"), *BRAIN.glob("views/*.py")])
        if path.name not in {"limits.py"}
        for line in path.read_text().splitlines()
        if restated.search(line)
    ]
    # The review queue's `kind` filter is a search box, not a write.
    assert found == ["views/forms.py: kind = forms.CharField(required=False, max_length=100)"]


@pytest.mark.django_db
def test_a_promote_that_slugs_from_the_title_numbers_a_taken_slug_in_the_action(django_user_model):
    reviewer = django_user_model.objects.create_user("rev")
    do_ingest_note(title="Async IO", body="first", wing="concepts")
    raw = do_write_raw_note(title="draft", body="second")
    promoted = do_promote_note(raw, reviewer=reviewer, wing="concepts", title="Async IO", slug_from_title=True)
    assert promoted.slug == "async-io-2"
    again = do_write_raw_note(title="Async IO", body="third")
    assert again.slug == "async-io-3"  # the note keeps the slug it has when it is already the free one
    kept = do_promote_note(again, reviewer=reviewer, wing="concepts", slug_from_title=True)
    assert kept.slug == "async-io-3"


@pytest.mark.django_db
def test_a_promote_refuses_a_slug_and_slug_from_the_title_together(django_user_model):
    reviewer = django_user_model.objects.create_user("rev")
    raw = do_write_raw_note(title="draft", body="body")
    with pytest.raises(BrainInputError, match="not both"):
        do_promote_note(raw, reviewer=reviewer, wing="concepts", slug="x", slug_from_title=True)
    raw.refresh_from_db()
    assert raw.status == "raw" and raw.slug == "draft"


def test_the_view_no_longer_numbers_slugs():
    assert not [path for path in (BRAIN / "views").glob("*.py") if "_free_slug" in path.read_text()]


def test_the_search_limits_are_one_number_for_brain_query_and_post_query():
    schema = find_endpoint("brain").tools["brain_query"].input_schema["properties"]
    assert (schema["query"]["maxLength"], schema["limit"]["maximum"], schema["tags"]["maxItems"]) == (
        MAX_QUERY_LENGTH,
        MAX_SEARCH_LIMIT,
        MAX_TAGS,
    )
    assert not QuerySerializer(data={"query": "q" * (MAX_QUERY_LENGTH + 1)}).is_valid()
    assert not QuerySerializer(data={"query": "q", "limit": MAX_SEARCH_LIMIT + 1}).is_valid()
    assert not QuerySerializer(data={"query": "q", "tags": ["t"] * (MAX_TAGS + 1)}).is_valid()
    assert QuerySerializer(
        data={"query": "q" * MAX_QUERY_LENGTH, "limit": MAX_SEARCH_LIMIT, "tags": ["t"] * MAX_TAGS}
    ).is_valid()


@pytest.mark.parametrize(
    ("write", "action"),
    [(inputs.RawNoteInput, do_write_raw_note), (inputs.WikiNoteInput, do_ingest_note)],
    ids=["raw-note", "wiki-note"],
)
def test_each_field_of_a_write_is_a_parameter_of_its_action(write, action):
    assert set(write.model_fields) <= set(inspect.signature(action).parameters)


def test_a_model_takes_the_fields_it_names_from_a_rest_body_and_no_others():
    given = {"title": "t", "body": "b", "wing": "concepts", "raw": True}
    raw, wiki = inputs.given(inputs.RawNoteInput, given), inputs.given(inputs.WikiNoteInput, given)
    assert (raw.model_fields_set, raw.title, raw.body) == ({"title", "body"}, "t", "b")
    assert (wiki.model_fields_set, wiki.wing) == ({"title", "body", "wing"}, "concepts")


def test_a_rest_body_keeps_its_text_verbatim_and_trims_one_line_fields():
    serializer = NoteInputSerializer(data={"title": "  A title  ", "body": "  indented\n", "slug": " s "})
    assert serializer.is_valid(), serializer.errors
    assert dict(serializer.validated_data) == {"title": "A title", "body": "  indented\n", "slug": " s "}
    blank_title, blank_query = (
        NoteInputSerializer(data={"title": "   ", "body": "b"}),
        QuerySerializer(data={"query": " "}),
    )
    assert not blank_title.is_valid() and "title" in blank_title.errors
    assert not blank_query.is_valid() and "query" in blank_query.errors


def test_a_rest_body_refuses_frontmatter_that_is_not_a_mapping_in_words():
    serializer = NoteInputSerializer(data={"title": "t", "body": "b", "frontmatter": ["a"]})
    assert not serializer.is_valid()
    assert "mapping" in str(serializer.errors["frontmatter"])
