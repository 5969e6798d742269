"""Workflows used by the tests (importable by worker subprocesses via GRAPHQ_WORKFLOWS)."""
