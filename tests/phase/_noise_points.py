"""Per-scramble states of free solves (the survey's), measured with
bench/investigations/noise_floor_mixed_point.py (rounded as printed there), and a QMC-like Solution built from
them: the values are the engine's scramble means (q = tr q, m = ‖M_s‖, θ = ‖θ_s‖, V = tr V averaged over
scrambles, MODEL.md §8)."""

from types import SimpleNamespace

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory.solution import Solution
from attnphase.theory.state import OrderParams, invariants, unflatten
from attnphase.theory.status import Status

L3 = ModelParams(L=3, r=1, sigma=0.5, lam=0.01, omega=0.3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])

NOISE_L3 = np.array([[0.0426, 0.0038, 0.0134, -0.0122, 0.0107, 31.7055],
                     [0.0425, -0.0101, 0.0098, -0.0001, 0.0196, 31.1640],
                     [0.0427, -0.0020, 0.0051, -0.0003, -0.0386, 28.7873],
                     [0.0423, -0.0143, 0.0094, 0.0043, 0.0403, 29.3005]])
"""L = 3, A = 0.4 I + 0.2 J, ω = 0.3, α = 0.25, 256 × 4 points: the free solve from the uninformative point pushed
along m and θ (q, M₁, M₂, M₃, θ, V per scramble). By size a "mixed" point (m = 0.014, θ = 0.027, e_t =
0.0019699 ± 1.5e-5 against the uninformative point's 0.0019637 ± 1.3e-5, growth 1.06 ± 0.05): the survey took it
for the global minimum (docs/guides/transitions-any-model.md)."""


def qmc_solution(params: ModelParams, alpha: float, branch: str, xs, e_t: float, e_t_err: float = 1.5e-5,
                 stability: float | None = None, stability_err: float | None = None) -> Solution:
    """A converged QMC-like :class:`Solution` whose per-scramble states are ``xs`` (S, n)."""
    xs = np.asarray(xs, float)
    inv = invariants(OrderParams(*(np.asarray(b) for b in unflatten(xs, params.r, params.k, params.r_star))))
    vals = {k: float(np.mean(inv[k])) for k in ("q", "m", "theta", "V")}
    vals.update(e_t=e_t, eps_g=0.01)
    mean = OrderParams(*(np.asarray(b).mean(axis=0) for b in unflatten(xs, params.r, params.k, params.r_star)))
    return Solution(params, alpha, branch, mean, None, vals, {"e_t": e_t_err, "eps_g": 1e-5}, Status.CONVERGED, 20,
                    1e-7, stability, stability_err, "qmc", 0, "", {},
                    raw=SimpleNamespace(scramble_x=xs, coarse_scramble_x=None))
