"""The diagram in lockstep (issue 34, item 3; :mod:`attnphase.phase.diagram_batch`): the batched split map
against one call per cell, and the lockstep diagram against the per-point path — the same cells, the same
states, e_t and ε_g to 1e-6 relative, α_c and α_l to 1e-4 (the issue's acceptance; the full 40 × 40 against
docs/data/phase_diagram_40x40 is ``bench/bench_diagram.py --lockstep 40``)."""

import numpy as np
import pandas as pd
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.phase import phase_diagram

from test_diagram_full import ALPHAS, OMEGAS, Fake, _same


def test_lockstep_on_a_stand_in_gives_the_per_point_grid():
    """The threads, the chains and the assembly of the results: one chain in lockstep is the per-point path
    in one process; two chains in lockstep are two worker processes (the same guides)."""
    plain, lp = phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), workers=1)
    ls, ll = phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), workers=1, lockstep=True)
    _same(ls, plain)
    assert ll["lockstep"].all() and not lp["lockstep"].any() and (ll["chains"] == 1).all()
    two, _ = phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), workers=2)
    ls2, ll2 = phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), workers=1, chains=2, lockstep=True)
    _same(ls2, two)
    assert (ll2["chains"] == 2).all() and (ll2["workers"] == 1).all()


@pytest.mark.parametrize("kw", [dict(workers=2, chains=1, lockstep=True), dict(workers=1, chains=2, lockstep=False),
                                dict(workers=1, chains=0, lockstep=True)])
def test_bad_chains_are_refused(kw):
    with pytest.raises(ParameterError, match="chains"):
        phase_diagram(ModelParams(), OMEGAS, ALPHAS, solver=Fake(), **kw)


def _cells():
    """Two cells as the diagram evaluates them: one pinned (half the lines), one unpinned (a growth factor)."""
    from attnphase.theory.switching import SplitRule, outer_nodes
    from attnphase.theory.symmetry import exchange_reflection_holds

    rule = SplitRule.of(4)
    out = []
    for om, q, m, th, V in [(0.3, 0.3, 0.4, 0.0, 0.5), (0.45, 0.3, 0.2, 0.1, 0.4)]:
        p = ModelParams(omega=om)
        outer = outer_nodes(rule.nodes, rule.panels, rule.panel_gl, rule.zmax, m == 0 or th == 0,
                            exchange_reflection_holds(p))
        sc = dict(sq=np.sqrt(q), sres=np.sqrt(p.sigma ** 2 - th * th / q), m=m, theta=th, om=om,
                  A11=p.A_array[0, 0], A22=p.A_array[1, 1], V=V, s2=p.sigma ** 2)
        out.append((outer, sc))
    return rule, out


def test_batched_map_equals_one_call_per_cell():
    """map_sums_batch on cells of different sizes, global search and warm continuation mixed in one batch,
    against map_sums per cell: the sums to 1e-9 relative (the Newton kernels' round-off; the worst |∇F|, a
    diagnostic at the 1e-8 level, is left out) and the prox states to 1e-7."""
    from attnphase.theory.split_xla import map_sums, map_sums_batch

    rule, cells = _cells()
    first = [map_sums(o, rule, sc, None, True) for o, sc in cells]
    reqs = [(o, sc, None, True) for o, sc in cells] + [(o, sc, r[2], False) for (o, sc), r in zip(cells, first)]
    ref = first + [map_sums(o, rule, sc, r[2], False) for (o, sc), r in zip(cells, first)]
    got = map_sums_batch(rule, reqs)
    for (sums, count, (h1, h2)), (s0, c0, (g1, g2)) in zip(got, ref):
        a, b = np.delete(np.array(sums), 5), np.delete(np.array(s0), 5)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * np.max(np.abs(b)))
        assert count == c0
        np.testing.assert_allclose(h1, g1, atol=1e-7)
        np.testing.assert_allclose(h2, g2, atol=1e-7)


OMEGAS_REAL = [0.3, 0.5]
ALPHAS_REAL = [0.6, 1.1, 1.6]


@pytest.mark.slow
def test_lockstep_keeps_every_state_of_the_per_point_path():
    """The real solver (split rule, nodes = 4): two ω chains in lockstep in one process against each ω solved
    alone on the per-point path (the same guides: none). Cells include a semantic saddle (``unstable``, its
    end located between grid points) and valid points of both branches. Slow: minutes, most of it the first
    compilation of the batch shapes (19.6 min wall at load ≈ 28)."""
    new, ln_new = phase_diagram(ModelParams(), OMEGAS_REAL, ALPHAS_REAL, workers=1, chains=2, lockstep=True)
    parts = [phase_diagram(ModelParams(), [w], ALPHAS_REAL, workers=1) for w in OMEGAS_REAL]
    old = pd.concat([g for g, _ in parts], ignore_index=True)
    ln_old = pd.concat([ln for _, ln in parts], ignore_index=True)
    assert new[["omega", "alpha"]].values.tolist() == old[["omega", "alpha"]].values.tolist()
    assert new["state_sem"].tolist() == old["state_sem"].tolist()
    assert new["state_pos"].tolist() == old["state_pos"].tolist()
    assert "unstable" in set(new["state_sem"]) and "ok" in set(new["state_pos"])
    for c in ("e_t_sem", "e_t_pos", "eps_g_sem", "eps_g_pos"):
        np.testing.assert_allclose(new[c].to_numpy(float), old[c].to_numpy(float), rtol=1e-6, err_msg=c)
    for c in ("alpha_c", "alpha_l"):
        np.testing.assert_allclose(ln_new[c].to_numpy(float), ln_old[c].to_numpy(float), atol=1e-4,
                                   equal_nan=True, err_msg=c)
    # an end is located to a quarter of xtol = 1e-3 (phase/unstable_end.py: the regula falsi stops there), so
    # sums differing by ~1e-12 may move it by up to 2.5e-4 (measured 1.2e-4 at ω = 0.3, 2026-12-06)
    for c in ("end_semantic", "end_positional"):
        np.testing.assert_allclose(ln_new[c].to_numpy(float), ln_old[c].to_numpy(float), atol=2.5e-4,
                                   equal_nan=True, err_msg=c)
    assert (ln_new["batched_requests"] > ln_new["batched_calls"]).all()   # evaluations were batched
