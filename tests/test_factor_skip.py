"""The growth factor left out by a slope bound (:mod:`attnphase.phase.factor_skip`, issue 34 item 3): on a
stand-in branch whose factor rises exactly as fast as the bound allows (``SAFETY`` × the measured rates) the
followed branch never leaves out a factor above 1 and has every state and the end of the branch that evaluates
the factor everywhere (the end within its resolution) — while it leaves most factors out far from the end. With the safety factor taken out
(``SAFETY = 1``) the same branch leaves out factors above 1 and misplaces its end (checked by hand: both
tests below fail then)."""

import math

import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.phase import PointState, follow_branch
from attnphase.phase import factor_skip
from attnphase.phase.factor_skip import FACTOR_EDGES, FACTOR_RATES, climb_distance
from _stand_in_point import ScalarStandInPoint

ALPHA_U = 0.8031
"""Where the stand-in's factor crosses 1 (off the grid and its halved steps)."""


def fastest_factor(alpha: float, up: bool) -> float:
    """The factor that rises towards ``ALPHA_U`` at exactly twice the measured rate at each value (the bound's
    limit, the factor measured in α from its crossing: α = ALPHA_U ∓ climb_distance(f) at safety 2), and beyond the
    crossing at twice the largest rate."""
    d = (alpha - ALPHA_U) if up else (ALPHA_U - alpha)     # > 0 past the crossing
    top = 2.0 * FACTOR_RATES["up" if up else "down"][-1]
    if d >= 0:
        return 1.0 + top * d
    lo, hi = -50.0, 1.0      # climb_distance decreases in f: bisect climb_distance(f) = −d
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if climb_distance(mid, up, safety=2.0) > -d else (lo, mid)
    return 0.5 * (lo + hi)


class Rising:
    """Semantic branch (followed down in α) or positional branch (followed up) whose factor is
    :func:`fastest_factor`; every solve converges. ``log``: (α, factor asked for)."""

    def __init__(self):
        self.log = []

    def __call__(self, params, alpha, branch, *, nodes=None, init=None, max_steps=300, stability=True, **kw):
        up = branch == "positional"
        self.log.append((round(alpha, 9), stability))
        f = fastest_factor(alpha, up) if stability else None
        m, th = (0.2, 0.0) if up else (0.0, 0.1 * math.sqrt(alpha))
        return ScalarStandInPoint(float(alpha), branch, params, 0.05 + 0.03 * alpha ** 2, m, 12.0, th, 0.1, 0.0,
                                  0.05, 0.01, 0.003, 0.002 * alpha, True, 8, 1e-7, "converged", f,
                                  None if f is None else f <= 1, nodes or 4)


def _follow(branch: str, margin):
    grid = np.round(np.linspace(0.1, 1.5, 57), 6)       # spacing 0.025, the crossing at 0.8 in between
    order = list(grid) if branch == "positional" else list(grid[::-1])
    solver = Rising()
    br = follow_branch(ModelParams(omega=0.3), order, branch, nodes=4, solver=solver, saddles=False,
                       stability_margin=margin, min_step=0.00625)
    return br, solver.log


@pytest.mark.parametrize("branch", ["semantic", "positional"])
def test_a_factor_rising_at_the_bound_is_never_left_out_above_one(branch):
    up = branch == "positional"
    fast, log = _follow(branch, 0.4)
    plain, _ = _follow(branch, None)
    skipped = [a for a, asked in log if not asked]
    assert len(skipped) >= 10                                   # far from the crossing most are left out ...
    assert max(fastest_factor(a, up) for a in skipped) < 1.0    # ... and none that is above 1
    assert [p.state for p in fast] == [p.state for p in plain]
    # the end within its resolution (min_step): at the bound's limit the last valid point's factor may be left
    # out, and the end is then its bracket's midpoint instead of the crossing
    assert fast.end.kind is PointState.UNSTABLE and fast.end.alpha == pytest.approx(plain.end.alpha, abs=0.00625)
    assert plain.end.alpha == pytest.approx(ALPHA_U, abs=1e-9)


def test_climb_distance_integrates_the_rates_bin_by_bin():
    # from 0.5 up: 0.1 at 2 × 1.00, 0.2 at 2 × 1.34, 0.2 at 2 × 1.88 (FACTOR_RATES["up"], the bins ≤ 0.6, 0.8, 1)
    assert FACTOR_EDGES[-3:] == (0.6, 0.8, 1.0)
    assert climb_distance(0.5, up=True) == pytest.approx(0.1 / 2.0 + 0.2 / 2.68 + 0.2 / 3.76)
    assert climb_distance(0.5, up=True, safety=1.0) == pytest.approx(2 * climb_distance(0.5, up=True))
    assert climb_distance(1.0, up=False) == 0.0 and climb_distance(1.7, up=True) == 0.0
    d = [climb_distance(f, up=False) for f in (-4.0, -1.5, -0.2, 0.3, 0.9)]
    assert all(a > b > 0 for a, b in zip(d, d[1:]))
    assert factor_skip.SAFETY >= 2.0


def test_no_factor_left_out_without_an_evaluated_one_or_next_to_a_high_previous_omega():
    from types import SimpleNamespace as P
    far = [P(alpha=2.0, stability=-3.0)]
    assert factor_skip.skip_growth_factor(1.9, far, None, 0.4)
    assert not factor_skip.skip_growth_factor(1.9, far, None, None)              # margin None: everywhere
    assert not factor_skip.skip_growth_factor(1.9, [P(alpha=2.0, stability=None)], None, 0.4)
    assert not factor_skip.skip_growth_factor(1.9, far, {1.9: P(stability=0.7)}, 0.4)
    assert factor_skip.skip_growth_factor(1.9, far, {1.9: P(stability=0.5)}, 0.4)


@pytest.mark.slow
def test_real_theory_a_coarse_grid_keeps_the_states_of_the_factor_everywhere():
    """Real solver, ω = 0.3 on α = 0.6, 1.1, 1.6 (spacing 0.5): the semantic factor rises convexly from α = 1.1
    to its crossing near 0.83. The rule of the morning extrapolated the line through the factors at 1.6 and 1.1
    to 0.725, left that factor out, and the cell α = 0.6 read `collapsed` with the end at 0.7145 — against
    `unstable` and 0.8276 with the factor everywhere (measured 2026-12-06). The slope bound evaluates it."""
    from attnphase.phase import phase_diagram
    fast, lf = phase_diagram(ModelParams(), [0.3], [0.6, 1.1, 1.6], workers=1)
    plain, lp = phase_diagram(ModelParams(), [0.3], [0.6, 1.1, 1.6], workers=1, stability_margin=None)
    assert fast["state_sem"].tolist() == plain["state_sem"].tolist() == ["unstable", "ok", "ok"]
    assert fast["state_pos"].tolist() == plain["state_pos"].tolist()
    assert float(lf["end_semantic"][0]) == pytest.approx(float(lp["end_semantic"][0]), abs=2.5e-4)
