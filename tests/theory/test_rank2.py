"""Rank-2 students in the general engine (MODEL.md §8; issue 11): V̂ for a singular or ill-conditioned q
(Stein on the range of q, implicit-function derivative on its null space), the rank-1 point embedded in
r = 2, rotation invariance with a singular q, and (slow) the pinned and mixed rank-2 fixed points."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.model import ModelParams
from attnphase.theory import channel_general as CG
from attnphase.theory import prox_general as PG
from attnphase.theory import qmc
from attnphase.theory.state import OrderParams

KNOBS = CG.Knobs(2.0, 0.3, 0.5, 0.01)
_CHANNEL = jax.jit(CG.channel)


def _points(L, r, n, seed=0):
    Z = qmc.scrambles(L * (r + 1), n, (seed,))[0]
    return jnp.asarray(Z[:, :L * r].reshape(n, L, r)), jnp.asarray(Z[:, L * r:].reshape(n, L, 1))


def _hats(x, xi, y, p=ModelParams(r=2), knobs=KNOBS):
    with jax.enable_x64(True):
        x = OrderParams(*(jnp.asarray(b, dtype=jnp.float64) for b in x))
        return _CHANNEL(x, knobs, xi, y, jnp.asarray(p.A_array), jnp.asarray(p.P_array),
                                   jnp.asarray(PG.start_offsets(p.L, x.q.shape[0])))


def _rank2(q, th=(0.14, 0.0), V=((12.0, 0.0), (0.0, 12.0)), M=(0.0, 0.0)):
    return OrderParams(np.asarray(q, float), np.asarray(M, float).reshape(2, 1),
                       np.asarray(th, float).reshape(2, 1), np.asarray(V, float))


def test_stein_and_derivative_agree_where_both_apply():
    """Small V: the Moreau problem is convex, ĥ is smooth in ω (no jump terms), so the Stein form and
    −α E[Σ ∂g/∂ω] agree column by column, for a well- and an ill-conditioned q (both on the range)."""
    for q22 in (0.05, 2e-3):
        st, de = 0.0, 0.0
        for seed in (0, 1):         # two scrambles: the Stein form is the noisier estimator
            out = _hats(_rank2([[0.09, 0.0], [0.0, q22]], V=[[3.0, 0.3], [0.3, 2.0]]), *_points(2, 2, 2048, seed))
            assert int(out.null_dim) == 0
            st, de = st + 0.5 * np.asarray(out.hats.V_hat), de + 0.5 * np.asarray(out.V_hat_deriv)
        np.testing.assert_allclose(st, de, atol=0.04 * np.abs(de).max())


def test_singular_q_embeds_the_rank1_channel():
    """q = diag(q₁, 0), θ, M on direction 1: direction 2 carries nothing (ω₂ = 0 and, ℓ being even in h₂,
    ĥ₂ = 0 while that stationary point is a minimum), so the hats' direction-1 block is the rank-1 channel
    on the same points, q̂₂₂ = θ̂₂ = V̂₁₂ = 0, and V̂₂₂ is the derivative form
    α E[tr((I + V₂₂ H₂)⁻¹ H₂)] with H₂ the L×L Hessian of ℓ in h₂ at ĥ (computed here separately)."""
    xi, y = _points(2, 2, 256)
    x2 = _rank2([[0.1, 0.0], [0.0, 0.0]], V=[[12.0, 0.0], [0.0, 6.0]])
    out2 = _hats(x2, xi, y)
    assert int(out2.null_dim) == 1
    x1 = OrderParams(np.array([[0.1]]), np.zeros((1, 1)), np.array([[0.14]]), np.array([[12.0]]))
    out1 = _hats(x1, xi[..., :1], y, ModelParams())
    h1, h2 = out1.hats, out2.hats
    np.testing.assert_allclose(float(h2.q_hat[0, 0]), float(h1.q_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(h2.theta_hat[0, 0]), float(h1.theta_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(h2.V_hat[0, 0]), float(h1.V_hat[0, 0]), rtol=1e-8)
    np.testing.assert_allclose(float(out2.EM), float(out1.EM), rtol=1e-10)
    assert abs(float(h2.q_hat[1, 1])) < 1e-18 and abs(float(h2.theta_hat[1, 0])) < 1e-8 * float(h1.theta_hat[0, 0])
    assert abs(float(h2.V_hat[0, 1])) < 1e-8 * float(h1.V_hat[0, 0])
    # V̂₂₂ from the token Hessian in direction 2 at ĥ = (ĥ₁, 0)
    with jax.enable_x64(True):
        w, hs, _ = CG.fields(OrderParams(*(jnp.asarray(b) for b in x2)), 0.5, xi, y, jnp.asarray([[1.0], [-1.0]]))
        A = jnp.asarray(ModelParams().A_array)

        def one(wi, hsi):
            T = PG.teacher(hsi, KNOBS.omega, A)
            h, _, _ = PG.prox(wi[:, :1], hsi, T, jnp.array([[12.0]]), 0.25, jnp.asarray(PG.start_offsets(2, 1)))
            H2 = jax.hessian(lambda z: PG.loss(jnp.stack([h[:, 0], z], axis=1), T, 0.25))(jnp.zeros(2))
            return jnp.trace(jnp.linalg.solve(jnp.eye(2) + 6.0 * H2, H2))
        ref = KNOBS.alpha * float(jnp.mean(jax.jit(jax.vmap(one))(w, hs)))
    assert abs(ref) > 1e-4
    np.testing.assert_allclose(float(h2.V_hat[1, 1]), ref, rtol=1e-8)


def test_vhat_continuous_as_q_becomes_singular():
    """V̂ is continuous through the switch from Stein to the derivative form: q₂₂ → 0 (convex prox)."""
    xi, y = _points(2, 2, 2048)
    V = [[12.0, 0.0], [0.0, 6.0]]
    outs = [_hats(_rank2([[0.1, 0.0], [0.0, e]], V=V), xi, y) for e in (1.5e-3, 0.0)]
    assert [int(o.null_dim) for o in outs] == [0, 1]
    vals = [np.asarray(o.hats.V_hat) for o in outs]
    np.testing.assert_allclose(vals[0], vals[1], atol=0.1 * np.abs(vals[1]).max())   # Stein noise ~7 %


def test_map_commutes_with_rotations_singular_q():
    """Q → QO with a rank-1 q whose null direction is rotated too: F(O·x) = O·F(x) (MODEL.md §8)."""
    xi, y = _points(2, 2, 256)
    O = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    x = _rank2([[0.1, 0.0], [0.0, 0.0]], th=(0.14, 0.0), M=(0.05, 0.0), V=[[12.0, 0.4], [0.4, 7.0]])
    xr = OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)
    a = _hats(x, xi, y)
    b = _hats(xr, jnp.asarray(np.asarray(xi) @ O.T), y)
    assert int(a.null_dim) == int(b.null_dim) == 1
    for name in ("q_hat", "V_hat"):
        A_, B_ = np.asarray(getattr(a.hats, name)), np.asarray(getattr(b.hats, name))
        np.testing.assert_allclose(B_, O @ A_ @ O.T, atol=1e-9)
    for name in ("M_hat", "theta_hat"):
        np.testing.assert_allclose(np.asarray(getattr(b.hats, name)), O @ np.asarray(getattr(a.hats, name)),
                                   atol=1e-9)


@pytest.mark.parametrize("branch", ["semantic", "positional", "mixed"])
def test_canonical_gauge_fixes_the_orbit_with_a_vanishing_signal_block(branch):
    """canonical_gauge(O·x) = canonical_gauge(x) for random rotations O, also when θ = 0 (positional) or M = 0
    (semantic): a zero leading column of [θ, M] must not leave the gauge free."""
    from attnphase.theory.state import canonical_gauge
    rng = np.random.default_rng(3)
    th = (0.0, 0.0) if branch == "positional" else (0.12, 0.03)
    M = (0.0, 0.0) if branch == "semantic" else (0.05, 0.21)
    x = _rank2([[0.08, 0.01], [0.01, 0.03]], th=th, M=M, V=[[15.0, 0.2], [0.2, 14.0]])
    with jax.enable_x64(True):
        ref = canonical_gauge(OrderParams(*(jnp.asarray(b) for b in x)))
        for _ in range(4):
            O = np.linalg.qr(rng.normal(size=(2, 2)))[0]
            xr = OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)
            got = canonical_gauge(OrderParams(*(jnp.asarray(b) for b in xr)))
            for a, b in zip(got, ref):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-12)


def test_reflecting_a_signal_free_direction_leaves_the_even_states_invariant():
    """The reflection ansatz (engine.even_hats): at a state even in direction 2 (q, V diagonal, θ and M on
    direction 1) the UNPINNED channel on points paired with ξ₂ → −ξ₂ returns q̂₀₁ = V̂₀₁ = θ̂₂ = 0 to
    round-off (the reflection Q e₂ → −Q e₂ is a gauge symmetry, MODEL.md §8), on unpaired points only up to
    QMC noise — the noise the ansatz removes; even_hats keeps the even part unchanged."""
    with jax.enable_x64(True):        # the whole check in float64 (its tolerances are float64 round-off)
        from attnphase.theory.engine import even_hats, signal_rank
        xi, y = _points(2, 2, 256)
        x = _rank2(((0.034, 0.0), (0.0, 0.083)), th=(0.127, 0.0), V=((18.6, 0.0), (0.0, 37.2)))   # semantic, α = 2
        flip = xi.at[..., 1].multiply(-1.0)
        paired = _hats(x, jnp.concatenate([xi, flip]), jnp.concatenate([y, y]),
                       p=ModelParams(r=2, omega=0.3)).hats
        def odd(h):                         # odd entries relative to their block's scale
            return max(abs(float(h.q_hat[0, 1])) / float(jnp.abs(h.q_hat).max()),
                       abs(float(h.V_hat[0, 1])) / float(jnp.abs(h.V_hat).max()),
                       abs(float(h.theta_hat[1, 0])) / float(jnp.abs(h.theta_hat).max()))
        assert odd(paired) < 1e-10
        plain = _hats(x, xi, y, p=ModelParams(r=2, omega=0.3)).hats
        assert odd(plain) > 1e-5
        proj = even_hats(plain, signal_rank("semantic", 2, 1, 1))
        assert odd(proj) == 0.0
        for name in ("q_hat", "V_hat"):
            np.testing.assert_array_equal(np.diag(np.asarray(getattr(proj, name))),
                                          np.diag(np.asarray(getattr(plain, name))))
        assert float(proj.theta_hat[0, 0]) == float(plain.theta_hat[0, 0])
        assert signal_rank("positional", 2, 1, 1) == 1 and signal_rank("uninformative", 2, 1, 1) == 0
        assert signal_rank("free", 2, 1, 1) is None


# ---------------------------------------------------------------------------------------- fixed points (slow)
@pytest.mark.slow
def test_rank2_fixed_points_semantic_positional_mixed_alpha2():
    """r = 2, r* = 1, ω = 0.3, α = 2 (MODEL.md §8; issue 11): the pinned semantic branch converges (its second
    direction fits noise: q has rank 2), and the unpinned ``free`` branch from the mixed start converges to a
    point with meaning on one direction and position on the other, of lower e_t than the pinned branches and
    than the rank-1 semantic point (a rank-2 student can do at least as well). Full comparison with finite-d
    minimisers: bench/bench_theory_vs_finite_d.py (docs/notes/2026-12-05-theory-general.md)."""
    from attnphase.theory.engine import QMCConfig, solve
    from attnphase.theory.solver import solve_point
    p = ModelParams(r=2, omega=0.3)
    cfg = QMCConfig(points=256, scrambles=2)
    # the semantic r = 2 map is rough (ĥ₂ jumps between ± minima): plain damping converges, Anderson and
    # 512 × 4 points stall at a residual ~1e-2 (docs/notes/2026-12-05-theory-general.md)
    sem = solve(p, 2.0, "semantic", qmc_config=cfg, damping=0.5, anderson=0)
    mix = solve(p, 2.0, "free", qmc_config=cfg, damping=0.3)
    assert sem.converged and mix.converged, (sem.status, mix.status)
    eig = np.asarray(sem.values["q_eig"])
    assert eig[0] > 0.1 * eig[1]                                   # second direction used (noise)
    assert sem.values["m"] == 0.0 and sem.values["theta"] > 0.1
    assert mix.values["m"] > 0.15 and mix.values["theta"] > 0.08   # both signals on
    r1 = solve_point(ModelParams(omega=0.3), 2.0, "semantic", nodes=6, stability=False)
    e = lambda s: (s.values["e_t"], 3 * s.errors["e_t"])  # noqa: E731
    assert e(mix)[0] + e(mix)[1] < e(sem)[0] - e(sem)[1]
    assert e(sem)[0] + e(sem)[1] < r1.e_t


def test_canonical_gauge_with_ref_keeps_the_free_sign_of_the_input():
    """Semantic state (M = 0, r = 2): the second direction's sign is not fixed by the signal; with ``ref`` it
    follows the reference (continuity of the map at an even fixed point), without it the q₀₁ >= 0 rule."""
    from attnphase.theory.state import canonical_gauge
    x = _rank2([[0.08, -1e-4], [-1e-4, 0.03]], th=(0.12, 0.0), V=[[15.0, -0.2], [-0.2, 37.0]])
    flip = np.diag([1.0, -1.0])
    xf = OrderParams(flip @ x.q @ flip, flip @ x.M, flip @ x.theta, flip @ x.V @ flip)
    with jax.enable_x64(True):
        jx = OrderParams(*(jnp.asarray(b) for b in x))
        jf = OrderParams(*(jnp.asarray(b) for b in xf))
        assert float(canonical_gauge(jx).q[0, 1]) > 0
        np.testing.assert_allclose(np.asarray(canonical_gauge(jf, ref=jx).q), x.q, atol=1e-14)
        np.testing.assert_allclose(np.asarray(canonical_gauge(jx, ref=jf).q), xf.q, atol=1e-14)


def test_canonical_gauge_with_ref_keeps_a_sign_flip_of_the_signal_visible():
    """A map output that is the input with its signal direction reflected (M → −M: F(x) = Ox, a 2-cycle, not a
    fixed point) stays reflected with ``ref``; a small rotation of the input is still rotated back (drift);
    without ``ref`` the diagonal of the signal block is made non-negative, as before."""
    from attnphase.theory.state import canonical_gauge
    x = _rank2([[0.03, 0.0], [0.0, 0.06]], th=(0.0, 0.0), V=[[14.5, 0.0], [0.0, 26.4]], M=(0.226, 0.0))
    refl = np.diag([-1.0, 1.0])
    c, s = np.cos(0.05), np.sin(0.05)
    rot = np.array([[c, -s], [s, c]])
    moved = lambda O: OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)  # noqa: E731
    with jax.enable_x64(True):
        j = lambda t: OrderParams(*(jnp.asarray(b) for b in t))  # noqa: E731
        out = canonical_gauge(j(moved(refl)), ref=j(x))
        np.testing.assert_allclose(np.asarray(out.M), -x.M, atol=1e-14)
        np.testing.assert_allclose(np.asarray(canonical_gauge(j(moved(refl))).M), x.M, atol=1e-14)
        back = canonical_gauge(j(moved(rot)), ref=j(x))
        for a, b in zip(back, x):
            np.testing.assert_allclose(np.asarray(a), b, atol=1e-12)


@pytest.mark.slow
def test_rank2_positional_pinned_point_is_a_genuine_fixed_point():
    """r = 2 positional (θ̂ = 0, even ansatz), ω = 0.3, α = 2: the undamped map oscillates (eigenvalue ≈ −4.8),
    damping 0.25 + Anderson converges. A genuine fixed point: the map returns M̂ with the sign of M (no hidden
    reflection), the training loss α E[ℓ(ĥ)] + λ tr q/(2σ²) equals e_t = −Φ (an identity at any fixed point of
    the prior side, violated by the reflected 2-cycle), both directions are used, and its e_t lies above the
    mixed (free) point's, the global minimum."""
    from attnphase.theory.engine import QMCConfig, solve
    p = ModelParams(r=2, omega=0.3)
    cfg = QMCConfig(points=512, scrambles=2)
    pos = solve(p, 2.0, "positional", qmc_config=cfg, damping=0.25, anderson=5)
    mix = solve(p, 2.0, "free", qmc_config=cfg, damping=0.3)
    assert pos.converged and mix.converged, (pos.status, mix.status)
    assert pos.values["theta"] == 0.0 and pos.values["m"] > 0.15
    assert float(np.asarray(pos.hats.M_hat)[0, 0]) * float(np.asarray(pos.x.M)[0, 0]) > 0
    eig = np.asarray(pos.values["q_eig"])
    assert eig[0] > 0.1 * eig[1]
    # −Φ minus the training loss, both written with α E[min value] (which cancels): zero at a fixed point
    x = OrderParams(*(np.asarray(b) for b in pos.x))
    h = type(pos.hats)(*(np.asarray(b) for b in pos.hats))
    gap = 0.5 * (np.trace(h.q_hat @ x.V) - np.trace(h.V_hat @ x.q) + np.sum(x.M * h.M_hat)
                 + np.sum(x.theta * h.theta_hat)) - p.lam * np.trace(x.q) / (2 * p.sigma ** 2)
    assert abs(gap) < 0.05 * pos.values["e_t"], (gap, pos.values["e_t"])
    assert mix.values["e_t"] + 3 * mix.errors["e_t"] < pos.values["e_t"] - 3 * pos.errors["e_t"]
