"""Lockstep: several branch continuations of the (α, ω) diagram run at once, their split-rule map evaluations
gathered into ONE compiled call (MODEL.md §6; :func:`attnphase.theory.split_xla.map_sums_batch`).

Each continuation is the unchanged per-point path (:func:`.continuation.follow_branch` → the split rule's
point solver → :func:`attnphase.theory.channel.channel`), run in a thread of its own. Where such a thread
evaluates the map, :func:`attnphase.theory.split_xla.map_sums` hands the request to the :class:`Lockstep`
(:func:`attnphase.theory.split_xla.routed`), which waits until every running continuation has asked for an
evaluation (or finished), evaluates them all in one call and hands the results back. A cell's iteration — its
start, Anderson steps, stopping, fallbacks, growth factor — is the per-point one, so its state and values are
those of the per-point path (up to the order of the final sums' additions, ~1e-12 relative); cells stop
individually (their threads leave the lockstep), a failed cell takes the per-point path's own retries.

Why threads: the continuation (adaptive step, retries, branch ends) is sequential Python per branch; the
threads keep it as it is, and only the compiled map runs batched (it releases the GIL while it runs).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

_current: "Lockstep | None" = None


class Lockstep:
    """Gathers the map evaluations of its member threads into batched calls (module docstring)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._members: set[int] = set()
        self._starting = 0
        self._pending: dict[int, tuple] = {}
        self._results: dict[int, Any] = {}
        self.calls = 0
        """Batched calls made (one per kind of evaluation and rule present in a round)."""
        self.requests = 0
        """Map evaluations served."""

    def claims(self) -> bool:
        """Whether the calling thread is a member (its map evaluations go through :meth:`submit`)."""
        return threading.get_ident() in self._members

    def submit(self, outer, rule, scalars, warm, full):
        """One map evaluation of a member thread: returns :func:`~attnphase.theory.split_xla.map_sums`'s result
        once every member has asked for one (or left)."""
        me = threading.get_ident()
        with self._cv:
            self._pending[me] = (rule, (outer, scalars, warm, full))
            self._run_if_ready()
            while me not in self._results:
                self._cv.wait()
            res = self._results.pop(me)
        if isinstance(res, BaseException):
            raise res
        return res

    def _run_if_ready(self) -> None:
        """With the lock held: evaluate the pending requests when every member waits on one."""
        if self._starting or not self._pending or len(self._pending) < len(self._members):
            return
        from ..theory.split_xla import map_sums_batch

        batch, self._pending = self._pending, {}
        by_rule: dict = {}
        for ident, (rule, req) in batch.items():
            by_rule.setdefault(rule, []).append((ident, req))
        for rule, items in by_rule.items():
            try:
                res = map_sums_batch(rule, [req for _, req in items])
            except BaseException as exc:    # handed to every requester, raised in its own thread
                res = [exc] * len(items)
            self.calls += 1
            self.requests += len(items)
            self._results.update({ident: r for (ident, _), r in zip(items, res)})
        self._cv.notify_all()

    def run(self, jobs: Sequence[Callable[[], Any]]) -> list:
        """Run ``jobs`` (callables) each in a member thread, in lockstep with every other member; returns their
        results in order (an exception of a job is raised here, after all have finished)."""
        out: list = [None] * len(jobs)
        errors: list[BaseException] = []
        with self._cv:
            self._starting += len(jobs)

        def body(i: int, job: Callable[[], Any]) -> None:
            me = threading.get_ident()
            with self._cv:
                self._members.add(me)
                self._starting -= 1
            try:
                out[i] = job()
            except BaseException as exc:
                errors.append(exc)
            finally:
                with self._cv:
                    self._members.discard(me)
                    self._run_if_ready()

        threads = [threading.Thread(target=body, args=(i, job), daemon=True) for i, job in enumerate(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return out


def current() -> Lockstep | None:
    """The lockstep of this process while :func:`run_lockstep` runs, else None."""
    return _current


def run_jobs(jobs: Sequence[Callable[[], Any]]) -> list:
    """``jobs`` in lockstep where a lockstep is running in this process, else one after the other."""
    lock = _current
    return lock.run(jobs) if lock is not None else [job() for job in jobs]


def run_lockstep(tasks: Sequence[Callable[[], Any]]) -> tuple[list, dict[str, int]]:
    """Run ``tasks`` (e.g. the diagram's ω chains) each in a thread of its own, inside one :class:`Lockstep` whose
    members are the jobs the tasks start with :func:`run_jobs`. Returns the tasks' results and the counts
    ``{"calls": batched calls, "requests": map evaluations}``."""
    global _current
    from ..theory.split_xla import routed

    if _current is not None:
        raise RuntimeError("run_lockstep: already running in this process")
    lock = Lockstep()
    out: list = [None] * len(tasks)
    errors: list[BaseException] = []

    def body(i: int, task: Callable[[], Any]) -> None:
        try:
            out[i] = task()
        except BaseException as exc:
            errors.append(exc)

    _current = lock
    try:
        with routed(lock):
            threads = [threading.Thread(target=body, args=(i, t), daemon=True) for i, t in enumerate(tasks)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        _current = None
    if errors:
        raise errors[0]
    return out, {"calls": lock.calls, "requests": lock.requests}
