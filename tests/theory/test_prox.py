"""Properties of the L = 2, r = 1 Moreau problem (MODEL.md §6) solved by :mod:`attnphase.theory.prox`, checked
against values the module does not compute itself (issue 33: prox was under-sampled by the tests).

ĥ(ω) = argmin_h F(h) with F(h) = |h − ω|²/(2V) + ℓ(h, h*), M(ω) = min F (the Moreau envelope):

* a brute-force minimisation of F on a dense grid (its minimum is an upper bound of M; ĥ lies near its argmin);
* the symmetries of ℓ: a = h1(h1 − h2), b = h2(h2 − h1) are even in h, so F(−h; −ω) = F(h; ω) and
  ĥ(−ω) = −ĥ(ω); exchanging the two tokens (h1 ↔ h2, ω1 ↔ ω2, t1 ↔ t2) exchanges ĥ1 ↔ ĥ2;
* the envelope theorem ∇_ω M = (ω − ĥ)/V, against central differences of M;
* the implicit-function Jacobian ∂ĥ/∂ω (:func:`prox.dh_domega`) against central differences of ĥ;
* stationarity (ĥ − ω)/V + ∇ℓ(ĥ) = 0 with ∇ℓ by central differences of ℓ (not the module's own gradient);
* the small-V limit ĥ = ω − V ∇ℓ(ω) + O(V²).
"""
from __future__ import annotations

import numpy as np
import pytest

from attnphase.theory import prox as P

S2 = 0.25                       # σ² at the default σ = 0.5


