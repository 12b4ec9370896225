"""Bench-only alternatives to hyperguild's own plumbing, built on maintained libraries far enough to run the
product's own tests (issue 49): http_libs (tenacity + pybreaker for lib/http.py), llm_sdks (the openai SDK for
lib/llm.py), mcp_sdk (the mcp SDK's server for hyperguild/mcp/). swap.py puts them in place for a pytest run;
bench/plumbing_cpu.py, test_mcp_cpu.py and test_conformance_scores.py measure. Their libraries are listed in
bench/plumbing/requirements.txt (installed apart, not in the product's venv); bench/RESULTS.md has the figures."""
