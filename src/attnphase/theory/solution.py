"""One solution type for every integrator (MODEL.md §6, §8): the state as :class:`~.state.OrderParams`, the hats,
the scalar values with their integration errors, a :class:`~.status.Status`, the growth factor of the pinned
direction as a number (with its error), and provenance.

The split rule (L = 2, r = 1, :func:`.solver.solve_point`) returns it directly; the QMC engine (any L, r)
through :func:`from_general` (an adapter of its ``GeneralSolution``); ``phase/`` reads only this type. At
r = k = r* = 1 the blocks are 1 × 1 and keep the split rule's signs (m and θ may be negative there; the scalar
``values["m"]`` of the engine is ‖M‖_F, a norm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..model import ModelParams
from .state import Hats, OrderParams
from .status import Status

SCALARS = ("q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_g", "e_t")
"""Scalar values every solution carries (NaN where not available); ``q = tr q, m = ‖M‖, θ = ‖θ‖, V = tr V``
(signed at r = k = r* = 1)."""
NO_FIXED_POINT = (Status.MAX_STEPS, Status.DIVERGED, Status.INVALID_STATE)
"""Statuses of an iteration that reached no fixed point: no stability verdict is reported for them."""


@dataclass(frozen=True)
class Solution:
    """One fixed point of one branch at one α (MODEL.md §6 / §8).

    ``x``: the state; ``hats``: the conjugates at ``x`` (None where the map failed); ``values``: the scalars of
    :data:`SCALARS` and any others the integrator reports; ``errors``: their standard errors (empty for the
    split rule, whose quadrature error ~1e-5 is not estimated per point); ``stability``: the growth factor of
    the pinned direction (MODEL.md §7; None: not evaluated), ``stability_err`` its standard error;
    ``integrator``: ``split``, ``product`` or ``qmc``; ``nodes``: the split rule's outer order (0 for QMC);
    ``note``: the integrator's own words (why it stopped, which start); ``provenance``: the integrator's record
    (QMC sizes, seeds, iteration settings); ``raw``: the integrator's own solution object (not serialised)."""

    params: ModelParams
    alpha: float
    branch: str
    x: OrderParams
    hats: Hats | None
    values: dict
    errors: dict
    status: Status
    iterations: int
    residual: float
    stability: float | None = None
    stability_err: float | None = None
    integrator: str = "split"
    nodes: int = 0
    note: str = ""
    provenance: dict = field(default_factory=dict)
    raw: Any = field(default=None, repr=False, compare=False)

    @property
    def converged(self) -> bool:
        return self.status is Status.CONVERGED

    @property
    def stable(self) -> bool | None:
        """The growth factor is at most +1 (None where not evaluated or not finite, and where the iteration
        reached no fixed point: a growth factor at the last iterate of a run that did not converge says nothing
        about a fixed point, issue 30 item 9)."""
        s = self.stability
        if s is None or not math.isfinite(s) or self.status in NO_FIXED_POINT:
            return None
        return bool(s <= 1.0)

    def value(self, name: str) -> float:
        return float(self.values.get(name, math.nan))

    def error(self, name: str) -> float:
        """Standard error of ``name``; NaN where the integrator gives none (the split rule: its quadrature
        error, ~1e-5, is not estimated per point, docs/theory.md)."""
        return float(self.errors.get(name, math.nan))

    # the scalar attributes phase/ reads (the names of MODEL.md)
    q = property(lambda self: self.value("q"))
    m = property(lambda self: self.value("m"))
    V = property(lambda self: self.value("V"))
    theta = property(lambda self: self.value("theta"))
    q_hat = property(lambda self: self.value("q_hat"))
    m_hat = property(lambda self: self.value("m_hat"))
    V_hat = property(lambda self: self.value("V_hat"))
    theta_hat = property(lambda self: self.value("theta_hat"))
    eps_g = property(lambda self: self.value("eps_g"))
    e_t = property(lambda self: self.value("e_t"))

    @property
    def rule(self) -> str:
        return self.integrator

    @property
    def start(self) -> str:
        return str(self.provenance.get("start", ""))

    @property
    def stability_nodes(self) -> int | None:
        """The split rule's order the growth factor was evaluated on (None: not evaluated, or QMC)."""
        return self.provenance.get("stability_nodes")

    @property
    def fast_map(self) -> bool:
        """Whether the split rule's iteration used the fast (warm-started) map (its result is certified by a
        global evaluation, :func:`.split_integrator.iterate_split`)."""
        return bool(self.provenance.get("fast_map", False))

    def with_note(self, note: str) -> "Solution":
        return replace(self, note=note)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(alpha=self.alpha, branch=self.branch, omega=self.params.omega,
                                 status=self.status.value, converged=self.converged, iterations=self.iterations,
                                 residual=self.residual, stability=self.stability, stability_err=self.stability_err,
                                 stable=self.stable, integrator=self.integrator, nodes=self.nodes, note=self.note)
        d.update({k: self.value(k) for k in SCALARS})
        d.update({f"{k}_err": float(v) for k, v in self.errors.items() if np.ndim(v) == 0})
        d["state"] = {k: np.asarray(v).tolist() for k, v in self.x._asdict().items()}
        d["provenance"] = {"params": self.params.to_dict(), **self.provenance}
        return d


