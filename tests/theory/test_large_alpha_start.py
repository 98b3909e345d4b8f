"""A cold start at large α (issue 11 audit): the model's start is fitted at α ≤ 2, and at α = 10 the split
rule's map fails (D ≤ 0) from it. ``solve_point(continuation=True)`` (what ``theory point`` and ``api.solve``
use) reaches the point from α = 2 instead and says so; where it cannot, it returns the failure, saying where
it stopped."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from attnphase.model import ModelParams
from attnphase.theory import solver
from attnphase.theory.solver import solve_point
from attnphase.theory.status import Status


def test_continuation_reaches_the_large_alpha_point_and_it_is_a_fixed_point():
    p = ModelParams(omega=0.3)
    cold = solve_point(p, 10.0, "semantic", stability=False)
    assert not cold.converged                                  # the reason for the continuation
    s = solve_point(p, 10.0, "semantic", stability=False, continuation=True)
    assert s.converged and s.start.startswith("continuation from α = 2")
    assert s.alpha == 10.0 and s.theta > 0
    # a fixed point: iterating again from a perturbed copy of it comes back to it
    kicked = SimpleNamespace(q=1.03 * s.q, m=s.m, theta=0.97 * s.theta, V=1.05 * s.V)
    again = solve_point(p, 10.0, "semantic", stability=False, init=kicked)
    assert again.converged and again.start == "given or model"
    for key in ("q", "theta", "V", "e_t", "eps_g"):
        assert getattr(again, key) == pytest.approx(getattr(s, key), rel=2e-4), key


def test_continuation_that_cannot_get_there_returns_the_failure(monkeypatch):
    real = solver._solve_point

    def fails_above_3(params, alpha, branch="semantic", **kw):
        sol = real(params, alpha, branch, **kw)
        return replace(sol, status=Status.MAX_STEPS, note="stand-in failure") if alpha > 3.0 else sol

    monkeypatch.setattr(solver, "_solve_point", fails_above_3)
    s = solve_point(ModelParams(omega=0.3), 10.0, "semantic", stability=False, continuation=True)
    assert not s.converged and s.start == "given or model"
    assert "continuation from α = 2 stopped at α = " in s.note
    stopped = float(s.note.rsplit("α = ", 1)[1].rstrip(")"))
    assert 2.0 < stopped <= 3.0
