"""A pytest plugin that writes each test's outcome, and each failure's traceback, to files as it happens.

Load it with ``-p gpu_suite_plugin`` (``bench/`` on ``PYTHONPATH``; bench/gpu_suite.sh does both). Files, in
the folder ``$GPU_SUITE_DIR`` (default ``$OUT``, else ``./gpu_suite_out``), appended to and closed after
every line, so that a run cut off by a time limit (or killed) still says what ran and why tests failed:

* ``progress.txt``: ``START <nodeid>`` when a test begins, then ``<OUTCOME> <seconds>s <nodeid> [worker]``
  when it ends (PASSED, FAILED, ERROR in setup/teardown, SKIPPED with its reason); tests started but never
  ended were running when the run stopped.
* ``failures.txt``: per failure, a header line, the short traceback (``--tb=short`` style: whatever pytest
  made of it) and the tails of the captured stdout, stderr and log.

Under pytest-xdist only the controller process writes (it receives every worker's reports; a crashed worker
arrives as a failure of the test it was running), so nothing is written twice.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_T0 = time.monotonic()
_TAIL = 3000          # characters kept of each captured section and of the traceback's end
_HEAD = 6000          # characters kept of the traceback's start


def out_dir() -> Path:
    """The folder the files go to (created)."""
    path = Path(os.environ.get("GPU_SUITE_DIR") or os.environ.get("OUT") or "gpu_suite_out")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _append(name: str, text: str) -> None:
    with open(out_dir() / name, "a", encoding="utf-8") as f:
        f.write(text)


def _is_worker() -> bool:
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


def _clip(text: str) -> str:
    if len(text) <= _HEAD + _TAIL:
        return text
    return f"{text[:_HEAD]}\n[... {len(text) - _HEAD - _TAIL} characters left out ...]\n{text[-_TAIL:]}"


def _worker(report) -> str:
    node = getattr(report, "node", None)            # xdist: the worker the report came from
    gateway = getattr(node, "gateway", None)
    return f" [{gateway.id}]" if gateway is not None else ""


def _outcome(report) -> str | None:
    """The line's word for this phase of a test, or None for a phase that says nothing new."""
    if report.when == "call":
        return "FAILED" if report.failed else ("SKIPPED" if report.skipped else "PASSED")
    if report.failed:
        return f"ERROR({report.when})"
    if report.skipped:                              # skipped in setup (skip marks, importorskip)
        return "SKIPPED"
    return None


def pytest_runtest_logstart(nodeid, location):
    if not _is_worker():
        _append("progress.txt", f"{time.monotonic() - _T0:8.1f} START {nodeid}\n")


def pytest_runtest_logreport(report):
    if _is_worker():
        return
    word = _outcome(report)
    if word is None:
        return
    stamp = f"{time.monotonic() - _T0:8.1f}"
    line = f"{stamp} {word} {report.duration:.2f}s {report.nodeid}{_worker(report)}"
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        line += f" -- {report.longrepr[2]}"
    if report.failed:                              # the traceback first: then a FAILED line implies it is on disk
        _append("failures.txt", _failure_text(report, word, stamp))
    _append("progress.txt", line + "\n")


def _failure_text(report, word: str, stamp: str) -> str:
    parts = [f"=== {word} {report.nodeid}{_worker(report)} after {report.duration:.2f}s (t = {stamp} s)\n",
             _clip(report.longreprtext or "(no traceback)").rstrip() + "\n"]
    for title, text in report.sections:           # captured stdout / stderr / log of this test
        if text.strip():
            parts.append(f"--- {title} (last {_TAIL} characters)\n{text[-_TAIL:].rstrip()}\n")
    return "".join(parts) + "\n"


def pytest_sessionfinish(session, exitstatus):
    if not _is_worker():
        _append("progress.txt", f"{time.monotonic() - _T0:8.1f} SESSION FINISHED exit status {int(exitstatus)}\n")
