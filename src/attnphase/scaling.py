"""Finite-size scaling of trained students (MODEL.md §3–§4, §6; docs/finite_d.md).

For each dimension ``d`` the same protocol (:func:`attnphase.simulate.simulate`) is run on ``instances``
independent instances; per observable the mean ± s.e. over instances is fitted by weighted least squares
``y(d) = y_∞ + b/d`` (weights ``1/s.e.²``), and the extrapolation ``y_∞ ± s.e.`` is set beside the asymptotic
theory's branch at the same parameters (:func:`theory_point`), the fitted slopes b of ε_g and e_t beside the
theory's O(1/d) coefficients (``predicted_slope``; :mod:`attnphase.theory.finite_size`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .errors import ParameterError, check_int
from .model import ModelParams

OBSERVABLES = ("m", "theta_over_sigma2", "q", "e_t", "eps_g")
BRANCH_OF_INIT = {"semantic": "semantic", "positional": "positional"}


@dataclass(frozen=True)
class InverseDFit:
    """Weighted fit ``y = intercept + slope/d``; ``*_se`` from the weighted normal equations, inflated by
    ``√(χ²/dof)`` when that exceeds 1 (the 1/d model then fits worse than the error bars say)."""

    intercept: float
    intercept_se: float
    slope: float
    slope_se: float
    chi2: float
    dof: int
    inflated: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fit_inverse_d(ds: Sequence[float], y: Sequence[float], se: Sequence[float]) -> InverseDFit:
    """Weighted least squares of ``y`` on ``(1, 1/d)`` with weights ``1/se²`` (at least two ``d``)."""
    ds, y, se = (np.asarray(v, dtype=float) for v in (ds, y, se))
    if ds.ndim != 1 or ds.size < 2 or y.shape != ds.shape or se.shape != ds.shape:
        raise ParameterError("ds", "at least two dimensions, one mean and one s.e. each", ds.tolist())
    if np.any(ds <= 0):
        raise ParameterError("ds", "positive dimensions", ds.tolist())
    if len(set(ds.tolist())) < 2:
        raise ParameterError("ds", "at least two distinct dimensions", ds.tolist())
    floor = 1e-12 * max(1.0, float(np.max(np.abs(y))))
    w = 1.0 / np.maximum(se, floor) ** 2
    X = np.stack([np.ones_like(ds), 1.0 / ds], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    coef = cov @ (X.T @ (w * y))
    res = y - X @ coef
    chi2 = float(np.sum(w * res ** 2))
    dof = ds.size - 2
    scale = chi2 / dof if dof > 0 else 1.0
    inflated = scale > 1.0
    if inflated:
        cov = cov * scale
    return InverseDFit(float(coef[0]), float(math.sqrt(cov[0, 0])), float(coef[1]), float(math.sqrt(cov[1, 1])),
                       chi2, dof, inflated)


def theory_point(params: ModelParams, alpha: float, branch: str) -> dict[str, Any]:
    """The asymptotic branch (MODEL.md §6) in the observables of :data:`OBSERVABLES`, with its status and the
    O(1/d) coefficients of ε_g and e_t (``eps_g_coef``, ``e_t_coef`` with ``*_err``;
    :mod:`attnphase.theory.finite_size`): the slopes the 1/d fit should find, up to the overlaps' own shifts.

    Uses the current ``attnphase.theory.solver.solve_point`` (L = 2, r = 1 only); other models return
    ``{"available": False}``. This is the one place to swap in a general engine.
    """
    from .theory.routing import is_small
    if not is_small(params):
        return {"available": False, "branch": branch,
                "reason": "theory engine covers L = 2, r = r* = 1, P = ±(1, -1)ᵀ"}
    from .theory.finite_size import solution_record
    from .theory.solver import solve_point
    sol = solve_point(params, alpha, branch=branch)
    rec = solution_record(sol, 1000)            # the coefficients do not depend on d
    return {"available": True, "branch": branch, "converged": bool(sol.converged), "status": sol.status,
            "stable": sol.stable, "m": abs(sol.m), "theta_over_sigma2": abs(sol.theta) / params.sigma ** 2,
            "q": sol.q, "e_t": sol.e_t, "eps_g": sol.eps_g,
            **{k: rec[k] for k in ("eps_g_coef", "eps_g_coef_err", "e_t_coef", "e_t_coef_err")}}


@dataclass
class ScalingResult:
    """Per-d summaries, the 1/d fits and the theory's branch (JSON via :meth:`to_dict`)."""

    params: ModelParams
    alpha: float
    init: str
    ds: list[int]
    instances: int
    per_d: list[dict[str, Any]]
    fits: dict[str, InverseDFit]
    theory: dict[str, Any]
    provenance: dict[str, Any] = field(default_factory=dict)

    def table(self) -> list[dict[str, Any]]:
        """One row per observable: extrapolation ± s.e., theory, difference in s.e. units."""
        rows = []
        for k in OBSERVABLES:
            f = self.fits[k]
            th = self.theory.get(k) if self.theory.get("available") else None
            z = (f.intercept - th) / f.intercept_se if th is not None and f.intercept_se > 0 else None
            pred = self.theory.get(f"{k}_coef") if th is not None else None
            rows.append(dict(observable=k, extrapolation=f.intercept, se=f.intercept_se, slope=f.slope,
                             chi2=f.chi2, dof=f.dof, theory=th, z=z,
                             rel_diff=None if th in (None, 0) else (f.intercept - th) / abs(th),
                             predicted_slope=pred))
        return rows

    def to_dict(self) -> dict[str, Any]:
        return dict(params=self.params.to_dict(), alpha=self.alpha, init=self.init, ds=self.ds,
                    instances=self.instances, per_d=self.per_d, fits={k: v.to_dict() for k, v in self.fits.items()},
                    theory=self.theory, table=self.table(), provenance=self.provenance)


