"""Test-session hygiene shared by every test module.

The default suite compiles several hundred distinct XLA programs in one process; without releasing them it
reached Linux's per-process mapping limit and the next compilation crashed the interpreter (see
:mod:`attnphase.compiled_programs`). After each test module the fixture releases JAX's compiled programs once
more than half the limit is in use, so the count stays bounded whatever the order and number of the tests.
"""
from __future__ import annotations

import pytest

from attnphase.compiled_programs import release_if_crowded


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    release_if_crowded(0.5)
