"""A pytest plugin that puts the library-built alternatives in place of hyperguild's own modules, before any
test module imports them, so the product's own tests run against them unchanged:

    PYTHONPATH=<libraries> HYPERGUILD_PLUMBING=http .venv/bin/python -m pytest -p bench.plumbing.swap \\
        tests/core/test_outbound_http.py

HYPERGUILD_PLUMBING is a comma-separated list of: http (bench/plumbing/http_libs.py: tenacity + pybreaker),
llm (bench/plumbing/llm_sdks.py: the openai and anthropic SDKs).
"""

from __future__ import annotations

import importlib
import os
import sys

ALTERNATIVES = {
    "http": ("hyperguild.lib.http", "bench.plumbing.http_libs"),
    "llm": ("hyperguild.lib.llm", "bench.plumbing.llm_sdks"),
}


def swap(name: str, alternative: str) -> None:
    module = importlib.import_module(alternative)
    sys.modules[name] = module
    package, _, attribute = name.rpartition(".")
    setattr(importlib.import_module(package), attribute, module)


os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hyperguild.settings")
for choice in filter(None, os.environ.get("HYPERGUILD_PLUMBING", "").split(",")):
    swap(*ALTERNATIVES[choice.strip()])
    print(f"bench.plumbing.swap: {ALTERNATIVES[choice.strip()][0]} is {ALTERNATIVES[choice.strip()][1]}", file=sys.stderr)
