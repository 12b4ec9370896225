"""Secret redaction: built-in patterns, the operator's pattern file, nested values."""

from __future__ import annotations

import pytest

from sessions.redaction import redact, redact_value


@pytest.mark.parametrize(
    "secret, name",
    [
        ("sk-proj-abcdefghijklmnopqrstuvwx1234", "openai_key"),
        ("ghp_" + "a1B2" * 9, "github_token"),
        ("xoxb-1234567890-abcdefghij", "slack_token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----", "private_key"),
    ],
)
def test_default_patterns_redact_common_tokens(secret, name):
    text, found = redact(f"use {secret} here")
    assert secret not in text and f"[REDACTED:{name}]" in text and found == {name: 1}


def test_bearer_tokens_and_assigned_keys_keep_their_label_but_lose_the_value():
    text, found = redact("Authorization: Bearer abcdef0123456789abcdef\napi_key = 'q8w7e6r5t4y3'")
    assert text == "Authorization: Bearer [REDACTED:bearer_token]\napi_key = '[REDACTED:assigned_secret]'"
    assert found == {"bearer_token": 1, "assigned_secret": 1}


def test_users_extend_the_pattern_list_with_one_regex_a_line(tmp_path, settings):
    patterns = tmp_path / "secrets.txt"
    patterns.write_text("# internal ticket tokens\nCORP-[0-9]{6}\n\n")
    settings.TRAINER_SECRET_PATTERNS_FILE = str(patterns)
    assert redact("token CORP-123456") == ("token [REDACTED:custom_2]", {"custom_2": 1})


def test_every_string_inside_a_nested_value_is_redacted_and_counted():
    value = {"prompt": [{"role": "user", "content": "key AKIAIOSFODNN7EXAMPLE"}], "n": 3, "note": "sk-" + "a" * 24}

    cleaned, found = redact_value(value)

    assert cleaned == {"prompt": [{"role": "user", "content": "key [REDACTED:aws_access_key]"}], "n": 3,
                       "note": "[REDACTED:openai_key]"}  # fmt: skip
    assert found == {"aws_access_key": 1, "openai_key": 1}
