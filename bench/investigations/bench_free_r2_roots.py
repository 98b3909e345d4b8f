"""Fixed points of the FREE rank-2 map near the positional point (issue 11, item A; L = 2, r = 2, r* = 1).

Question: L-BFGS at d = 1000–2000 from positional/random starts (ω = 0.3, α = 1) ends partly at minimisers with
a small θ (0.006–0.05) and m ≈ 0.22. Is there a third fixed point of the d → ∞ equations (MODEL.md §8), unpinned,
with such a small θ, or is it the pinned positional point (θ = 0) with finite-d fluctuations of θ?

Method. The map x → prior(channel(x)) of :mod:`attnphase.theory.channel_general` on ONE scramble (global
multi-start prox at every evaluation, no pinning), written in a gauge that stays regular at θ = 0: the student
directions are rotated (det +1) so that M = (m, 0) — position on direction 0; θ = (θ₀, θ₁) free. Reduced
coordinates z = (q₀₀, q₀₁, q₁₁, m, θ₀, θ₁, V₀₀, V₀₁, V₁₁). ``--antithetic``: each Sobol point is paired with
its image y → −y, so that the discretised map keeps θ = 0 invariant exactly (as the N → ∞ map does, MODEL.md §8);
without it, QMC noise breaks that symmetry by O(N^{-1/2}) and a near-marginal θ direction amplifies it.

For every scramble: (1) Newton-type root finding (``scipy.optimize.root``, hybr) on z − G(z) from the given
starts (the pinned positional point with θ = (0, t) or (t, 0), t ∈ ``--thetas``, and the mixed point);
(2) the Jacobian of G at each root by central differences: its eigenvalues, and those of the θ block (odd under
y → −y, so it decouples at θ = 0); (3) e_t = −Φ at the root. Output: JSON (``--out``) and a short table.

Usage: ``python bench/investigations/bench_free_r2_roots.py [--points 2048 --scrambles 4 --alpha 1 --antithetic]``.
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import root  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.theory import channel_general as CG  # noqa: E402
from attnphase.theory import prox_general as PG  # noqa: E402
from attnphase.theory import qmc  # noqa: E402
from attnphase.theory.state import OrderParams  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "theory_vs_finite_d"
SCALE = np.array([0.03, 0.03, 0.03, 0.2, 0.05, 0.05, 20.0, 20.0, 20.0])
"""Typical sizes of the reduced coordinates (the root finder works on z / SCALE)."""
NAMES = ("q00", "q01", "q11", "m", "theta0", "theta1", "V00", "V01", "V11")


def expand(z) -> OrderParams:
    q = jnp.array([[z[0], z[1]], [z[1], z[2]]])
    V = jnp.array([[z[6], z[7]], [z[7], z[8]]])
    return OrderParams(q, jnp.array([[z[3]], [0.0]]), jnp.array([[z[4]], [z[5]]]), V)


def rotate_onto_first(x: OrderParams, v) -> OrderParams:
    """Rotate the two student directions (det +1, jax-traceable) so that the 2-vector ``v`` (a column of M or θ of
    ``x``) becomes (‖v‖, 0)."""
    c, s = v[0], v[1]
    n = jnp.hypot(c, s)
    O = jnp.array([[c, s], [-s, c]]) / n
    return OrderParams(O @ x.q @ O.T, O @ x.M, O @ x.theta, O @ x.V @ O.T)


def m_gauge(x: OrderParams) -> OrderParams:
    """Rotate (det +1) so that M = (‖M‖, 0): a gauge regular at θ = 0 (M ≈ 0.22 there)."""
    return rotate_onto_first(x, x.M[:, 0])


def reduce(x: OrderParams):
    return jnp.stack([x.q[0, 0], x.q[0, 1], x.q[1, 1], x.M[0, 0], x.theta[0, 0], x.theta[1, 0],
                      x.V[0, 0], x.V[0, 1], x.V[1, 1]])


def make_map(p: ModelParams, alpha: float, xi, y, coords=None, gauge=None):
    """z → (G(z), e_t(z), valid) for one point set (jit-compiled). ``coords``: the reduced coordinates as
    (expand, reduce) and ``gauge`` the rotation fixing them (default: this module's, M = (‖M‖, 0))."""
    expand_, reduce_ = coords or (expand, reduce)
    gauge = gauge or m_gauge
    knobs = CG.Knobs(*(jnp.asarray(v, jnp.float64) for v in (alpha, p.omega, p.sigma, p.lam)))
    A, P = jnp.asarray(p.A_array), jnp.asarray(p.P_array)
    offsets = jnp.asarray(PG.start_offsets(p.L, p.r))

    @jax.jit
    def G(z):
        x = expand_(z)
        out = CG.channel(x, knobs, xi, y, A, P, offsets)
        fx = gauge(CG.prior(out.hats, knobs))
        return reduce_(fx), -CG.free_energy(x, out.hats, out.EM, knobs), CG.valid(x, out.hats, knobs)

    return G


def points(p: ModelParams, n: int, seed: int, antithetic: bool):
    L, r, rs = p.L, p.r, p.r_star
    Z = qmc.normal_points(L * (r + rs), n // 2 if antithetic else n, seed)
    xi, y = Z[:, :L * r].reshape(-1, L, r), Z[:, L * r:].reshape(-1, L, rs)
    if antithetic:
        xi, y = np.concatenate([xi, xi]), np.concatenate([y, -y])
    return jnp.asarray(xi), jnp.asarray(y)


def jacobian(G, z, rel=1e-4):
    """Central-difference Jacobian of the reduced map in the scaled coordinates z / SCALE."""
    n = z.size
    J = np.zeros((n, n))
    for j in range(n):
        h = np.zeros(n)
        h[j] = rel * SCALE[j]
        J[:, j] = (np.asarray(G(z + h)[0]) - np.asarray(G(z - h)[0])) / (2 * rel * SCALE)
    return J


def solve_root(G, z0):
    f = lambda u: (u * SCALE - np.asarray(G(jnp.asarray(u * SCALE))[0])) / SCALE  # noqa: E731
    sol = root(f, z0 / SCALE, method="hybr", options=dict(xtol=1e-10, maxfev=400))
    z = sol.x * SCALE
    return z, sol


def starts(pos: np.ndarray, mixed: np.ndarray, thetas) -> dict[str, np.ndarray]:
    out = {"pinned positional": pos.copy()}
    for t in thetas:
        for j, lab in ((5, "noise dir"), (4, "M dir")):
            z = pos.copy()
            z[j] = t
            out[f"positional + θ={t:g} ({lab})"] = z
    out["mixed"] = mixed
    return out


def theory_start(branch: str, alpha: float) -> np.ndarray:
    """The bench's cached theory point of ``branch`` at α, in the reduced coordinates (M gauge)."""
    rows = json.loads((DATA / f"theory_L2r2_{branch}_a1_2_2.3_N512x4.json").read_text())
    t = next(r for r in rows if abs(r["alpha"] - alpha) < 1e-9)
    mat = t["matrices"]
    x = OrderParams(*(jnp.asarray(np.asarray(mat[k], float)) for k in ("q", "M", "theta", "V")))
    return np.asarray(reduce(m_gauge(x)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--scrambles", type=int, default=4)
    ap.add_argument("--thetas", type=float, nargs="*", default=[0.01, 0.02])
    ap.add_argument("--antithetic", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    p = ModelParams(L=2, r=2, r_star=1, omega=0.3)
    res = dict(alpha=a.alpha, points=a.points, scrambles=a.scrambles, antithetic=a.antithetic, load=os.getloadavg(),
               roots=[])
    with jax.enable_x64(True):
        pos, mixed = theory_start("positional", a.alpha), theory_start("free", a.alpha)
        for s in range(a.scrambles):
            G = make_map(p, a.alpha, *points(p, a.points, s, a.antithetic))
            for name, z0 in starts(pos, mixed, a.thetas).items():
                t0 = time.perf_counter()
                z, sol = solve_root(G, z0)
                Gz, e_t, ok = G(jnp.asarray(z))
                J = jacobian(G, z)
                ev = np.linalg.eigvals(J)
                evt = np.linalg.eigvals(J[4:6, 4:6])
                row = dict(scramble=s, start=name, success=bool(sol.success), nfev=int(sol.nfev),
                           residual=float(np.max(np.abs((z - np.asarray(Gz)) / SCALE))), valid=bool(ok),
                           z=dict(zip(NAMES, map(float, z))), theta=float(np.hypot(z[4], z[5])),
                           q=float(z[0] + z[2]), m=float(abs(z[3])), e_t=float(e_t),
                           jac_eig=[complex(v).__repr__() for v in ev[np.argsort(-np.abs(ev))]],
                           jac_theta_eig=[complex(v).__repr__() for v in evt], wall_s=time.perf_counter() - t0)
                res["roots"].append(row)
                print(f"s{s} {name:32s} ok={row['success']!s:5s} res={row['residual']:.1e} q={row['q']:.5f} "
                      f"m={row['m']:.4f} θ=({z[4]:+.4f},{z[5]:+.4f}) e_t={row['e_t']:.6f} "
                      f"|λ|max={abs(ev).max():.3f} θ-block {np.round(evt, 3)}", flush=True)
    if a.out:
        a.out.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
