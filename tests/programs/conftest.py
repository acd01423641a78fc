"""The programs here are scripts: pytest's ``--doctest-modules`` would import (run) each
one while collecting. tests/test_programs.py runs them, under both libraries."""

collect_ignore_glob = ["[a-z]*.py"]
