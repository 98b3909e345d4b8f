"""The integrator protocol (issue 29): the split rule and QMC evaluate the same map (MODEL.md §6 = §8 at L = 2,
r = r* = 1), state in, state out; a solved fixed point is a fixed point of its integrator's map."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory.integrator import Integrator
from attnphase.theory.qmc_config import QMCConfig
from attnphase.theory.qmc_integrator import QMCIntegrator
from attnphase.theory.solution import scalar_state
from attnphase.theory.solver import solve_point
from attnphase.theory.split_integrator import SplitIntegrator

PAR = ModelParams(omega=0.3)
STATES = [scalar_state(q=0.115, m=0.0, V=12.7, theta=0.158),        # near the semantic point, α = 2
          scalar_state(q=0.051, m=0.258, V=11.4, theta=0.0),        # near the positional point
          scalar_state(q=0.10, m=0.12, V=15.0, theta=0.09)]         # off both subspaces (the free map)


def test_both_integrators_follow_the_protocol_and_refine():
    split, qmc = SplitIntegrator(PAR, nodes=4), QMCIntegrator(PAR, QMCConfig(points=512, scrambles=2, coarse=0))
    assert isinstance(split, Integrator) and isinstance(qmc, Integrator)
    assert split.finer().resolution["nodes"] == 8
    assert qmc.finer().resolution["points"] == 1024 and qmc.finer().resolution["scrambles"] == 2


def test_split_rule_and_qmc_evaluate_the_same_map():
    """The free map at three states, split rule (order 8, ~1e-5) against QMC (8192 × 4): every block within
    5 standard errors of QMC plus 2e-3 relative (the QMC image's own bias at this size)."""
    split = SplitIntegrator(PAR, nodes=8).evaluate(STATES, 2.0)
    qmc = QMCIntegrator(PAR, QMCConfig(points=8192, scrambles=4, coarse=0)).evaluate(STATES, 2.0)
    assert split.ok.all() and qmc.ok.all()
    for a, b, e in zip(split.x, qmc.x, qmc.errors):
        for name in ("q", "M", "theta", "V"):
            va, vb, ve = (float(np.asarray(getattr(t, name)).reshape(-1)[0]) for t in (a, b, e))
            assert abs(va - vb) <= 5 * ve + 2e-3 * abs(va) + 1e-6, (name, va, vb, ve)


@pytest.mark.parametrize("branch", ["semantic", "positional"])
def test_a_solved_point_is_a_fixed_point_of_its_integrators_map(branch):
    s = solve_point(PAR, 2.0, branch, nodes=4, stability=False)
    assert s.converged
    (img,) = SplitIntegrator(PAR, nodes=4).evaluate(s.x, 2.0, branch).x
    for name in ("q", "V"):
        assert float(getattr(img, name)[0, 0]) == pytest.approx(float(getattr(s.x, name)[0, 0]), rel=1e-4)
