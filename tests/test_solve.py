"""theory.solve / theory.solution (one solve, one Solution type for every integrator) and the one routing."""

import math

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory.solution import Solution, admissible, scalar_state, solution_table, state_of
from attnphase.theory.solve import choose, point_solver, solve
from attnphase.theory.status import Status

L3 = dict(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])


def test_choose_is_the_one_routing():
    p2, p3 = ModelParams(), ModelParams(omega=0.3, **L3)
    assert choose(p2) == "split" and choose(p3) == "qmc" and choose(p2, rule="product") == "product"
    assert choose(ModelParams(P=[[2.0], [-2.0]])) == "qmc"          # another P: another model
    with pytest.raises(ParameterError, match="nodes"):
        choose(p3, nodes=8)
    with pytest.raises(ParameterError, match="qmc_config"):
        choose(p2, qmc_config=object())
    with pytest.raises(ParameterError, match="integrator"):
        choose(p3, "split")


def test_split_solution_keeps_the_split_rule_numbers():
    from attnphase.theory import solve_point
    p = ModelParams(omega=0.3)
    ref = solve_point(p, 1.5, "semantic", nodes=4)
    (s,) = solve(p, [1.5], "semantic", nodes=4)
    assert isinstance(s, Solution) and s.status is Status.CONVERGED and s.integrator == "split"
    assert (s.q, s.m, s.V, s.theta, s.e_t, s.eps_g) == (ref.q, ref.m, ref.V, ref.theta, ref.e_t, ref.eps_g)
    assert s.stability == ref.stability and s.nodes == 4
    assert [np.shape(b) for b in s.x] == [(1, 1)] * 4 and float(s.x.theta[0, 0]) == ref.theta
    assert math.isnan(s.error("e_t"))          # the split rule gives no per-point error
    # a Solution is a valid start (its state), the same as the split rule's own solution
    (w,) = solve(p, [1.6], "semantic", nodes=4, start=s)
    assert w.e_t == solve_point(p, 1.6, "semantic", nodes=4, init=ref).e_t


def test_qmc_solution_has_errors_and_a_numeric_stability():
    from attnphase.theory.engine import QMCConfig
    p = ModelParams(omega=0.3)
    cfg = QMCConfig(points=256, scrambles=2, coarse=0)
    (s,) = solve(p, [1.5], "semantic", integrator="qmc", qmc_config=cfg)
    ref = solve(p, [1.5], "semantic", nodes=8)[0]
    assert s.integrator == "qmc" and s.converged
    assert s.error("e_t") > 0 and isinstance(s.stability, float) and s.stability_err is not None
    # the two integrators agree within the QMC error (4 s.e.) plus the split rule's ~1e-5
    assert abs(s.e_t - ref.e_t) < 4 * s.error("e_t") + 1e-4
    assert abs(s.stability - ref.stability) < 0.1
    d = s.to_dict()
    assert d["status"] == "converged" and "e_t_err" in d and d["provenance"]["qmc_points"] == 256
    # the same point through the one-point form phase/ calls
    t = point_solver(p, "qmc", qmc_config=cfg)(p, 1.5, "semantic", init=s)
    assert t.converged and abs(t.e_t - s.e_t) < 1e-6


def test_admissible_start_on_the_state():
    sig = 0.5
    ok = scalar_state(0.1, 0.0, 20.0, 0.1)
    assert admissible(ok, "semantic", sig) is not None
    assert admissible(scalar_state(0.1, 0.0, 20.0, 0.2), "semantic", sig) is None      # θ² > q σ²
    assert admissible(scalar_state(0.1, 0.0, 20.0, -0.1), "semantic", sig) is None     # sign flipped
    assert admissible(scalar_state(-0.1, 0.2, 20.0, 0.0), "positional", sig) is None   # q < 0
    x = admissible(scalar_state(0.1, 0.2, 20.0, 0.05), "positional", sig)
    assert x is not None and float(x.theta[0, 0]) == 0.0                                 # θ pinned to 0
    # r = 2: q must be positive definite, not only its trace
    q = np.array([[0.2, 0.0], [0.0, -0.01]])
    bad = ok._replace(q=q, M=np.zeros((2, 1)), theta=np.array([[0.1], [0.0]]), V=np.eye(2))
    assert admissible(bad, "semantic", sig) is None


def test_state_of_and_table_accept_stand_ins():
    from types import SimpleNamespace
    ns = SimpleNamespace(q=0.1, m=0.2, V=3.0, theta=-0.05)
    x = state_of(ns)
    assert float(x.M[0, 0]) == 0.2 and float(x.theta[0, 0]) == -0.05
    p = ModelParams()
    (s,) = solve(p, [1.0], "positional", nodes=4)
    df = solution_table([s])
    assert list(df["alpha"]) == [1.0] and df["status"].iloc[0] == "converged"