def _inputs(seed: int, n: int, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    w1, w2 = rng.normal(0.0, scale, n), rng.normal(0.0, scale, n)
    t1, t2 = rng.uniform(0.2, 0.95, n), rng.uniform(0.2, 0.95, n)
    return w1, w2, t1, t2


def _fd_loss_grad(h1, h2, t1, t2, eps=1e-6):
    g1 = (P.loss(h1 + eps, h2, t1, t2, S2) - P.loss(h1 - eps, h2, t1, t2, S2)) / (2 * eps)
    g2 = (P.loss(h1, h2 + eps, t1, t2, S2) - P.loss(h1, h2 - eps, t1, t2, S2)) / (2 * eps)
    return g1, g2


def _hard_states():
    """Five states (V = 40, |ω| ~ 2) where Newton from ω, −ω and the exchanged ω alone ends in a local minimum:
    found by comparing ``prox`` with and without its grid start over 4000 draws of ``_inputs(7, 4000, 2.0)``
    (40 such states; these are the first five)."""
    w1, w2, t1, t2 = _inputs(7, 4000, scale=2.0)
    k = [145, 155, 255, 277, 445]
    return w1[k], w2[k], t1[k], t2[k]


@pytest.mark.parametrize("V, states", [(0.5, "random"), (12.0, "random"), (60.0, "random"), (40.0, "hard")])
def test_prox_against_a_brute_force_grid(V, states):
    """M ≤ min of F on a 1201² grid over a box holding every minimiser (|ĥ − ω| ≤ 2σ√V since ℓ ≤ 2σ², so
    |ĥ| ≤ |ω| + 2σ√V), and the grid's argmin lies within two grid steps of ĥ where the grid's best value is
    clearly below any other basin's (a unique global minimum). The "hard" states need the grid start."""
    w1, w2, t1, t2 = _inputs(1, 12) if states == "random" else _hard_states()
    h1, h2, M, gn = P.prox(w1, w2, t1, t2, V, S2)
    if states == "hard":                 # the simple starts alone miss the global minimum at each of them
        assert np.all(P.prox(w1, w2, t1, t2, V, S2, grid=0)[2] > M + 1e-6)
    assert np.all(gn < 1e-8)
    for i in range(w1.size):
        R = 2.0 * np.sqrt(S2 * V) + 1e-9
        g1 = np.linspace(w1[i] - R, w1[i] + R, 1201)
        g2 = np.linspace(w2[i] - R, w2[i] + R, 1201)
        G1, G2 = np.meshgrid(g1, g2, indexing="ij")
        F = P.objective(G1, G2, w1[i], w2[i], t1[i], t2[i], V, S2)
        j = np.unravel_index(np.argmin(F), F.shape)
        assert M[i] <= F[j] + 1e-13, (V, i, M[i], F[j])
        assert F[j] - M[i] < 1e-5 * (1 + 1 / V)               # the grid resolves the minimum it brackets
        step = g1[1] - g1[0]
        other = F.copy()
        near = (np.abs(G1 - G1[j]) < 20 * step) & (np.abs(G2 - G2[j]) < 20 * step)
        other[near] = np.inf
        if other.min() - F[j] > 1e-6:                          # unique global basin: ĥ is the grid's argmin
            assert np.hypot(h1[i] - G1[j], h2[i] - G2[j]) < 2 * step, (V, i)


def test_prox_sign_and_exchange_symmetries():
    """ĥ(−ω) = −ĥ(ω) and the exchange of the two tokens, to round-off, with equal envelopes."""
    w1, w2, t1, t2 = _inputs(2, 200)
    V = 11.0
    h1, h2, M, _ = P.prox(w1, w2, t1, t2, V, S2)
    n1, n2, Mn, _ = P.prox(-w1, -w2, t1, t2, V, S2)
    s1, s2, Ms, _ = P.prox(w2, w1, t2, t1, V, S2)
    np.testing.assert_allclose(Mn, M, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(Ms, M, rtol=1e-12, atol=1e-15)
    # the minimisers (a tie between two global minima would break this; none of these random states has one)
    np.testing.assert_allclose(np.c_[n1, n2], -np.c_[h1, h2], atol=1e-7)
    np.testing.assert_allclose(np.c_[s1, s2], np.c_[h2, h1], atol=1e-7)


def test_envelope_gradient_and_jacobian_against_central_differences():
    """∇_ω M = (ω − ĥ)/V (envelope theorem) and ∂ĥ/∂ω = (I + V∇²ℓ)⁻¹ (dh_domega) against central differences
    of the prox's own outputs, at states away from a basin switch (the minimiser is smooth there). Step
    e = 1e-3 for ĥ: Newton stops when no step lowers F in floating point, so ĥ itself is accurate to only
    ~√ε_mach·scale ≈ 1e-8, i.e. ~1e-5 over 2e (measured: 1.9e-4 at e = 1e-5, 3.5e-5 at e = 1e-4); M is
    accurate to round-off, so its differences use e = 1e-5."""
    w1, w2, t1, t2 = _inputs(3, 40, scale=0.4)
    V, e, eh = 11.0, 1e-5, 1e-3
    h1, h2, M, _ = P.prox(w1, w2, t1, t2, V, S2)
    p1 = P.prox(w1 + e, w2, t1, t2, V, S2)
    m1 = P.prox(w1 - e, w2, t1, t2, V, S2)
    p2 = P.prox(w1, w2 + e, t1, t2, V, S2)
    m2 = P.prox(w1, w2 - e, t1, t2, V, S2)
    # smooth where no basin switch lies within ±e (the minimiser moves by O(e), not O(1))
    smooth = np.hypot(p1[0] - m1[0], p1[1] - m1[1]) + np.hypot(p2[0] - m2[0], p2[1] - m2[1]) < 1e-3
    assert smooth.mean() > 0.9
    np.testing.assert_allclose(((p1[2] - m1[2]) / (2 * e))[smooth], ((w1 - h1) / V)[smooth], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(((p2[2] - m2[2]) / (2 * e))[smooth], ((w2 - h2) / V)[smooth], rtol=1e-5, atol=1e-9)
    J11, J12, J21, J22 = P.dh_domega(h1, h2, t1, t2, V, S2)
    p1, m1 = P.prox(w1 + eh, w2, t1, t2, V, S2), P.prox(w1 - eh, w2, t1, t2, V, S2)
    p2, m2 = P.prox(w1, w2 + eh, t1, t2, V, S2), P.prox(w1, w2 - eh, t1, t2, V, S2)
    smooth &= np.hypot(p1[0] - m1[0], p1[1] - m1[1]) + np.hypot(p2[0] - m2[0], p2[1] - m2[1]) < 0.1
    fd = {"J11": (p1[0] - m1[0]) / (2 * eh), "J21": (p1[1] - m1[1]) / (2 * eh),
          "J12": (p2[0] - m2[0]) / (2 * eh), "J22": (p2[1] - m2[1]) / (2 * eh)}
    for name, ours in (("J11", J11), ("J12", J12), ("J21", J21), ("J22", J22)):
        np.testing.assert_allclose(ours[smooth], fd[name][smooth], rtol=1e-3, atol=2e-5, err_msg=name)


def test_stationarity_with_an_independent_gradient():
    """(ĥ − ω)/V + ∇ℓ(ĥ) = 0 with ∇ℓ from central differences of ℓ (not prox_loss.loss_derivs)."""
    w1, w2, t1, t2 = _inputs(4, 100)
    V = 20.0
    h1, h2, _, _ = P.prox(w1, w2, t1, t2, V, S2)
    g1, g2 = _fd_loss_grad(h1, h2, t1, t2)
    assert np.max(np.abs((h1 - w1) / V + g1)) < 1e-7
    assert np.max(np.abs((h2 - w2) / V + g2)) < 1e-7


def test_small_V_limit():
    """V → 0: ĥ = ω − V ∇ℓ(ω) + O(V²) (one gradient step; ∇ℓ by central differences)."""
    w1, w2, t1, t2 = _inputs(5, 50)
    g1, g2 = _fd_loss_grad(w1, w2, t1, t2)
    errs = []
    for V in (1e-2, 5e-3):
        h1, h2, M, _ = P.prox(w1, w2, t1, t2, V, S2)
        errs.append(np.max(np.hypot(h1 - (w1 - V * g1), h2 - (w2 - V * g2))))
        # the envelope: M = ℓ(ω) − (V/2)|∇ℓ(ω)|² + O(V²)
        lw = P.loss(w1, w2, t1, t2, S2)
        assert np.max(np.abs(M - (lw - 0.5 * V * (g1 ** 2 + g2 ** 2)))) < 50 * V ** 2
    assert errs[1] < 0.35 * errs[0] and errs[0] < 0.05 * 1e-2     # O(V²), far below the O(V) step itself


def test_warm_local_search_stays_in_its_basin_and_full_search_certifies():
    """``global_search=False`` runs Newton from the warm start only: a stationary point of F (possibly a local
    minimum); the full multi-start search from the same warm start is never higher and is global."""
    w1, w2, t1, t2 = _inputs(6, 200, scale=0.6)
    V = 40.0
    far = (-w1 - 0.3, -w2 + 0.3)                                 # a deliberately poor warm start
    l1, l2, Ml, gl = P.prox(w1, w2, t1, t2, V, S2, warm=far, global_search=False)
    g1, g2, Mg, gg = P.prox(w1, w2, t1, t2, V, S2, warm=far)
    assert np.all(gl < 1e-8) and np.all(gg < 1e-8)
    assert np.all(Mg <= Ml + 1e-14)
    np.testing.assert_allclose(Ml, P.objective(l1, l2, w1, w2, t1, t2, V, S2), rtol=1e-14)
    c1, c2, Mc, _ = P.prox(w1, w2, t1, t2, V, S2)                # without the warm start: the same minimum
    np.testing.assert_allclose(Mc, Mg, rtol=1e-12, atol=1e-15)
