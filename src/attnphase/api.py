"""The notebook API: keyword-friendly entry points with results that carry ``.to_frame()`` and provenance.

Everything here is reachable from the top level (``attnphase.simulate``, ``attnphase.solve`` …) and imported
lazily, so ``import attnphase`` stays fast. Model parameters are keywords with the paper's defaults
(MODEL.md §1–§4): ``L=2, r=1, r_star=1, sigma=0.5, lam=0.01, omega=0.3``, ``A`` and ``P`` as nested lists
(default ``A = [[0.6, 0.4], [0.4, 0.6]]`` for L = 2, uniform otherwise) — or pass ``params=ModelParams(...)``.

>>> import attnphase
>>> res = attnphase.simulate(alpha=1.0, d=20, steps=20, instances=2, test_samples=200)
>>> res.to_frame()[["instance", "m", "theta_over_sigma2", "e_t"]].shape
(2, 4)
>>> sorted(res.provenance)[:2]
['config', 'config_hash']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .model import ModelParams


def model(*, L: int = 2, r: int = 1, r_star: int = 1, sigma: float = 0.5, lam: float = 0.01, omega: float = 0.3,
          A: Sequence[Sequence[float]] | None = None, P: Sequence[Sequence[float]] | None = None) -> ModelParams:
    """Validated :class:`ModelParams` from keywords (``A`` defaults to the paper's for L = 2, uniform otherwise).

    >>> model(L=3).A[0]
    (0.3333333333333333, 0.3333333333333333, 0.3333333333333333)
    """
    from .guards import check_model_size
    L, r, r_star = check_model_size(L, r, r_star)      # before the default L x L matrix is built
    kw: dict[str, Any] = dict(L=L, r=r, r_star=r_star, sigma=sigma, lam=lam, omega=omega, P=P)
    if A is not None:
        kw["A"] = A
    elif L != 2:
        kw["A"] = [[1.0 / L] * L for _ in range(L)]
    return ModelParams(**kw)


def _params(params: ModelParams | None, kw: dict[str, Any]) -> ModelParams:
    return model(**kw) if params is None else params.replace(**kw) if kw else params


_MODEL_KEYS = ("L", "r", "r_star", "sigma", "lam", "omega", "A", "P")


def _params_from(params: ModelParams | None, kw: dict[str, Any]) -> ModelParams:
    """The model of a call: ``params`` (or the defaults) with the model keywords popped out of ``kw``; what is
    left in ``kw`` are the options of the computation."""
    return _params(params, {k: kw.pop(k) for k in list(kw) if k in _MODEL_KEYS})


@dataclass
class Result:
    """A computed result for notebooks: the underlying object (``value``), a tidy table (:meth:`to_frame`),
    a JSON-able dict (:meth:`to_dict`) and :attr:`provenance` (parameters, versions, git commit + dirty flag,
    resolution/integrator, convergence). Attributes of ``value`` are readable directly (``res.alpha_c``)."""

    kind: str
    value: Any
    table: Any = None                       # pandas.DataFrame, built on demand when None
    provenance: dict[str, Any] = field(default_factory=dict)
    finite_d: Any = None                    # solve/curve with d=: the O(1/d) record(s), see with_finite_d

    def to_frame(self):
        import pandas as pd
        if self.table is not None:
            return self.table.copy()
        d = self.to_dict()
        return pd.DataFrame([{k: v for k, v in d.items() if not isinstance(v, (dict, list))}])

    def to_dict(self) -> dict[str, Any]:
        base = self.value.to_dict() if hasattr(self.value, "to_dict") else dict(vars(self.value))
        extra = {} if self.finite_d is None else {"finite_d": self.finite_d}
        return {**base, **extra, "provenance": self.provenance}

    def __getattr__(self, name: str) -> Any:
        if name in ("kind", "value", "table", "provenance", "finite_d") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.value, name)

    def __repr__(self) -> str:
        return f"Result({self.kind}: {self.value!r})"


def _prov(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    from .provenance import provenance, stamp
    return provenance(config, **stamp(), **extra)


def simulate(alpha: float = 2.0, d: int = 200, *, params: ModelParams | None = None, init: str = "semantic",
             optimizer: str = "gd", lr: float = 0.15, steps: int = 5000, gtol: float = 1e-6,
             max_iter: int = 2000, warmup_steps: int = 300, x64: bool = False, instances: int = 4, seed: int = 0,
             test_samples: int = 50_000, **model_kw: Any):
    """Train the attention student at finite d (MODEL.md §4); returns a
    :class:`attnphase.simulate.SimulationResult` (per-instance arrays, ``.summary()``, ``.to_frame()``,
    ``.to_dict()``, ``.provenance``).

    >>> r = simulate(alpha=1.0, d=16, L=3, r=2, steps=10, instances=1, test_samples=100)
    >>> r.params.L, r.to_frame().shape[0]
    (3, 1)
    """
    from .guards import check_simulation
    from .simulate import TrainConfig, simulate as run
    p = _params(params, model_kw)
    cfg = TrainConfig(init=init, optimizer=optimizer, lr=lr, steps=steps, gtol=gtol, max_iter=max_iter,
                      warmup_steps=warmup_steps, x64=x64)
    check_simulation(p.L, p.r, p.r_star, p.k, alpha=alpha, d=d, instances=instances, seed=seed, steps=steps,
                     max_iter=max_iter, warmup_steps=warmup_steps, test_samples=test_samples, x64=x64)
    return run(p, alpha=alpha, d=d, config=cfg, instances=instances, seed=seed, test_samples=test_samples)


def solve(alpha: float, branch: str = "semantic", *, params: ModelParams | None = None, nodes: int | None = None,
          integrator: str = "auto", qmc_config: Any = None, d: int | None = None, **kw: Any) -> Result:
    """One fixed point of the asymptotic equations on ``branch``, by :func:`attnphase.theory.solve.solve` (the
    one solve): ``integrator="auto"`` is the split-line rule of MODEL.md §6 for L = 2, r = r* = 1,
    P = ±(1, -1)ᵀ, the QMC engine of §8 otherwise (``qmc_config`` a
    :class:`~attnphase.theory.engine.QMCConfig`, default its error-controlled rule). ``Result`` wraps one
    :class:`attnphase.theory.Solution` either way: ``res.q``, ``res.converged``, ``res.status``, ``res.errors``
    (QMC's standard errors; ``*_err`` columns of ``to_frame()``). A cold split-rule start at large α is
    continued up from α = 2 where it fails (``solve_point(continuation=True)``).

    >>> s = solve(2.0, "semantic", omega=0.3, nodes=4)          # doctest: +SKIP
    >>> s.converged, round(s.theta, 2)                          # doctest: +SKIP
    (True, 0.16)

    ``d``: also ε_g and e_t at that dimension (:func:`with_finite_d`).
    """
    if d is not None:
        return with_finite_d(lambda: solve(alpha, branch, params=params, nodes=nodes, integrator=integrator,
                                           qmc_config=qmc_config, **kw), d)
    from .theory.solution import solution_table
    from .theory.solve import choose, solve as run
    p = _params_from(params, kw)
    _check_sizes(p, qmc_config, 1)
    how = choose(p, integrator, nodes=nodes, qmc_config=qmc_config)
    cfg = _qmc_config(how, qmc_config)
    opts = kw if how == "qmc" else {"continuation": True, **kw}
    sol = run(p, [alpha], branch, integrator=how, nodes=nodes, qmc_config=cfg, **opts)[0]
    prov = _prov(dict(params=p.to_dict(), alpha=alpha, branch=branch, nodes=None if how == "qmc" else sol.nodes,
                      options=kw),
                 integrator=_integrator_record(how, sol.nodes, cfg),
                 convergence=dict(converged=bool(sol.converged), status=sol.status.value, note=sol.note,
                                  residual=sol.residual, iterations=sol.iterations, start=sol.start))
    return Result("theory point", sol, solution_table([sol]).assign(converged=bool(sol.converged)), prov)


def _check_sizes(p: ModelParams, qmc_config: Any, alphas: int) -> None:
    """The theory's size limits (:func:`attnphase.guards.check_theory`) before any work."""
    from .guards import check_theory
    check_theory(p, getattr(qmc_config, "points", None), getattr(qmc_config, "scrambles", None), alphas)


def _qmc_config(how: str, qmc_config: Any) -> Any:
    """The QMC size of a call (its default: the engine's error-controlled rule); None for the split rule."""
    if how != "qmc":
        return None
    from .theory.qmc_config import QMCConfig
    return qmc_config or QMCConfig.default()


def _integrator_record(how: str, nodes: int | None, cfg: Any) -> dict[str, Any]:
    if how != "qmc":
        return dict(rule=how, nodes=nodes)
    return dict(rule="qmc", qmc_points=cfg.points, scrambles=cfg.scrambles, seeds=list(cfg.seeds),
                qmc_target=cfg.target)


def curve(alphas: Sequence[float], branch: str = "semantic", *, params: ModelParams | None = None,
          nodes: int | None = None, integrator: str = "auto", qmc_config: Any = None, d: int | None = None,
          **kw: Any) -> Result:
    """A branch along ``alphas``; ``to_frame()`` is one row per α (unconverged points kept,
    ``converged = False``). L = 2, r = r* = 1, P = ±(1, -1)ᵀ (``integrator="auto"``/``"split"``/``"product"``):
    continuation (:func:`attnphase.phase.follow_branch` on the one-point form of
    :func:`attnphase.theory.solve.solve`); otherwise (or ``"qmc"``) all α in one batch of that solve.
    ``d``: also ε_g and e_t at that dimension (:func:`with_finite_d`)."""
    if d is not None:
        return with_finite_d(lambda: curve(alphas, branch, params=params, nodes=nodes, integrator=integrator,
                                           qmc_config=qmc_config, **kw), d)
    from .guards import check_grid
    from .phase import branch_table, follow_branch
    from .theory.solution import solution_table
    from .theory.solve import choose, point_solver, solve as run
    check_grid("alphas", len(alphas), len(alphas))
    p = _params_from(params, kw)
    _check_sizes(p, qmc_config, len(alphas))
    how = choose(p, integrator, nodes=nodes, qmc_config=qmc_config)
    al = [float(a) for a in alphas]
    if how == "qmc":
        cfg = _qmc_config(how, qmc_config)
        sols = run(p, al, branch, integrator="qmc", qmc_config=cfg, **kw)
        prov = _prov(dict(params=p.to_dict(), alphas=al, branch=branch, options=kw),
                     integrator=_integrator_record(how, None, cfg),
                     convergence=dict(all_converged=all(s.converged for s in sols),
                                      statuses=[s.status.value for s in sols], starts=[s.start for s in sols]))
        return Result("theory curve", sols, solution_table(sols), prov)
    sols = follow_branch(p, al, branch, nodes=nodes, solver=point_solver(p, how), **kw)
    table = branch_table(sols)
    prov = _prov(dict(params=p.to_dict(), alphas=al, branch=branch, nodes=nodes, options=kw),
                 integrator=_integrator_record(how, nodes, None),
                 convergence=dict(all_converged=bool(table["converged"].all()),
                                  unconverged_alphas=[float(a) for a in table.loc[~table["converged"], "alpha"]],
                                  states=table["state"].value_counts().to_dict()))
    return Result("theory curve", sols, table, prov)


def with_finite_d(res: "Result | Callable[[], Result]", d: int) -> Result:
    """``res`` (a ``solve`` or ``curve`` result, or a function computing it, called after ``d`` is checked) with ε_g and e_t at dimension ``d`` next to the d → ∞ values:
    the columns of :data:`attnphase.theory.finite_size.COLUMNS` added to ``to_frame()`` (``eps_g_at_d``,
    ``e_t_at_d`` with errors, the coefficients ``eps_g_coef``, ``e_t_coef``), ``res.finite_d`` (the record, a
    list for a curve) and ``provenance["finite_d"]`` (what was applied). ``d`` is checked first (an integer
    in [2, 1e9])."""
    import pandas as pd

    from .theory.finite_size import APPLIED, check_dimension, solution_record
    d = check_dimension(d)
    res = res() if callable(res) else res
    many = isinstance(res.value, list) or hasattr(res.value, "points")     # a QMC list or a followed Branch
    sols = [getattr(s, "solution", s) for s in (res.value if many else [res.value])]
    recs = [solution_record(s, d) for s in sols]
    extra = pd.DataFrame([{"alpha": float(s.alpha), **r} for s, r in zip(sols, recs)])
    table = res.to_frame()
    table = table.assign(alpha=table["alpha"].astype(float)).merge(extra, on="alpha", how="left")
    prov = {**res.provenance, "finite_d": {"d": d, "applied": APPLIED}}
    return Result(res.kind, res.value, table, prov, recs if many else recs[0])


def transition(*, params: ModelParams | None = None, **kw: Any) -> Result:
    """α_c, α_l, ε_lin, spinodals and the mixed-point search at one (ω, σ, λ, A) (MODEL.md §6); ``Result``
    wraps :class:`attnphase.phase.TransitionResult` (``res.alpha_c`` …); ``to_frame()`` is the global table."""
    from .phase import transition as run
    p = _params_from(params, kw)
    res = run(p, **kw)
    prov = {**(getattr(res, "provenance", None) or {}), **_prov(dict(params=p.to_dict(), options=kw))}
    table = getattr(res, "global_table", None)
    return Result("transition", res, table, prov)


def phase_diagram(omegas: Sequence[float], alphas: Sequence[float], *, params: ModelParams | None = None,
                  **kw: Any) -> Result:
    """The (α, ω) phase diagram (continuation in α and ω); ``to_frame()`` is the grid, ``res.lines`` the
    α_c(ω), α_l(ω) table."""
    from .guards import check_grid
    from .phase import phase_diagram as run
    check_grid("alphas × omegas", len(alphas) * len(omegas), len(alphas) * len(omegas))
    p = _params_from(params, kw)
    out = run(p, [float(w) for w in omegas], [float(a) for a in alphas], **kw)
    grid, lines = out[0], out[1]
    prov = _prov(dict(params=p.to_dict(), omegas=[float(w) for w in omegas], alphas=[float(a) for a in alphas],
                      options=kw))
    return Result("phase diagram", _Diagram(grid, lines), grid, prov)


@dataclass
class _Diagram:
    grid: Any
    lines: Any

    def to_dict(self) -> dict[str, Any]:
        return {"grid": self.grid.to_dict(orient="records"), "lines": self.lines.to_dict(orient="records")}


def baseline(*, params: ModelParams | None = None, nodes: int = 80, **model_kw: Any) -> Result:
    """Population error ε_lin of the optimal linear positional baseline (MODEL.md §5).

    >>> round(baseline(omega=0.3).eps_lin, 6)
    0.001971
    """
    from .baseline import eps_lin
    from .guards import baseline_bytes, check_memory
    p = _params(params, model_kw)
    check_memory("nodes", nodes, baseline_bytes(p.L, p.r_star, nodes, 400_000), f"the baseline at L={p.L}")
    e = float(eps_lin(p, nodes=nodes))
    method = "Gauss-Hermite product rule" if (p.L == 2 and p.r_star == 1) else "Monte Carlo (seed 0)"
    prov = _prov(dict(params=p.to_dict(), nodes=nodes), integrator=dict(method=method, nodes=nodes))
    return Result("baseline", _Baseline(p, e), None, prov)


@dataclass
class _Baseline:
    params: ModelParams
    eps_lin: float

    def to_dict(self) -> dict[str, Any]:
        return {"eps_lin": self.eps_lin, **{k: v for k, v in self.params.to_dict().items()}}
