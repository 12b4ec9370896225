"""Bench-only alternatives to hyperguild's own plumbing, built on maintained libraries, far enough to run the
same tests (issue 49). Not part of the product: see bench/plumbing/README.md and bench/RESULTS.md."""
