"""Parallel test runs (pytest-xdist): each worker process writes its own persistent compilation cache
(tests/_worker_cache.py, set up in conftest.py), never one that another worker writes at the same time."""
import os
import subprocess
import sys
from pathlib import Path

from _worker_cache import worker_cache_dir

import attnphase
from attnphase.xla_cache import cache_setting


def test_worker_dirs_are_distinct_and_beside_the_base():
    base = os.path.join("home", "u", ".cache", "attnphase", "xla")
    dirs = {worker_cache_dir(base, w) for w in ("gw0", "gw1", "gw2")}
    assert len(dirs) == 3 and base not in dirs
    assert all(os.path.dirname(d) == os.path.dirname(base) for d in dirs)
    assert worker_cache_dir(base + os.sep, "gw0") == worker_cache_dir(base, "gw0")


def test_serial_runs_and_a_disabled_cache_are_left_alone():
    assert worker_cache_dir("/c/xla", None) == "/c/xla"
    assert worker_cache_dir("/c/xla", "") == "/c/xla"
    assert worker_cache_dir(None, "gw0") is None


def test_this_worker_and_its_subprocesses_use_its_own_cache():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    setting = cache_setting()
    if worker and setting is not None:
        assert setting.endswith(f"-{worker}")
    # a CLI or script started by a test reads the same setting (the environment carries it)
    code = "from attnphase.xla_cache import cache_setting; print(cache_setting())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(attnphase.__file__).parents[1])})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(setting)


def test_the_suite_cache_is_never_under_the_home_folder():
    """Unless the environment names a cache, a test run writes its compilation cache in the temporary folder."""
    from _worker_cache import suite_cache_base
    base = suite_cache_base({})
    assert base is not None and not base.startswith(os.path.expanduser("~") + os.sep)
    assert suite_cache_base({"ATTNPHASE_XLA_CACHE": "off"}) is None
    assert suite_cache_base({"ATTNPHASE_XLA_CACHE": "/x/y"}) == "/x/y"
    # this run's setting (conftest.py) follows the same rule
    setting = cache_setting()
    assert setting is None or not setting.startswith(os.path.join(os.path.expanduser("~"), ".cache"))
