"""The O(1/d) pass-through term of the finite-size correction (theory/finite_size.py) against an independent
computation at L = 2, r = r* = 1 (issue 33; kills a bench/mutation.py survivor): the same QMC points, the split
rule's numpy prox (theory/prox.py, a separate implementation of the Moreau minimiser) instead of the general
engine's JAX prox, and S(h) written out for two tokens: (S P)_l = S_l1 − S_l2 with P = (1, −1)ᵀ."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from attnphase.theory import qmc
from attnphase.model import ModelParams
from attnphase.theory import finite_size as FS
from attnphase.theory import prox as PX
from attnphase.theory.state import OrderParams


def _passthrough_numpy(p: ModelParams, q, m, theta, V, points, seed=0):
    Z = qmc.scrambles(4, points, (seed,))[0]
    xi, y = Z[:, :2], Z[:, 2:]
    s = np.array([1.0, -1.0])
    w = np.sqrt(q) * xi + s * m                                           # MODEL.md §6 student means
    hs = theta / np.sqrt(q) * xi + np.sqrt(p.sigma ** 2 - theta ** 2 / q) * y
    t1, t2 = PX.teacher_diag(hs[:, 0], hs[:, 1], p.omega, p.A_array)
    h1, h2, _, _ = PX.prox(w[:, 0], w[:, 1], t1, t2, V, p.sigma ** 2)

    def sp2(a, b):             # ‖S(a, b) P‖²: S_11 = sigmoid(a² − ab), S_22 = sigmoid(b² − ab)
        s11 = 1.0 / (1.0 + np.exp(a * b - a * a))
        s22 = 1.0 / (1.0 + np.exp(a * b - b * b))
        return (2 * s11 - 1) ** 2 + (1 - 2 * s22) ** 2
    return float(np.mean(sp2(w[:, 0], w[:, 1]))), float(np.mean(sp2(h1, h2)))


@pytest.mark.parametrize("q, m, theta, V", [(0.0511, 0.258, 0.0, 11.37), (0.1148, 0.0, 0.1582, 12.67)])
def test_passthrough_equals_the_split_rules_prox(q, m, theta, V):
    """Positional and semantic α = 2 states (MODEL.md §6 magnitudes): E‖S(ω)P‖² and E‖S(ĥ)P‖² agree with the
    numpy computation on the same 1024 points to 1e-6 relative (the two proxes' tolerances)."""
    p = ModelParams(omega=0.3)
    x = OrderParams(jnp.array([[q]]), jnp.array([[m]]), jnp.array([[theta]]), jnp.array([[V]]))
    pt = FS.passthrough(p, 2.0, x, points=1024)
    s_w, s_h = _passthrough_numpy(p, q, m, theta, V, 1024)
    assert pt["S_omega_P"] == pytest.approx(s_w, rel=1e-6)
    assert pt["S_hhat_P"] == pytest.approx(s_h, rel=1e-6)
    assert abs(s_h - s_w) > 1e-3 * s_w             # ĥ ≠ ω: the prox matters for the e_t term
