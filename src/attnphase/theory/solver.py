"""Fixed-point solver of MODEL.md §6 (L = 2, r = 1): damped iteration with Anderson mixing, branches pinned
on their invariant subspaces, stability of each pinned branch against its pinned direction."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace as _dc_replace
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from .channel import channel
from .observables import eps_g as _eps_g, free_energy
from .prior import prior
from .quadrature import gauss_hermite

BRANCHES = ("semantic", "positional", "uninformative", "free")
DEFAULT_NODES = 8
"""Gauss–Hermite order per dimension of the 4-D product rule (DEFAULT_NODES**4 nodes)."""

_PINS = {"semantic": (False, True, False, False),       # pinned (q, m, V, θ): m̂ = 0
         "positional": (False, False, False, True),     # θ̂ = 0
         "uninformative": (False, True, False, True),
         "free": (False, False, False, False)}
_INIT = {"semantic": (0.1, 0.0, 12.0, 0.15), "positional": (0.05, 0.25, 11.0, 0.0),
         "uninformative": (0.08, 0.0, 25.0, 0.0), "free": (0.08, 0.15, 12.0, 0.1)}
_FLOOR = 1e-9


@dataclass(frozen=True)
class FixedPointSolution:
    alpha: float
    branch: str
    params: ModelParams
    q: float
    m: float
    V: float
    theta: float
    q_hat: float
    m_hat: float
    V_hat: float
    theta_hat: float
    eps_g: float
    e_t: float
    converged: bool
    iterations: int
    residual: float
    status: str
    stability: float | None
    stable: bool | None
    nodes: int

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params.to_dict()
        return d


def _validate(params: ModelParams, alpha: float, branch: str, nodes: int) -> None:
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if params.L != 2 or params.r != 1 or params.r_star != 1:
        raise ParameterError("params", "L = 2, r = 1, r_star = 1 (the solvable case of MODEL.md §6)",
                             (params.L, params.r, params.r_star))
    check_range("alpha", alpha, lo=0.0, lo_open=True)
    if branch not in BRANCHES:
        raise ParameterError("branch", f"one of {', '.join(BRANCHES)}", branch)
    check_int("nodes", nodes, 2)
    if nodes > 40:
        raise ParameterError("nodes", "an integer in [2, 40] (Gauss-Hermite order per dimension)", nodes)


class _Map:
    def __init__(self, params, alpha, branch, X, W):
        self.params, self.alpha, self.pins, self.X, self.W = params, alpha, _PINS[branch], X, W
        self.warm = None
        self.evals = 0

    def hats(self, x):
        q, m, V, th = x
        ch = channel(self.params, self.alpha, q, m, V, th, self.X, self.W, warm=self.warm)
        self.warm = ch.h
        self.evals += 1
        h = np.array([ch.q_hat, ch.m_hat, ch.V_hat, ch.theta_hat])
        h[np.array(self.pins)] = 0.0
        return h, ch

    def __call__(self, x):
        h, ch = self.hats(x)
        return np.array(prior(self.params, *h)), h, ch


def _rel(a, b):
    return float(np.max(np.abs(a - b) / (np.maximum(np.abs(a), np.abs(b)) + _FLOOR)))


def solve_point(params: ModelParams, alpha: float, branch: str = "semantic", *, nodes: int | None = None,
                rtol: float = 1e-7, max_steps: int = 300, init: "FixedPointSolution | None" = None,
                stability: bool = True, damping: float = 0.6, anderson: int = 4) -> FixedPointSolution:
    """Solve the fixed point of MODEL.md §6 on one branch at sample complexity ``alpha``.

    Convergence: the relative change of the UNDAMPED map over all eight order parameters,
    ``max(|F(x) - x| / |x|, |x̂(x_k) - x̂(x_{k-1})| / |x̂|) < rtol`` (absolute floor 1e-9).
    Iteration: damped (``damping`` = weight of the new map value) with Anderson mixing of depth ``anderson``
    (0 switches it off), guarded: non-positive q or V fall back to the damped step.
    Never returns an unconverged point silently: ``converged=False`` and ``status`` says why.
    """
    nodes = DEFAULT_NODES if nodes is None else nodes
    _validate(params, alpha, branch, nodes)
    check_range("rtol", rtol, lo=0.0, lo_open=True)
    max_steps = check_int("max_steps", max_steps, 1)
    check_range("damping", damping, lo=0.0, hi=1.0, lo_open=True)
    alpha = float(alpha)
    X, W = gauss_hermite(nodes, 4)
    F = _Map(params, alpha, branch, X, W)
    pins = np.array(_PINS[branch])
    x = np.array([init.q, init.m, init.V, init.theta] if init is not None else _INIT[branch], dtype=float)
    if init is not None and init.branch != branch:
        x[pins] = 0.0
    x[pins] = 0.0
    if branch in ("semantic", "free") and x[3] <= 0:
        x[3] = 0.1 * math.sqrt(max(x[0], 1e-6))
    if branch in ("positional", "free") and x[1] == 0:
        x[1] = 0.1
    xs, fs = [], []
    h_prev = None
    residual = math.inf
    status = "max_steps reached"
    converged = False
    it = 0
    ch = None
    try:
        for it in range(1, max_steps + 1):
            fx, h, ch = F(x)
            if not np.all(np.isfinite(fx)):
                status = "non-finite map value"
                break
            r = _rel(fx, x)
            if h_prev is not None:
                r = max(r, _rel(h, h_prev))
            else:
                r = max(r, 1.0)
            h_prev = h
            residual = r
            if r < rtol:
                converged, status = True, "converged"
                x = fx
                break
            # Anderson mixing on g(x) = F(x) - x
            xs.append(x.copy())
            fs.append(fx - x)
            xs, fs = xs[-(anderson + 1):], fs[-(anderson + 1):]
            x_new = x + damping * (fx - x)
            if anderson > 0 and len(xs) > 1:
                dX = np.array([xs[i + 1] - xs[i] for i in range(len(xs) - 1)]).T
                dF = np.array([fs[i + 1] - fs[i] for i in range(len(fs) - 1)]).T
                free = ~pins
                try:
                    gam, *_ = np.linalg.lstsq(dF[free], fs[-1][free], rcond=None)
                    cand = x + damping * fs[-1] - (dX + damping * dF) @ gam
                    cand[pins] = 0.0
                    if cand[0] > 0 and cand[2] > 0 and np.all(np.isfinite(cand)) \
                            and _rel(cand, x) < 0.5:
                        x_new = cand
                except np.linalg.LinAlgError:
                    pass
            x_new[pins] = 0.0
            x = x_new
    except FloatingPointError as exc:
        status = f"map failed: {exc}"
    if not converged and status == "max_steps reached":
        status = f"not converged after {max_steps} steps (residual {residual:.2e} > rtol {rtol:.0e})"
    # final observables at x (recompute hats at the returned point)
    fx, h, ch = F(x)
    q, m, V, th = (float(v) for v in x)
    qh, mh, Vh, thh = (float(v) for v in h)
    et = -free_energy(params, alpha, q, m, V, th, qh, mh, Vh, thh, ch.EM)
    eg = _eps_g(params, q, m, th, X, W)
    stab = stable = None
    if stability and branch != "free" and np.isfinite(x).all():
        stab = _stability(F, x, branch)
        stable = bool(stab <= 1.0)
    return FixedPointSolution(alpha, branch, params, q, m, V, th, qh, mh, Vh, thh, eg, et, converged, it,
                              float(residual), status, stab, stable, nodes)


def _stability(F: _Map, x: np.ndarray, branch: str, eps: float = 1e-4) -> float:
    """Growth factor of the pinned direction under the full (unpinned) map, linearised at the fixed point.

    By the exact symmetries the pinned direction decouples at linear order, so the factor is
    ``∂x'_p / ∂x_p`` (x_p = m on the semantic, θ on the positional branch; the max of both for
    uninformative), estimated by a one-sided finite difference of size ``eps·√q`` (the map is odd in x_p).
    """
    idx = {"semantic": [1], "positional": [3], "uninformative": [1, 3]}[branch]
    saved = F.pins
    F.pins = (False, False, False, False)
    try:
        out = []
        for i in idx:
            d = eps * math.sqrt(max(x[0], 1e-12))
            xp = x.copy()
            xp[i] += d
            fx, _, _ = F(xp)
            out.append(float(fx[i] / d))
    finally:
        F.pins = saved
    return max(out)


def solve_curve(params: ModelParams, alphas: Sequence[float], branch: str, *,
                progress: Callable[[int], None] | None = None, **kw) -> list[FixedPointSolution]:
    """Solve along ``alphas`` in the given order, warm-starting each point from its neighbour
    (continuation). ``progress(i)`` is called after point ``i``. A point that did not converge is kept
    (converged=False) and the next one starts from the last converged point."""
    sols: list[FixedPointSolution] = []
    init = kw.pop("init", None)
    for i, a in enumerate(alphas):
        s = solve_point(params, float(a), branch, init=init, **kw)
        sols.append(s)
        if s.converged:
            init = s
        if progress is not None:
            progress(i)
    return sols


_COLUMNS = ["alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta", "q_hat", "m_hat", "V_hat",
            "theta_hat", "eps_g", "e_t", "converged", "iterations", "residual", "status", "stability",
            "stable", "nodes"]


def curve_table(solutions: Sequence[FixedPointSolution]):
    """Tidy :class:`pandas.DataFrame`, one row per point."""
    import pandas as pd
    rows = []
    for s in solutions:
        d = {c: getattr(s, c) for c in _COLUMNS if hasattr(s, c)}
        d.update(omega=s.params.omega, sigma=s.params.sigma, lam=s.params.lam)
        rows.append(d)
    return pd.DataFrame(rows, columns=_COLUMNS)
