"""Fixed points of piecewise-smooth maps (a QMC map jumps where a sample's minimiser switches basin), the error
control's record of each size, and the Student-t judgement of a deviation from few scrambles
(docs/notes/2026-12-05-theory-general.md, "Near the positional fold (ω = 0.1)")."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.theory import fixed_point
from attnphase.theory.status import Status


def _res(X, Y):
    return np.max(np.abs(Y - X) / np.abs(X), axis=1)


def _jump_map(x_jump: float, jump: float, slope: float = -3.0):
    """A 1-d map with a downward jump of size 2·jump at x_jump that straddles the diagonal (no x with
    F(x) = x) and slope ``slope`` on both pieces (the continuous pieces' slope measured at ω = 0.1, α = 1.2)."""
    def F(X):
        side = np.where(X < x_jump, 1.0, -1.0)
        return x_jump + side * jump + slope * (X - x_jump), np.ones(len(X), bool), {}
    return F


def test_a_fixed_point_on_a_jump_is_found_and_marked():
    """Old code: the row hovers on the jump until max_steps. Now it converges there, marked ``at_jump``, the
    iterate within rtol of the jump and the residual the jump's; a larger jump than ``jump_rtol`` still fails."""
    x_jump, rtol = 0.13, 1e-5
    kw = dict(rtol=rtol, max_steps=200, damping=0.6, anderson=5)
    F = _jump_map(x_jump, 2e-3 * x_jump)
    old = fixed_point.iterate(F, np.full((1, 1), 0.15), _res, **kw)
    assert old.status[0] is Status.MAX_STEPS
    new = fixed_point.iterate(F, np.full((1, 1), 0.15), _res, jump_rtol=fixed_point.JUMP_RTOL, **kw)
    assert new.status[0] is Status.CONVERGED and new.at_jump[0]
    assert abs(new.x[0, 0] - x_jump) < 2 * rtol * x_jump
    assert rtol < new.residual[0] <= fixed_point.JUMP_RTOL
    big = fixed_point.iterate(_jump_map(x_jump, 0.05 * x_jump), np.full((1, 1), 0.15), _res,
                              jump_rtol=fixed_point.JUMP_RTOL, **kw)
    assert big.status[0] is Status.MAX_STEPS and not big.at_jump[0]


def test_a_continuous_map_is_never_accepted_at_a_jump():
    """A smooth map with the same slope converges to its zero, not flagged, with or without the jump rule."""
    F = lambda X: (0.13 - 3.0 * (X - 0.13), np.ones(len(X), bool), {})  # noqa: E731
    for jr in (0.0, fixed_point.JUMP_RTOL):
        run = fixed_point.iterate(F, np.full((2, 1), 0.15), _res, rtol=1e-8, max_steps=200, jump_rtol=jr)
        assert all(s is Status.CONVERGED for s in run.status) and not run.at_jump.any()
        np.testing.assert_allclose(run.x, 0.13, rtol=1e-7)


def test_error_control_records_budget_and_scrambles_of_every_size():
    """Each size the error control tries says which iteration budget it had and which scrambles failed or
    converged at a jump (so a ``growth_failed`` near the ω = 0.1 branch end says who wandered)."""
    from attnphase.model import ModelParams
    from attnphase.theory import engine
    from attnphase.theory.engine import QMCConfig

    cfg = QMCConfig(points=64, scrambles=2, coarse=0, target=2e-2)
    sol = engine.solve(ModelParams(omega=0.3), 2.0, "semantic", qmc_config=cfg, max_steps=150, stability=False)
    entries = sol.resolution["sizes"] + ([sol.resolution["growth_failed"]] if sol.resolution["growth_failed"] else [])
    assert len(entries) >= 2 and entries[-1]["points"] * entries[-1]["scrambles"] > 128
    for e in entries:
        assert e["max_steps"] == 150 and isinstance(e["failed_scrambles"], list)
        assert isinstance(e["jump_scrambles"], list)
        ok = e["status"] in ("converged", "accepted_at_jump")        # a result (Status.ok)
        assert ok == (not e["failed_scrambles"])
        if ok:                     # issue 33: a size with a scramble accepted at a jump says so in its status
            assert (e["status"] == "accepted_at_jump") == bool(e["jump_scrambles"])


def test_student_t_p_value_and_quantile_for_few_scrambles():
    """With S scrambles the studentised deviation is Student t with S − 1 dof: 3.1 s.e. from 4 scrambles is
    p ≈ 0.05 (not 0.002), the quantile inverts the p-value, and many scrambles approach the normal law."""
    from scipy.stats import norm
    from attnphase.errors import ParameterError
    from attnphase.theory.resolution import deviation_p_value, se_quantile
    p4 = deviation_p_value(3.1, 1.0, 4)
    assert 0.04 < p4 < 0.06 and p4 > 10 * 2 * norm.sf(3.1)
    assert deviation_p_value(-0.0129, 0.0042, 4) == pytest.approx(deviation_p_value(0.0129 / 0.0042, 1.0, 4))
    for S in (2, 4, 8):
        k = se_quantile(0.0027, S)
        assert deviation_p_value(k, 1.0, S) == pytest.approx(0.0027, rel=1e-9)
        assert k > 3.0
    assert se_quantile(0.0027, 10_000) == pytest.approx(3.0, abs=2e-3)
    assert se_quantile(0.0027, 4) > se_quantile(0.0027, 8) > 3.0
    with pytest.raises(ParameterError):
        se_quantile(0.05, 1)
