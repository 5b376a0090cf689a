"""The project's tests (unittest).  Discovered (`python -m unittest`), every test runs,
but for CI's shares (GQA_TEST_SHARD: tests/helpers.py, HEAVY), whose tests left to other
runs are left out here."""

from __future__ import annotations

import os


def load_tests(loader, tests, pattern):
    """The package's tests, discovered as unittest discovers them, less those of other shares."""
    from tests.helpers import this_share
    here = os.path.dirname(os.path.abspath(__file__))
    tests.addTests(loader.discover(here, pattern or "test*.py", os.path.dirname(here)))
    return this_share(tests)
