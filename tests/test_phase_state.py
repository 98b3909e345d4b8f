"""phase/ on the one solution type: the continuation predicts on the state (OrderParams, any r, k, r*), the
engine's statuses and numeric stability are classified, α_c/α_l errors follow from the integration errors."""

import math

import numpy as np
import pandas as pd
import pytest

from attnphase.model import ModelParams
from attnphase.phase import PointState, follow_branch, point_state
from attnphase.phase.uncertainty import line_error, transition_errors
from attnphase.theory.solution import Solution
from attnphase.theory.state import Hats, OrderParams
from attnphase.theory.status import Status

P3 = ModelParams(L=3, r=2, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)


def _state(alpha):
    """A smooth r = 2, k = 3, r* = 1 semantic state (q, θ curved in α so the predictor is tested)."""
    q = np.array([[0.05 + 0.03 * alpha ** 2, 0.01 * alpha], [0.01 * alpha, 0.02 + 0.01 * alpha]])
    th = np.array([[0.1 * math.sqrt(alpha)], [0.02 * alpha]])
    return OrderParams(q, np.zeros((2, 3)), th, np.array([[12.0, 0.5], [0.5, 9.0]]))


def make_solver(calls, status=Status.CONVERGED, growth=0.4):
    def solver(params, alpha, branch, *, nodes=None, init=None, **kw):
        calls.append(dict(alpha=alpha, init=init))
        x = _state(alpha)
        vals = dict(q=float(np.trace(x.q)), m=0.0, V=float(np.trace(x.V)), theta=float(np.linalg.norm(x.theta)),
                    e_t=0.002 * alpha, eps_g=0.004 - 0.001 * alpha)
        hats = Hats(*(np.zeros_like(b) for b in x))
        return Solution(params, float(alpha), branch, x, hats, vals, dict(e_t=1e-5, eps_g=2e-5), status, 8, 1e-7,
                        growth, 0.01, "qmc")
    return solver


def test_continuation_predicts_on_the_state_for_any_shape():
    calls = []
    br = follow_branch(P3, [1.2, 1.0, 0.8], "semantic", solver=make_solver(calls))
    assert [p.state for p in br] == [PointState.OK] * 3
    start = calls[2]["init"]       # linear extrapolation of the two previous states, block by block
    want = OrderParams(*(2 * a - b for a, b in zip(_state(1.0), _state(1.2))))
    for got, exp, name in zip(start.x, want, OrderParams._fields):
        assert np.allclose(got, exp, atol=1e-15), name
    assert start.x.M.shape == (2, 3) and not start.x.M.any()       # pinned: M = 0 on the semantic branch


def test_engine_statuses_and_numeric_stability_are_classified():
    sol = make_solver([])
    assert point_state(sol(P3, 1.0, "semantic")) is PointState.OK
    assert point_state(make_solver([], growth=1.3)(P3, 1.0, "semantic")) is PointState.UNSTABLE
    assert point_state(make_solver([], growth=math.nan)(P3, 1.0, "semantic")) is PointState.UNKNOWN
    for st in (Status.NOT_SIGNIFICANT, Status.COLLAPSED):
        assert point_state(make_solver([], status=st)(P3, 1.0, "positional")) is PointState.COLLAPSED
    assert point_state(make_solver([], status=Status.MAX_STEPS)(P3, 1.0, "semantic")) is PointState.NOT_CONVERGED


def test_line_error_is_the_propagated_integration_error():
    # e_t^sem − e_t^pos = 0.01 (α − 1.2): slope 0.01; errors 3e-5 and 4e-5 → δα = 5e-5 / 0.01 = 5e-3
    a = np.array([1.0, 1.1, 1.3, 1.4])
    fps = pd.concat([pd.DataFrame(dict(alpha=a, kind="semantic", e_t=0.02 * a, e_t_err=3e-5)),
                     pd.DataFrame(dict(alpha=a, kind="positional", e_t=0.01 * a + 0.012, e_t_err=4e-5))])
    e = line_error(fps, 1.2, "semantic", "positional")
    assert e.value == pytest.approx(5e-3) and e.slope == pytest.approx(0.01)
    # without per-point errors (split rule): None with the reason
    e = line_error(fps.assign(e_t_err=np.nan), 1.2, "semantic", "positional")
    assert e.value is None and "per-point error" in e.reason
    out = transition_errors(fps, 1.2, "crossing", "positional", None, None)
    assert out["alpha_c_err"] == pytest.approx(5e-3) and out["alpha_l_err"] is None and out["alpha_l_err_reason"]
