"""Clean interruption (Ctrl-C / SIGTERM) of a process that runs JAX.

Why not Python's default ``KeyboardInterrupt``: while the main thread waits inside a compiled XLA call the
exception is only raised once the call returns, and when it then unwinds to interpreter shutdown while
XLA's worker threads are still alive, the process dies with SIGSEGV (measured: exit −11 in 5 of 6
trials of ``simulate`` and ``sweep run``; faulthandler shows the crash with no Python frame, i.e. during
finalisation). Instead, :func:`install` lets the C-level signal handler write the signal number into a
pipe (``signal.set_wakeup_fd``); a daemon thread reading it prints one line and ends the process with
``os._exit`` — at once, even while the main thread is inside XLA, and without interpreter teardown.

Worker processes started through :mod:`multiprocessing` (process pools, a Dask LocalCluster) are
terminated first. Work that must not be cut in half (a store transaction, renaming a finished output file into place) runs
inside :func:`critical`; the watcher waits for it to finish before exiting.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Callable, Iterator

_lock = threading.RLock()
_state: dict[str, object] = {"installed": False, "message": None}
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """A section an interrupt waits for (re-entrant; costs one lock acquisition)."""
    with _lock:
        yield


def set_message(message: str | Callable[[], str] | None) -> None:
    """What the one line printed on interruption says (a string, or a callable evaluated then)."""
    _state["message"] = message


def installed() -> bool:
    return bool(_state["installed"])


def install() -> bool:
    """Route SIGINT/SIGTERM to the watcher thread. Main thread only; idempotent. Returns True if installed."""
    if _state["installed"]:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    for sig in EXIT_CODES:
        signal.signal(sig, _ignore)     # a Python-level handler must exist for the wakeup byte to be written
    threading.Thread(target=_watch, args=(r,), name="attnphase-interrupt", daemon=True).start()
    _state["installed"] = True
    return True


def _ignore(signum, frame) -> None:  # noqa: ARG001 -- the watcher thread does the work
    return None


def _watch(fd: int) -> None:
    while True:
        data = os.read(fd, 64)
        if not data:
            return
        for b in data:
            if b in EXIT_CODES:
                _exit(b)


def _exit(signum: int) -> None:
    with _lock:                       # let a running critical section finish
        msg = _state["message"]
        try:
            text = msg() if callable(msg) else msg
        except Exception:  # noqa: BLE001 -- the exit must happen whatever the message does
            text = None
        name = "Ctrl-C" if signum == signal.SIGINT else "SIGTERM"
        line = f"\ninterrupted ({name}): {text or 'stopped, nothing written after this point'}\n"
        os.write(2, line.encode())
        _stop_children()
        _release_semaphores()
        os._exit(EXIT_CODES[signum])


def _stop_children() -> None:
    """Terminate the worker processes this process started (process pools, a Dask LocalCluster): after
    ``os._exit`` nobody would shut them down, and they would finish their task as orphans."""
    mp = sys.modules.get("multiprocessing")
    if mp is None:
        return
    try:
        children = mp.active_children()
    except Exception:  # noqa: BLE001
        return
    for child in children:
        try:
            child.terminate()
        except Exception:  # noqa: BLE001
            pass
    for child in children:
        try:
            child.join(timeout=2.0)
        except Exception:  # noqa: BLE001
            pass


def _release_semaphores() -> None:
    """Unlink the named semaphores of this process's pools and queues before ``os._exit``.

    Without it, multiprocessing's resource tracker (a process of its own) finds them when this process is
    gone, unlinks them itself and prints "resource_tracker: There appear to be N leaked semaphore objects"
    after our one line (issue 30, item 9). multiprocessing registers each one's unlink as a finaliser of
    priority 0 and queue closes at 10; both run here (priority ≥ 0: never the joins of feeder threads, which
    have negative priority and could wait). The runner is not public API, hence the guarded lookup."""
    util = sys.modules.get("multiprocessing.util")
    run = getattr(util, "_run_finalizers", None) if util is not None else None
    if run is None:
        return
    try:
        run(0)
    except Exception:  # noqa: BLE001 -- the exit must happen whatever the cleanup does
        pass
