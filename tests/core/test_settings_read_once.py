"""Settings are defined once, in hyperguild/settings.py, and app code reads them as `settings.NAME`.

A `getattr(settings, NAME, default)` in app code is a second definition of the default that
drifts (BRAIN_BM25_DIR once defaulted to `var/bm25` in settings and to "" in the BM25 module).
"""

from __future__ import annotations

from pathlib import Path

from brain import bm25

ROOT = Path(__file__).resolve().parents[2]
APP_PACKAGES = ("hyperguild", "brain", "supervisor", "sessions", "people", "ledger", "observability")
# Files another branch is rewriting (the MCP engine); their reads move to `settings.NAME` there.
NOT_YET = {"hyperguild/mcp/registry.py"}


def app_sources() -> list[Path]:
    return [
        path
        for package in APP_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts and path.name != "settings.py"
    ]


def test_app_code_never_reads_a_setting_with_a_fallback():
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in app_sources()
        if str(path.relative_to(ROOT)) not in NOT_YET
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if "getattr(settings" in line
    ]
    assert not offenders, "define the setting in hyperguild/settings.py and read settings.NAME:\n" + "\n".join(
        offenders
    )


def test_the_grep_sees_app_code():
    names = {str(path.relative_to(ROOT)) for path in app_sources()}
    assert {"brain/bm25/storage.py", "hyperguild/lib/http.py", "hyperguild/apps.py"} <= names


def test_bm25_shares_bases_where_the_setting_says(settings, tmp_path):
    settings.BRAIN_BM25_DIR = str(tmp_path)
    assert bm25.shared_dir("corpus-1") == tmp_path / "corpus-1"
    settings.BRAIN_BM25_DIR = ""
    assert bm25.shared_dir("corpus-1") is None  # empty: bases stay in memory, one per process


def test_the_bm25_folder_defaults_to_var_bm25_under_the_data_dir(settings):
    from hyperguild.lib.env import env_str

    assert settings.BRAIN_BM25_DIR == env_str("BRAIN_BM25_DIR", str(Path(settings.DATA_DIR) / "bm25"))
