"""The diagram's worker pools submit inside ``interrupts.critical`` (issue 30, item 9: a submit may spawn a
worker; an interrupt that lands before the worker has its start data leaves an EOFError traceback and leaked
semaphores). A stand-in executor runs the columns in this process and checks every submit happens inside the
critical section, for the per-point pool and the lockstep pool."""

import concurrent.futures as cf
from contextlib import contextmanager

import pytest

from attnphase.model import ModelParams
from attnphase.phase import diagram, phase_diagram

from test_diagram_full import ALPHAS, OMEGAS, Fake


@pytest.mark.parametrize("kw", [dict(workers=2), dict(workers=2, chains=2, lockstep=True)])
def test_every_submit_is_inside_the_critical_section(monkeypatch, kw):
    inside = {"depth": 0, "submits": 0}

    @contextmanager
    def recording():
        inside["depth"] += 1
        try:
            yield
        finally:
            inside["depth"] -= 1

    class InProcess:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, *args):
            assert inside["depth"] > 0, "a worker submit outside interrupts.critical"
            inside["submits"] += 1
            fut = cf.Future()
            fut.set_result(fn(*args))
            return fut

    monkeypatch.setattr(diagram, "critical", recording)
    monkeypatch.setattr(cf, "ProcessPoolExecutor", InProcess)
    grid, _ = phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), **kw)
    assert inside["submits"] >= 2 and len(grid) == len(OMEGAS) * len(ALPHAS)
