"""The leading O(1/d) term that separates a theory point (d → ∞, MODEL.md §8) from finite-d minimisers.

The student outputs ``S (x + p)``, the teacher ``T x`` (MODEL.md §1–§2). The positional encodings have norm
O(1) while a token has norm σ√d, so the pass-through ``S p`` adds ``‖S P‖_F² / (2d)`` to every per-sample loss
(u_1..u_k orthonormal; docs/finite_d.md derives ε_g exactly at finite d); the theory drops it. By the envelope
theorem the training minimum moves by the same term at the minimiser, to first order in 1/d:

    ε_g(d) ≈ ε_g + E‖S(ω) P‖_F² / (2d),    e_t(d) ≈ e_t + E‖S(ĥ) P‖_F² / (2d),

with ω the student means and ĥ the Moreau minimisers of the fixed point. At L = 2, P = (1, −1)ᵀ the term is
``Σ_l (S_l1 − S_l2)²/(2d)`` (tiny); at L = 3, P = I it is ~0.6e-3 at d = 1000, 10–20 % of ε_g.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..model import ModelParams
from . import channel_general as CG
from . import prox_general as PG
from . import qmc
from .state import OrderParams


def passthrough(params: ModelParams, alpha: float, x: OrderParams, points: int = 1024, seed: int = 0) -> dict:
    """``E‖S(ω)P‖_F²`` and ``E‖S(ĥ)P‖_F²`` at the state ``x`` (one scramble of ``points`` Sobol points)."""
    L, r, rs = params.L, params.r, params.r_star
    Z = qmc.scrambles(L * (r + rs), points, (seed,))[0]
    with jax.enable_x64(True):
        xi = jnp.asarray(Z[:, :L * r].reshape(points, L, r))
        y = jnp.asarray(Z[:, L * r:].reshape(points, L, rs))
        xs = OrderParams(*(jnp.asarray(np.asarray(b), dtype=jnp.float64) for b in x))
        A, P = jnp.asarray(params.A_array), jnp.asarray(params.P_array)
        out = _terms(xs, CG.Knobs(*(jnp.asarray(v, jnp.float64) for v in (alpha, params.omega, params.sigma,
                                                                            params.lam))),
                     xi, y, A, P, jnp.asarray(PG.start_offsets(L, r)))
        return {"S_omega_P": float(out[0]), "S_hhat_P": float(out[1])}


@jax.jit
def _terms(x, knobs, xi, y, A, P, offsets):
    w, hs, _ = CG.fields(x, knobs.sigma, xi, y, P)
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, knobs.omega, A)
    h, _, _ = jax.vmap(PG.prox, in_axes=(0, 0, 0, None, None, None))(w, hs, T, x.V, knobs.sigma ** 2, offsets)
    sq = lambda v: jnp.mean(jnp.sum((jax.vmap(PG.attention)(v) @ P) ** 2, axis=(-2, -1)))  # noqa: E731
    return sq(w), sq(h)


def at_dimension(values: dict, terms: dict, d: int) -> dict:
    """``ε_g`` and ``e_t`` of a theory point with the O(1/d) pass-through term added (module docstring)."""
    return {"eps_g": values["eps_g"] + terms["S_omega_P"] / (2 * d),
            "e_t": values["e_t"] + terms["S_hhat_P"] / (2 * d)}
