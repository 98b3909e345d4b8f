"""Is the engine's global prox right at the L = 3 finite-d positional state? (issue 11, item B)

L = 3, A = 0.4 I + 0.2 J, P = I, r = r* = 1, σ = 0.5, ω = 0.3. L-BFGS at d = 1000–4000 from the positional start
lands partly in a state (q ≈ 0.105, m ≈ 0.22, θ ≈ 0.02) at which the theory's map has no fixed point
(docs/notes/2026-12-05-theory-general.md, "L = 3 positional"). If the engine's multi-start prox (:func:`prox_general.prox`)
missed global minima there, that conclusion would be wrong. This script compares, on QMC samples of the channel
at such states, the engine's minimum value with a brute-force one: the Moreau objective on a dense grid
(``--grid`` points per axis, 3 axes) over the box |h − ω|_∞ ≤ √(2 V ℓ(ω)) (which contains the global minimiser:
F(ĥ) ≤ F(ω) = ℓ(ω) gives |ĥ − ω|² ≤ 2 V ℓ(ω)), its grid-local minima (lower than their 6 neighbours; the
``--polish`` lowest) each polished by 60 Newton steps, the lowest kept. A sample where brute force is lower by
more than 1e-9 (1 + |F|) is a miss.

States: M along e₁, along (2, −1, −1)/√6 (the S₃-symmetric direction that finite-d states take) and along a
finite-d minimiser's own M (d = 1000, instance 13: (0.201, −0.078, −0.100)), ‖M‖ = 0.22, q = 0.105, θ = 0.02,
V ∈ {16, 27}.

Usage: ``python bench/investigations/bench_prox_L3_brute.py [--points 256 --grid 41 --polish 32]``.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import lru_cache
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import channel_general as CG
from attnphase.theory import prox_general as PG
from attnphase.theory import qmc
from attnphase.theory.state import OrderParams

P3 = ModelParams(L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]], omega=0.3)
DIRECTIONS = {"e1": (1.0, 0.0, 0.0), "(2,-1,-1)": (2.0, -1.0, -1.0), "finite-d #13": (0.201, -0.078, -0.100)}


def state(direction, V, q=0.105, m=0.22, theta=0.02) -> OrderParams:
    u = np.asarray(direction) / np.linalg.norm(direction)
    return OrderParams(np.array([[q]]), m * u[None, :], np.array([[theta]]), np.array([[V]]))


@lru_cache(maxsize=4)
def brute_force(grid: int, polish: int):
    """(w, h*, T, V, σ²) → lowest value over the polished grid-local minima, and the minimiser."""
    g = jnp.linspace(-1.0, 1.0, grid)
    cube = jnp.stack(jnp.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)

    def one(w, T, V, s2):
        Vinv = jnp.linalg.inv(V)
        R = jnp.sqrt(2.0 * V[0, 0] * PG.loss(w, T, s2)) + 1e-6
        H = w[None, :, :] + R * cube[:, :, None]                      # (G, 3, 1)
        F = jax.vmap(PG.objective, in_axes=(0, None, None, None, None))(H, w, T, Vinv, s2).reshape(grid, grid, grid)
        Fp = jnp.pad(F, 1, constant_values=jnp.inf)
        c = Fp[1:-1, 1:-1, 1:-1]
        local = jnp.ones_like(c, bool)
        for ax in range(3):
            for s in (-1, 1):
                local &= c <= jnp.roll(Fp, s, axis=ax)[1:-1, 1:-1, 1:-1]
        score = jnp.where(local, F, jnp.inf).ravel()
        idx = jnp.argsort(score)[:polish]
        h, Fh, _ = jax.vmap(PG._newton, in_axes=(0, None, None, None, None, None, None))(
            H[idx], w, T, Vinv, s2, 60, PG.GTOL)
        Fh = jnp.where(jnp.isfinite(score[idx]) & jnp.isfinite(Fh), Fh, jnp.inf)
        j = jnp.argmin(Fh)
        return Fh[j], h[j], jnp.sum(jnp.isfinite(score))

    return jax.jit(jax.vmap(one, in_axes=(0, 0, None, None)))


def compare(x: OrderParams, n: int, grid: int, polish: int, seed: int = 0) -> dict:
    p = P3
    Z = qmc.normal_points(p.L * (p.r + p.r_star), n, seed)
    xi, y = jnp.asarray(Z[:, :3].reshape(n, 3, 1)), jnp.asarray(Z[:, 3:].reshape(n, 3, 1))
    xs = OrderParams(*(jnp.asarray(b) for b in x))
    w, hs, _ = CG.fields(xs, p.sigma, xi, y, jnp.asarray(p.P_array))
    T = jax.vmap(PG.teacher, in_axes=(0, None, None))(hs, p.omega, jnp.asarray(p.A_array))
    s2 = p.sigma ** 2
    off = jnp.asarray(PG.start_offsets(3, 1))
    h_e, F_e, _ = jax.jit(jax.vmap(PG.prox, in_axes=(0, 0, 0, None, None, None)))(w, hs, T, xs.V, s2, off)
    F_b, h_b, n_loc = brute_force(grid, polish)(w, T, xs.V, s2)
    F_e, F_b = np.asarray(F_e), np.asarray(F_b)
    miss = F_b < F_e - 1e-9 * (1 + np.abs(F_e))
    # the hat that a miss would move most: q̂ ∝ E|g|², g = (ĥ − ω)/V
    g_e = (np.asarray(h_e) - np.asarray(w)) / float(x.V[0, 0])
    g_b = np.where(miss[:, None, None], (np.asarray(h_b) - np.asarray(w)) / float(x.V[0, 0]), g_e)
    q_hat_rel = abs(np.mean(np.sum(g_b ** 2, axis=(1, 2))) / np.mean(np.sum(g_e ** 2, axis=(1, 2))) - 1)
    return dict(samples=n, misses=int(miss.sum()), worst_gap=float(np.max(F_e - F_b)),
                engine_below_brute=int(np.sum(F_e < F_b - 1e-9 * (1 + np.abs(F_b)))),
                grid_local_minima_max=int(np.max(np.asarray(n_loc))), q_hat_rel_change=float(q_hat_rel))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=256)
    ap.add_argument("--grid", type=int, default=41)
    ap.add_argument("--polish", type=int, default=32)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    rows = []
    with jax.enable_x64(True):
        for V in (16.0, 27.0):
            for name, u in DIRECTIONS.items():
                t = time.perf_counter()
                r = dict(M_direction=name, V=V, **compare(state(u, V), a.points, a.grid, a.polish))
                r["wall_s"] = time.perf_counter() - t
                rows.append(r)
                print(json.dumps(r), flush=True)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