def scalar_state(q: float, m: float, V: float, theta: float) -> OrderParams:
    """The r = k = r* = 1 state (1 × 1 blocks) of the split rule's scalars."""
    one = lambda v: np.array([[float(v)]])  # noqa: E731
    return OrderParams(one(q), one(m), one(theta), one(V))


def scalar_solution(alpha: float, branch: str, params: ModelParams, q: float, m: float, V: float, theta: float,
                    q_hat: float, m_hat: float, V_hat: float, theta_hat: float, eps_g: float, e_t: float,
                    converged: bool, iterations: int, residual: float, note: str = "",
                    stability: float | None = None, stable: bool | None = None, nodes: int = 0,
                    rule: str = "split") -> Solution:
    """A split-rule :class:`Solution` (L = 2, r = 1) from its scalars, in the field order of the former
    ``FixedPointSolution`` (stand-in solvers in tests, tables read back). ``converged`` gives the status
    (``CONVERGED`` or ``MAX_STEPS``, ``note`` saying why); ``stable`` is implied by ``stability`` (≤ 1)."""
    vals = dict(q=q, m=m, V=V, theta=theta, q_hat=q_hat, m_hat=m_hat, V_hat=V_hat, theta_hat=theta_hat,
                eps_g=eps_g, e_t=e_t)
    hats = Hats(*(np.array([[float(v)]]) for v in (q_hat, m_hat, theta_hat, V_hat)))
    return Solution(params, float(alpha), branch, scalar_state(q, m, V, theta), hats,
                    {k: float(v) for k, v in vals.items()}, {}, Status.CONVERGED if converged else Status.MAX_STEPS,
                    int(iterations), float(residual), None if stability is None else float(stability), None, rule,
                    int(nodes or 0), note or ("converged" if converged else "not converged"),
                    dict(rule=rule, nodes=nodes, start="given or model"))


def state_of(sol) -> OrderParams:
    """The state of any solution-like object: ``.x`` where it has one (:class:`Solution`, the engine's), else
    its scalars ``(q, m, V, θ)`` as 1 × 1 blocks (a stand-in solver's namespace)."""
    x = getattr(sol, "x", None)
    if isinstance(x, OrderParams):
        return OrderParams(*(np.asarray(b, float) for b in x))
    return scalar_state(sol.q, sol.m, sol.V, sol.theta)


def state_vector(x: OrderParams) -> np.ndarray:
    """The flat float64 vector of a state (numpy, the order of :func:`.state.flatten`; for interpolation in α:
    linear in every block)."""
    return np.concatenate([np.asarray(b, float).reshape(-1) for b in x])


def state_from_vector(v: np.ndarray, like: OrderParams) -> OrderParams:
    """Inverse of :func:`state_vector` for blocks shaped like ``like`` (float64)."""
    v, out, i = np.asarray(v, float), [], 0
    for b in like:
        n = int(np.size(b))
        out.append(v[i:i + n].reshape(np.shape(b)))
        i += n
    return OrderParams(*out)


