"""bench/gpu_suite_plugin.py (docs/gpu.md): a run's failures and progress are on disk as they happen, so a run
that is killed still says why its tests failed and which were running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"

TINY = textwrap.dedent('''
    import sys, time
    import pytest

    def test_ok():
        pass

    def test_bad():
        print("said on stderr", file=sys.stderr)
        assert 1 + 1 == 3, "distinctive-message-42"

    @pytest.mark.skip(reason="a stated reason")
    def test_skipped():
        pass

    def test_zz_hangs():
        time.sleep(600)
''')


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    (tmp_path / "test_tiny.py").write_text(TINY)
    out = tmp_path / "evidence"
    env = {**os.environ, "GPU_SUITE_DIR": str(out), "PYTHONPATH": str(BENCH)}
    env.pop("PYTEST_XDIST_WORKER", None)       # the run is a controller of its own
    cmd = [sys.executable, "-m", "pytest", "-p", "gpu_suite_plugin", "-p", "no:cacheprovider", "--tb=short",
           "-o", "addopts=", "test_tiny.py", *args]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True), out


def _killed_once_hanging(tmp_path: Path, *args: str) -> Path:
    """Run the tiny file, SIGKILL the whole run once the hanging test has started and the others have ended
    (under xdist they run in parallel with it); the evidence folder."""
    proc, out = _start(tmp_path, *args)
    progress = out / "progress.txt"
    wanted = ("START test_tiny.py::test_zz_hangs", "PASSED", "FAILED", "SKIPPED")
    t0 = time.time()
    while time.time() - t0 < 120 and proc.poll() is None:
        if progress.exists() and all(w in progress.read_text() for w in wanted):
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return out


def test_killed_run_keeps_failures_and_progress(tmp_path):
    out = _killed_once_hanging(tmp_path, "-p", "no:xdist")
    failures = (out / "failures.txt").read_text()
    assert "FAILED test_tiny.py::test_bad" in failures
    assert "distinctive-message-42" in failures and "assert (1 + 1) == 3" in failures   # the traceback
    assert "said on stderr" in failures                                               # captured output
    lines = (out / "progress.txt").read_text().splitlines()
    last = {}                                       # each test's last word: START, then its outcome
    for ln in lines:
        f = ln.split()
        if f[1] == "START":
            last[f[2]] = "START"
        elif len(f) > 3 and "::" in f[3]:
            last[f[3]] = f[1]
    assert last == {"test_tiny.py::test_ok": "PASSED", "test_tiny.py::test_bad": "FAILED",
                    "test_tiny.py::test_skipped": "SKIPPED",
                    "test_tiny.py::test_zz_hangs": "START"}          # started, never ended: running at the kill
    assert any("SKIPPED" in ln and "a stated reason" in ln for ln in lines)
    assert "test_ok" not in failures and "SESSION FINISHED" not in "\n".join(lines)


def test_under_xdist_each_failure_is_written_once(tmp_path):
    out = _killed_once_hanging(tmp_path, "-n", "2")
    failures = (out / "failures.txt").read_text()
    assert failures.count("=== FAILED test_tiny.py::test_bad") == 1 and "distinctive-message-42" in failures
    progress = (out / "progress.txt").read_text()
    assert progress.count("PASSED") == 1 and progress.count("FAILED") == 1
