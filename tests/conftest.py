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

Under xdist (``--dist loadfile``, whole files per worker) the files are handed out heaviest first
(:func:`pytest_collection_modifyitems`, :data:`HEAVY_FILES`), so that the last files to run are short ones and
neither worker idles at the end while the other finishes a long file (docs/notes/2026-12-06-suite-speed-2.md).
"""
from __future__ import annotations

import os

import pytest
from _worker_cache import suite_cache_base, worker_cache_dir

from attnphase.compiled_programs import release_if_crowded
from attnphase.xla_cache import CACHE_ENV


HEAVY_FILES = {
    # file -> its approximate cost in seconds (sum of its tests' durations in the default run on the 2 cores,
    # 2026-12-06; only the order matters). Refresh from a run's `--durations=0` when a file gets much slower.
    "tests/theory/test_theory.py": 110,
    "tests/test_landscape.py": 75,
    "tests/test_real_runs.py": 70,
    "tests/test_precision.py": 50,
    "tests/test_exported_programs.py": 45,
    "tests/test_cli_landscape.py": 45,
    "tests/test_gpu_session.py": 40,
    "tests/theory/test_split_resolution.py": 40,
    "tests/theory/test_finite_d_theory.py": 40,
    "tests/test_safety_fuzz.py": 35,
    "tests/test_phase_variant_rows.py": 35,
    "tests/theory/test_onset_newton.py": 30,
    "tests/theory/test_starts.py": 30,
    "tests/test_phase_continuation.py": 30,
    "tests/test_transition_models.py": 25,
    "tests/test_xla_cache.py": 25,
    "tests/test_science_mutants.py": 25,
    "tests/test_diagram_lockstep.py": 20,
    "tests/theory/test_stability_general.py": 20,
    "tests/test_transition_variants.py": 20,
    "tests/test_solve.py": 18,
    "tests/test_scaling.py": 18,
    "tests/theory/test_strong_ridge.py": 16,
    "tests/test_L3_cluster_hessian.py": 16,
    "tests/theory/test_lower_rank_student.py": 15,
}
"""The default run's heaviest files (the rest, unlisted, follow in xdist's own order: most tests first)."""


def pytest_configure(config):
    path = worker_cache_dir(suite_cache_base(cache_env=CACHE_ENV), os.environ.get("PYTEST_XDIST_WORKER"))
    os.environ[CACHE_ENV] = "off" if path is None else path


def pytest_collection_modifyitems(session, config, items):
    """In an xdist worker (the files are scheduled in the collected order, ``--no-loadscope-reorder`` in
    ``addopts``): the files of :data:`HEAVY_FILES` first, heaviest first, then the others by their number of
    tests (xdist's default order); the tests of a file keep their order. A serial run keeps pytest's order."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    order = sorted(files, key=lambda f: (-HEAVY_FILES.get(f, 0), -len(files[f])))
    items[:] = [item for f in order for item in files[f]]


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    yield
    release_if_crowded(0.5)
