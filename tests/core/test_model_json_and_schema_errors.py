"""parse_model_json (gateway and worker answers) and the one JSON Schema error wording."""

from __future__ import annotations

import pytest

from hyperguild.lib.modeljson import ModelJSONError, parse_model_json
from hyperguild.lib.schema import error_path, format_schema_errors, schema_problems

SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["ok", "bad"]},
        "findings": {"type": "array", "items": {"type": "object", "required": ["line"]}},
    },
    "required": ["verdict"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    "answer",
    [
        '{"verdict": "ok"}',
        '```json\n{"verdict": "ok"}\n```',
        'Here is my review:\n```\n{"verdict": "ok"}\n```\nThanks.',
        'Sure! {"verdict": "ok"} Hope that helps.',
        {"verdict": "ok"},
    ],
)
def test_the_object_is_found_bare_fenced_in_prose_or_already_structured(answer):
    assert parse_model_json(answer, SCHEMA) == {"verdict": "ok"}


def test_prose_is_not_json_and_an_array_is_not_an_object():
    with pytest.raises(ModelJSONError, match=r"^the answer is not JSON \(Expecting value at position 0\)$"):
        parse_model_json("I think it is fine.")
    with pytest.raises(ModelJSONError, match="^the answer is JSON but a list, not an object$") as caught:
        parse_model_json("[1, 2]")
    assert caught.value.data is None


def test_a_schema_violation_names_the_first_place_and_keeps_the_object():
    answer = '{"verdict": "ok", "findings": [{"line": 1}, {"file": "a.py"}]}'
    with pytest.raises(ModelJSONError) as caught:
        parse_model_json(answer, SCHEMA)
    assert str(caught.value) == "the answer does not match the schema: 'findings/1': 'line' is required"
    assert caught.value.data == {"verdict": "ok", "findings": [{"line": 1}, {"file": "a.py"}]}


def test_schema_errors_are_ordered_by_place_and_worded_once():
    problems = schema_problems(SCHEMA, {"verdict": "maybe", "extra": 1})
    assert [error_path(p) for p in problems] == ["", "verdict"]
    assert format_schema_errors(problems) == (
        "Additional properties are not allowed ('extra' was unexpected); 'verdict': 'maybe' is not one of ['ok', 'bad']"
    )
    assert format_schema_errors(schema_problems(SCHEMA, {})) == "'verdict' is required"
    assert schema_problems(SCHEMA, {"verdict": "ok"}) == []
