"""Each skill's arguments, result and worker report are pydantic models; the schemas are generated from them."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from hyperguild.lib.modeljson import ModelJSONError, parse_model_json
from hyperguild.mcp.contracts import input_schema
from supervisor import skills
from supervisor.skills import SKILLS, ReviewInput, ReviewReport, ReviewResult, Verdict, build_result, typed_result

GROUNDED_FINDING = {
    "file": "calc.py",
    "line": 2,
    "severity": "major",
    "title": "off by one",
    "rationale": "the loop stops early",
    "suggestion": "use <=",
    "confidence": 0.9,
    "quote": "for i in range(n - 1):",
}


def test_every_skill_declares_an_input_model_a_result_model_and_a_worker_model_when_it_runs_a_worker():
    for spec in SKILLS.values():
        assert issubclass(spec.input_model, skills.SkillInput) and issubclass(spec.result_model, skills.SkillResult)
    assert [name for name, spec in SKILLS.items() if spec.worker_model] == list(skills.WORKER_SKILLS)
    assert skills.WORKER_SKILLS == ("tdd_red", "tdd_green", "tdd_refactor", "review", "debug", "spec")


def test_every_worker_schema_is_valid_json_schema():
    """Checked here, not at import (the metaschema check is slow): what `claude --json-schema` is given."""
    for name in skills.WORKER_SKILLS:
        schema = skills.worker_schema(name)
        assert schema["type"] == "object", name
        Draft202012Validator.check_schema(schema)


def test_the_worker_schema_is_the_plain_json_schema_of_the_worker_model():
    schema = skills.worker_schema("review")

    assert schema == input_schema(ReviewReport)
    assert schema["additionalProperties"] is False and schema["required"] == ["findings", "verdict", "summary"]
    finding = schema["properties"]["findings"]["items"]
    assert "$ref" not in str(schema) and "title" not in finding and "title" in finding["properties"]
    assert finding["required"] == ["file", "line", "severity", "title", "rationale", "suggestion", "confidence"]


def test_a_worker_answer_without_a_required_field_is_refused_in_the_schemas_own_words():
    with pytest.raises(ModelJSONError, match="'findings' is required"):
        parse_model_json({"verdict": "approve", "summary": "fine"}, skills.worker_schema("review"))
    with pytest.raises(ModelJSONError, match="'findings/0': 'line' is required"):
        lineless = {key: value for key, value in GROUNDED_FINDING.items() if key != "line"}
        parse_model_json({"findings": [lineless], "verdict": "comment", "summary": ""}, skills.worker_schema("review"))


def test_an_answer_the_schema_accepts_builds_the_worker_model_and_keeps_the_findings_extra_keys():
    answer = {"findings": [{**GROUNDED_FINDING, "seen_in": "diff"}], "verdict": "request_changes", "summary": "one bug"}

    report = ReviewReport.model_validate(parse_model_json(answer, skills.worker_schema("review")))

    assert report.findings[0].line == 2 and report.findings[0].model_extra == {"seen_in": "diff"}
    assert report.model_dump(exclude_unset=True) == answer


def test_an_optional_argument_is_absent_not_null_in_the_schema():
    schema = skills.input_schema("tdd_red")

    assert schema["properties"]["test_path"]["type"] == "string"
    assert schema["required"] == ["project_root", "spec"]
    assert skills.input_schema("tier")["required"] == []


def test_a_review_without_paths_or_a_git_range_is_refused_by_the_model_as_by_the_schema():
    with pytest.raises(ValidationError, match="give paths or git_range"):
        ReviewInput.model_validate({"project_root": "/srv/project"})
    assert ReviewInput.model_validate({"project_root": "/srv/p", "git_range": "HEAD~1..HEAD"}).paths is None
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ReviewInput.model_validate({"project_root": "/srv/p", "paths": ["a.py"], "colour": "red"})


def test_a_built_result_is_a_valid_instance_of_the_result_model_and_dumps_back_to_the_same_dict():
    result = build_result(
        "review", status=Verdict.PASS, findings=[{**GROUNDED_FINDING, "patch": None}], verdict="approve"
    )

    model = typed_result("review", result)
    assert isinstance(model, ReviewResult) and model.status is Verdict.PASS and model.findings[0].patch is None
    assert model.model_dump(mode="json") == {**result, "status": "pass"}  # no null where a field was not given


def test_every_result_field_is_required_but_the_usage_the_engine_adds():
    schema = skills.result_schema("review")

    assert schema["required"] == [name for name in ReviewResult.model_fields if name not in ("usage", "budget_warning")]
    assert schema["properties"]["status"]["enum"] == ["pass", "fail", "error", "timeout"]
    assert schema["properties"]["file_path"]["type"] == ["string", "null"]
    assert "usage" in schema["properties"] and "usage" not in skills.result_schema("apply")["properties"]


def test_a_result_with_a_field_its_model_does_not_name_is_refused():
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        typed_result("tier", build_result("tier", colour="red"))


def test_the_neutral_values_of_a_result_are_the_result_models_defaults():
    assert build_result("tier") | {"status": "error"} == {
        **{name: None for name in ("file_path", "verified", "run_id")},
        "status": "error",
        "phase": "tier",
        "skill": "tier",
        "runner_output": "",
        "model_used": "",
        "message": "",
        "attempts": 0,
        "duration_ms": 0,
        "tier": 3,
        "label": "full-online",
        "anthropic_reachable": False,
        "litellm_reachable": False,
        "cached": False,
    }
