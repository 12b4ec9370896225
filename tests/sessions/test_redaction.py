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

    assert cleaned == {
        "prompt": [{"role": "user", "content": "key [REDACTED:aws_access_key]"}],
        "n": 3,
        "note": "[REDACTED:openai_key]",
    }
    assert found == {"aws_access_key": 1, "openai_key": 1}


# Issue 35, finding 10: kinds that were stored as written. Built from parts so no scanner flags this file.
def _jwt() -> str:
    import base64
    import json

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': 'olga', 'exp': 1999999999})}.Sfl" + "Kx" * 20


HGP = "hgp_3f9a2c1b" + "q8w7E6r5T4y3u2I1o0p9" * 2 + "Ab3"
MISSED_KINDS = [
    (HGP, "hyperguild_token", HGP),
    ("sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", "stripe_key", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("postgres://app:" + "s3cr3t-pw" + "@db.internal:5432/prod", "url_password", "s3cr3t-pw"),
    (_jwt(), "jwt", _jwt().split(".")[1]),
    ("AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "google_api_key", "SyD-9tSrke72PouQMnMX"),
    ("AKIA\u200bIOSFODNN7EXAMPLE", "aws_access_key", "IOSFODNN7EXAMPLE"),
    ("AKIA\u2060IOSF\u00adODNN7EXAMPLE", "aws_access_key", "ODNN7EXAMPLE"),
]


@pytest.mark.parametrize("secret, name, part", MISSED_KINDS, ids=[name for _, name, _ in MISSED_KINDS])
def test_each_kind_of_secret_that_was_stored_as_written_is_redacted(secret, name, part):
    text, found = redact(f"deploy with {secret} today")
    assert part not in text and f"[REDACTED:{name}]" in text, text
    assert found == {name: 1}


def test_a_url_keeps_its_user_and_host_and_loses_only_the_password():
    text, _ = redact("DATABASE_URL=postgres://app:" + "s3cr3t-pw" + "@db.internal:5432/prod")
    assert text == "DATABASE_URL=postgres://app:[REDACTED:url_password]@db.internal:5432/prod"


def test_text_without_a_secret_comes_back_exactly_as_given_invisible_characters_and_all():
    family = "the team \U0001f468\u200d\U0001f469\u200d\U0001f467 and a soft\u00adhyphen"
    assert redact(family) == (family, {})
    # The 12-character prefix that names a personal token on the Tokens page is no secret.
    assert redact("revoked hgp_3f9a2c1b (laptop)") == ("revoked hgp_3f9a2c1b (laptop)", {})


def test_a_string_that_only_looks_like_a_jwt_is_left_alone():
    assert redact("eyJhbGciOi.notjson.x") == ("eyJhbGciOi.notjson.x", {})
