"""Benchmarks and simulations: tools for the people who build hyperguild, not part of the service.

Each module with a `__main__` block is a script, run from the checkout as `.venv/bin/python bench/<name>.py ...`
or `.venv/bin/python -m bench.<name> ...`; bench/RESULTS.md keeps the figures with the command that printed them.
Scripts may import the app packages (hyperguild, people, ledger, observability, brain, supervisor, sessions); nothing
there imports bench.
"""