def run_scaling(params: ModelParams, *, alpha: float, init: str, ds: Sequence[int], instances: int,
                config=None, seed: int = 0, theory: bool = True,
                progress: Callable[[str], None] | None = None) -> ScalingResult:
    """Train ``instances`` students at each ``d`` in ``ds`` (L-BFGS to convergence by default), summarise,
    fit in 1/d and attach the theory's branch of ``init`` (for ``init="random"``: the lower-e_t branch)."""
    from .provenance import provenance
    from .simulate import TrainConfig, simulate
    ds = sorted({check_int("ds", d, 2) for d in ds})
    if len(ds) < 2:
        raise ParameterError("ds", "at least two distinct dimensions", ds)
    instances = check_int("instances", instances, 2)
    config = TrainConfig(init=init, optimizer="lbfgs") if config is None else config
    per_d, runs = [], []
    for d in ds:
        if progress:
            progress(f"d = {d}: {instances} instances")
        r = simulate(params, alpha=alpha, d=d, config=config, instances=instances, seed=seed)
        s = r.summary()
        per_d.append(dict(d=d, **{k: s[k]["mean"] for k in OBSERVABLES}, **{k + "_sem": s[k]["sem"] for k in OBSERVABLES},
                          converged=int(r.converged.sum()), status=sorted(set(r.status.tolist()))))
        runs.append(r.provenance)
    fits = {k: fit_inverse_d(ds, [p[k] for p in per_d], [p[k + "_sem"] for p in per_d]) for k in OBSERVABLES}
    th: dict[str, Any] = {"available": False}
    if theory:
        if progress:
            progress("theory")
        if init in BRANCH_OF_INIT:
            th = theory_point(params, alpha, BRANCH_OF_INIT[init])
        else:
            cands = [theory_point(params, alpha, b) for b in ("semantic", "positional")]
            cands = [c for c in cands if c.get("available") and c.get("converged")]
            th = min(cands, key=lambda c: c["e_t"]) if cands else {"available": False}
    prov = provenance(dict(params=params.to_dict(), alpha=alpha, init=init, ds=ds, instances=instances, seed=seed,
                           config=config.to_dict()), simulate_runs=runs,
                      fit="weighted least squares y = a + b/d, weights 1/sem^2, s.e. inflated by sqrt(chi2/dof) if > 1")
    return ScalingResult(params, float(alpha), init, ds, instances, per_d, fits, th, prov)


def plot_scaling(result: ScalingResult, path) -> None:
    """One panel per observable: mean ± s.e. against 1/d, the fitted line, the extrapolation at 1/d = 0
    (± s.e.) and the theory's branch (star)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    labels = {"m": "|m|", "theta_over_sigma2": "θ/σ²", "q": "q", "e_t": "e_t", "eps_g": "ε_g"}
    fig, axes = plt.subplots(1, len(OBSERVABLES), figsize=(3.2 * len(OBSERVABLES), 3.0))
    x = np.array([1.0 / p["d"] for p in result.per_d])
    xx = np.linspace(0.0, x.max() * 1.05, 50)
    for ax, k in zip(axes, OBSERVABLES):
        y = [p[k] for p in result.per_d]
        e = [p[k + "_sem"] for p in result.per_d]
        f = result.fits[k]
        ax.errorbar(x, y, yerr=e, fmt="o", color="C0", ms=4, capsize=2, label="finite d")
        ax.plot(xx, f.intercept + f.slope * xx, "-", color="C0", lw=1)
        ax.errorbar([0.0], [f.intercept], yerr=[f.intercept_se], fmt="s", color="C1", ms=5, capsize=3,
                    label="1/d → 0")
        if result.theory.get("available") and result.theory.get(k) is not None:
            ax.plot([0.0], [result.theory[k]], "*", color="k", ms=10, label=f"theory ({result.theory['branch']})")
            if result.theory.get(f"{k}_coef") is not None:       # theory at dimension d (theory.finite_size)
                ax.plot(xx, result.theory[k] + result.theory[f"{k}_coef"] * xx, ":", color="k", lw=1,
                        label="theory + O(1/d)" if k == "e_t" else None)
        ax.set_xlabel("1/d")
        ax.set_title(labels[k])
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    axes[0].legend(fontsize=7)
    p = result.params
    fig.suptitle(f"finite-size scaling: α = {result.alpha:g}, ω = {p.omega:g}, init = {result.init}, "
                 f"{result.instances} instances per d", fontsize=10)
    fig.tight_layout()
    from .outputs import save_figure_atomic
    save_figure_atomic(fig, path, dpi=120)
    plt.close(fig)
