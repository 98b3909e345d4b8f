"""Test-session hygiene shared by every test module.

The default suite compiles several hundred distinct XLA programs in one process; without releasing them it
reached Linux's per-process mapping limit and the next compilation crashed the interpreter (see
:mod:`attnphase.compiled_programs`). After each test module the fixture releases JAX's compiled programs once
more than half the limit is in use, so the count stays bounded whatever the order and number of the tests.

The suite runs in several worker processes (pytest-xdist, ``addopts`` in pyproject.toml); each worker keeps
its own persistent compilation cache (``DIR-gw0``, ``DIR-gw1``, … beside the configured ``DIR``, see
``_worker_cache.py``), set through the environment so that subprocesses started by tests use it too. A serial
run (``-n 0``) keeps ``DIR`` itself. ``DIR`` is the cache the environment names, else a folder of the system's
temporary directory (``_worker_cache.suite_cache_base``): a test run never writes under the home folder.
"""
from __future__ import annotations

import os

import pytest
from _worker_cache import suite_cache_base, worker_cache_dir

from attnphase.compiled_programs import release_if_crowded
from attnphase.xla_cache import CACHE_ENV


def pytest_configure(config):
    path = worker_cache_dir(suite_cache_base(cache_env=CACHE_ENV), os.environ.get("PYTEST_XDIST_WORKER"))
    os.environ[CACHE_ENV] = "off" if path is None else path


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    release_if_crowded(0.5)