def admissible(x: OrderParams, branch: str, sigma: float) -> OrderParams | None:
    """``x`` made a valid start of ``branch`` (MODEL.md §6 "Branches"): q and V positive definite; on the
    semantic branch M = 0 and ``0.999 σ² q − θθᵀ`` positive definite (θ² < q σ² at r = 1) with θ ≠ 0; on the
    positional branch θ = 0 and M ≠ 0. None where it is not (the caller falls back to a known point)."""
    q, M, th, V = (np.asarray(b, float) for b in x)
    if not all(np.isfinite(b).all() for b in (q, M, th, V)):
        return None
    qs, Vs = 0.5 * (q + q.T), 0.5 * (V + V.T)
    if np.linalg.eigvalsh(qs)[0] <= 0 or np.linalg.eigvalsh(Vs)[0] <= 0:
        return None
    if branch == "semantic":
        if not np.any(th != 0) or (th.size == 1 and th.item() <= 0):
            return None
        if np.linalg.eigvalsh(0.999 * sigma ** 2 * qs - th @ th.T)[0] <= 0:
            return None
        M = np.zeros_like(M)
    elif branch == "positional":
        if not np.any(M != 0):
            return None
        th = np.zeros_like(th)
    return OrderParams(q, M, th, V)


def from_general(sol) -> Solution:
    """A QMC-engine ``GeneralSolution`` (any L, r) as a :class:`Solution`: the scalar values (q = tr q, m = ‖M‖,
    θ = ‖θ‖, V = tr V, ε_g, e_t, …) with their standard errors over scrambles, the growth factor of the pinned
    direction and its error (``stability["growth"]``, ``["growth_err"]``)."""
    vals = {k: float(v) for k, v in sol.values.items() if np.ndim(v) == 0}
    for k, b in zip(("q_hat", "m_hat", "theta_hat", "V_hat"), sol.hats):
        vals.setdefault(k, float(np.trace(b)) if k in ("q_hat", "V_hat") else float(np.linalg.norm(b)))
    errs = {k: float(v) for k, v in sol.errors.items() if np.ndim(v) == 0}
    rec = sol.stability or {}
    growth = rec.get("growth")
    g_err = rec.get("growth_err")
    x = sol.x if sol.x is not None else sol.last
    prov = dict(qmc_points=sol.qmc.points, scrambles=sol.qmc.scrambles, seeds=list(sol.qmc.seeds),
                start=(sol.iteration or {}).get("start"), resolution=sol.resolution, significance=sol.significance,
                verdict=sol.verdict)
    return Solution(sol.params, float(sol.alpha), sol.branch, OrderParams(*(np.asarray(b, float) for b in x)),
                    sol.hats, vals, errs, sol.status, int(sol.iterations), float(sol.residual),
                    None if growth is None else float(growth), None if g_err is None else float(g_err), "qmc", 0,
                    str(rec.get("reason") or ""), prov, raw=sol)


def unsolved(params: ModelParams, alpha: float, branch: str, nodes: int | None, why: str,
             like: OrderParams | None = None) -> Solution:
    """A point that was not solved (beyond a branch's end): NaN values, status ``MAX_STEPS``, ``why`` as note."""
    like = like if like is not None else scalar_state(0.0, 0.0, 0.0, 0.0)
    nanx = OrderParams(*(np.full(np.shape(b), np.nan) for b in like))
    return Solution(params, float(alpha), branch, nanx, None, {k: math.nan for k in SCALARS}, {}, Status.MAX_STEPS,
                    0, math.nan, None, None, "none", int(nodes or 0), why)


COLUMNS = ["alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta", "q_hat", "m_hat", "V_hat",
           "theta_hat", "eps_g", "e_t", "converged", "iterations", "residual", "status", "stability",
           "stable", "nodes", "rule"]
"""Columns of :func:`solution_table` (the split rule's ``curve_table`` columns; ``*_err`` added for QMC)."""


def solution_table(solutions: Sequence[Any]):
    """Tidy :class:`pandas.DataFrame`, one row per point (any solution-like object; ``BranchPoint`` too)."""
    import pandas as pd
    rows, errs = [], False
    for s in solutions:
        s = getattr(s, "solution", s)
        d = {c: getattr(s, c) for c in COLUMNS if c not in ("omega", "sigma", "lam") and hasattr(s, c)}
        if isinstance(s, Solution):
            d["status"] = s.status.value if s.converged or not s.note else s.note
            for k in ("e_t", "eps_g", "q", "m", "theta", "V"):
                if k in s.errors:
                    d[f"{k}_err"], errs = s.errors[k], True
            if s.stability_err is not None:
                d["stability_err"], errs = s.stability_err, True
        d.update(omega=s.params.omega, sigma=s.params.sigma, lam=s.params.lam)
        rows.append(d)
    cols = COLUMNS + (sorted({k for r in rows for k in r if k.endswith("_err")}) if errs else [])
    return pd.DataFrame(rows, columns=cols)
