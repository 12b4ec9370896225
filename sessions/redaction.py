"""Secret redaction for the sessions app: the one pass lives in `hyperguild.lib.redaction`.

Every app redacts through the same patterns (and `TRAINER_SECRET_PATTERNS_FILE`):
the supervisor before it stores worker output and routing bodies, the brain
before it stores a note, this app before it stores a session entry, a
retrospective or a training example.
"""

from hyperguild.lib.redaction import (  # noqa: F401 - re-exported
    DEFAULT_SECRET_PATTERNS,
    REDACTED,
    add_counts,
    load_pattern_file,
    redact,
    redact_fields,
    redact_value,
    redaction_summary,
    secret_patterns,
)
