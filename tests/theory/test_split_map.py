"""The split-rule map as one compiled program (theory/split_xla.py) against the numpy reference path
(``channel.split_map("numpy")``: switching.line_nodes + prox), MODEL.md §6, §7.

Tolerance: the two paths run the same algorithm element by element but in a different floating-point order,
so they agree to the reference map's own round-off, not to 1e-10: Newton stops at |∇F| ≤ 1e-9 and the interval
flags compare minimisers at 1e-6, so round-off may toggle a flag or a Newton stop and move a hat by up to
~2e-6 relative — the spread measured between the reference map's two Newton kernels (2.3e-6 at ω = 0.3,
α = 2, positional). MAP_TOL is twice that; most points agree to 1e-8 (docs/notes/benchmarks-log.md, "One compiled map
evaluation")."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.errors import ParameterError
from attnphase.model import ModelParams
from attnphase.theory import split_xla
from attnphase.theory.channel import channel, split_map
from attnphase.theory.solver import solve_point
from attnphase.theory.switching import SplitRule

RULE = SplitRule.of(4)
HATS = ("q_hat", "m_hat", "V_hat", "theta_hat", "EM")
MAP_TOL = 5e-6
ALT_A = [[0.3, 0.7], [0.8, 0.2]]


def _rel(a, b) -> float:
    return max(abs(getattr(a, f) - getattr(b, f)) / (abs(getattr(b, f)) + 1e-12) for f in HATS)


def _three(params, alpha, x):
    """The map at x (global), then one iteration-sized step away: fast (warm only) and global (warm + multi-start)."""
    c0 = channel(params, alpha, *x, RULE)
    x1 = x * 1.01
    return c0, channel(params, alpha, *x1, RULE, warm=c0.h, global_search=False), channel(params, alpha, *x1, RULE,
                                                                                          warm=c0.h)


@pytest.mark.parametrize("params,alpha,x", [
    (ModelParams(omega=0.02), 1.0, (0.08, 0.2, 10.0, 0.0)),          # positional
    (ModelParams(omega=0.02), 1.0, (0.1, 0.0, 12.0, 0.12)),          # semantic
    (ModelParams(), 2.0, (0.05, 0.26, 11.0, 0.0)),
    (ModelParams(), 1.25, (0.114, 0.0, 12.3, 0.159)),                 # near α_c(0.3)
    (ModelParams(omega=0.5), 2.0, (0.05, 0.2, 11.0, 0.0)),
    (ModelParams(omega=0.5), 1.5, (0.1, 0.0, 12.0, 0.1)),
    (ModelParams(A=ALT_A), 1.5, (0.08, 0.0, 12.0, 0.12)),             # no exchange reflection: all ξ_v
    (ModelParams(A=ALT_A), 1.5, (0.05, 0.25, 11.0, 0.0)),
    (ModelParams(sigma=0.7), 1.5, (0.2, 0.3, 6.0, 0.0)),
    (ModelParams(lam=0.001), 1.5, (0.1, 0.0, 15.0, 0.12)),
    (ModelParams(), 1.5, (0.08, 0.1, 11.0, 0.08)),                    # unpinned (growth factor): all y_u
])
def test_compiled_map_equals_reference_map(params, alpha, x):
    x = np.array(x)
    new = _three(params, alpha, x)
    with split_map("numpy"):
        old = _three(params, alpha, x)
    for n, o in zip(new, old):
        assert _rel(n, o) < MAP_TOL
        assert n.max_grad < 1e-6 and o.max_grad < 1e-6          # Newton stops at 1e-9, capped at 30 steps
        assert n.h[0].shape == o.h[0].shape          # the warm state: prox at the detection points
    # the warm states agree too (the next fast evaluation starts from them)
    assert np.max(np.abs(new[0].h[0] - old[0].h[0])) < 1e-6


def test_solve_with_compiled_map_equals_reference_solve():
    p = ModelParams(omega=0.25)
    kw = dict(nodes=4, stability=False)
    new = solve_point(p, 1.6, "positional", **kw)
    with split_map("numpy"):
        old = solve_point(p, 1.6, "positional", **kw)
    assert new.converged and old.converged
    for f in ("q", "m", "V", "e_t", "eps_g"):
        assert abs(getattr(new, f) - getattr(old, f)) <= 3e-5 * abs(getattr(old, f)), f


def test_unknown_split_map_is_a_clear_error():
    with pytest.raises(ParameterError, match="split map"):
        with split_map("fortran"):
            pass


@pytest.mark.slow
def test_overflowing_switch_buffer_is_rerun_not_truncated():
    """A buffer too small for the flagged intervals: the evaluation is repeated with a larger one, so the
    result is the same as with a large buffer (one extra compilation per buffer size)."""
    p, x = ModelParams(), (0.05, 0.26, 11.0, 0.0)
    ref = channel(p, 2.0, *x, RULE)
    key = next(k for k in split_xla._K if k[0] == RULE and k[1] == ref.h[0].shape[0])
    saved = split_xla._K[key]
    split_xla._K[key] = 1
    try:
        small = channel(p, 2.0, *x, RULE)
        assert split_xla._K[key] > 1
    finally:
        split_xla._K[key] = saved
    assert _rel(small, ref) < 1e-12
