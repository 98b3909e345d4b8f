"""One solve for every model (MODEL.md §6, §8): ``solve(params, alphas, branch, integrator="auto", start=…)``
returns one :class:`~.solution.Solution` per α whatever the integrator, and :func:`choose` is the one place
where ``auto`` is resolved (the split rule at L = 2, r = r* = 1, P = ±(1, −1)ᵀ; the QMC engine elsewhere).

:func:`point_solver` gives the same solve in the one-point form ``phase/`` calls (``PointSolver``): the
continuation in α, the transition and the diagram work on it for every integrator.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from ..errors import ParameterError
from ..model import ModelParams
from .routing import choose_integrator
from .solution import Solution, from_general, scalar_state, state_of
from .state import OrderParams


def choose(params: ModelParams, integrator: str = "auto", *, nodes: int | None = None,
           qmc_config: Any = None, rule: str | None = None, name: str = "integrator") -> str:
    """The integrator that solves ``params`` (``split``, ``product`` or ``qmc``), refusing the other one's knob:
    ``nodes`` is the split/product rule's resolution, ``qmc_config`` the engine's (MODEL.md §6 vs §8); ``rule``
    is the split/product choice ``auto`` takes where the split rule applies. The one place ``auto`` is
    resolved (api, cli and phase/ call it)."""
    how = choose_integrator(params, integrator, rule, name=name)
    if how == "qmc" and nodes is not None:
        raise ParameterError("nodes", "unset with the QMC engine (L != 2, r != 1, r* != 1, P != ±(1, -1)ᵀ or "
                             "integrator='qmc'); its resolution is qmc_config", nodes)
    if how != "qmc" and qmc_config is not None:
        raise ParameterError("qmc_config", "unset with the split or product rule (its resolution is nodes)",
                             qmc_config)
    return how


def _split_init(start, branch: str):
    """A start for the split rule (its scalars, signs kept): a Solution, an OrderParams (1 × 1 blocks) or any
    object with q, m, V, θ."""
    if start is None:
        return None
    x = start if isinstance(start, OrderParams) else state_of(start)
    q, m, th, V = (float(np.asarray(b).reshape(-1)[0]) for b in x)
    return SimpleNamespace(q=q, m=m, V=V, theta=th, branch=branch)


def _qmc_init(start, params: ModelParams):
    """A start for the engine: an OrderParams of the model's shapes (a scalar start only at r = k = r* = 1)."""
    if start is None:
        return None
    x = start if isinstance(start, OrderParams) else state_of(start)
    shapes = ((params.r, params.r), (params.r, params.k), (params.r, params.r_star), (params.r, params.r))
    if tuple(np.shape(b) for b in x) != shapes:
        raise ParameterError("start", f"a state with blocks of shapes q, M, θ, V = {shapes}",
                             [np.shape(b) for b in x])
    return OrderParams(*(np.asarray(b, float) for b in x))


def solve(params: ModelParams, alphas: Sequence[float] | float, branch: str = "semantic", *,
          integrator: str = "auto", start=None, nodes: int | None = None, qmc_config: Any = None,
          rtol: float = 1e-5, max_steps: int | None = None, stability: bool = True, **options: Any
          ) -> list[Solution]:
    """Fixed points of ``branch`` at each α (MODEL.md §6 for the split/product rule, §8 for QMC).

    ``start``: None (the model's start), one state (:class:`OrderParams`, a :class:`Solution`) for all α, or one
    per α. ``nodes``: the split/product rule's outer order; ``qmc_config``: the engine's ``QMCConfig``.
    ``max_steps``: None keeps each integrator's default. Other ``options`` go to the integrator
    (``solve_point`` or ``engine.solve_batch``). Returns one :class:`Solution` per α, each with its status."""
    how = choose(params, integrator, nodes=nodes, qmc_config=qmc_config)
    al = [float(a) for a in np.atleast_1d(np.asarray(alphas, float))]
    starts = list(start) if isinstance(start, (list, tuple)) and start and not isinstance(start, OrderParams) \
        else [start] * len(al)
    if len(starts) != len(al):
        raise ParameterError("start", f"one state or {len(al)} of them", len(starts))
    steps = {} if max_steps is None else dict(max_steps=int(max_steps))
    if how == "qmc":
        from .engine import QMCConfig, solve_batch
        cfg = qmc_config if qmc_config is not None else QMCConfig.default()
        inits = [_qmc_init(s, params) for s in starts]
        init = None if all(i is None for i in inits) else inits
        if init is not None and any(i is None for i in inits):
            raise ParameterError("start", "a state for every α or for none (the engine batches them)", starts)
        sols = solve_batch(params, al, branch, init=init, qmc_config=cfg, rtol=rtol, stability=stability,
                           **steps, **options)
        return [from_general(s) for s in sols]
    from .solver import solve_point
    return [solve_point(params, a, branch, nodes=nodes, rule=how, rtol=rtol, init=_split_init(s, branch),
                        stability=stability, **steps, **options) for a, s in zip(al, starts)]


@dataclass(frozen=True)
class PointSolverFor:
    """The one-point solve ``phase/`` calls (``PointSolver``): ``(params, alpha, branch, *, nodes, init,
    max_steps, stability, rtol, stability_nodes) -> Solution`` on one integrator. ``nodes`` is the split rule's
    resolution (ignored by QMC, whose resolution is ``qmc_config``); ``min_steps``: the engine's cap on a cold
    start (a continuation's 60 steps are for warm starts; the QMC map's cold start needs ~20–100)."""

    integrator: str
    qmc_config: Any = None
    min_steps: int = 200

    def __call__(self, params: ModelParams, alpha: float, branch: str, *, nodes: int | None = None, init=None,
                 max_steps: int = 300, stability: bool = True, rtol: float = 1e-5,
                 stability_nodes: int | None = None, **options: Any) -> Solution:
        if self.integrator == "qmc":
            steps = max_steps if init is not None else max(max_steps, self.min_steps)
            x = None if init is None else _qmc_state(init, params, branch)
            return solve(params, [alpha], branch, integrator="qmc", start=x, qmc_config=self.qmc_config,
                         rtol=rtol, max_steps=steps, stability=stability and branch != "free", **options)[0]
        extra = {} if stability_nodes is None else dict(stability_nodes=stability_nodes)
        return solve(params, [alpha], branch, integrator=self.integrator, start=init, nodes=nodes, rtol=rtol,
                     max_steps=max_steps, stability=stability, **extra, **options)[0]


def _qmc_state(init, params: ModelParams, branch: str) -> OrderParams | None:
    """A start for the engine from a state or a scalar namespace: where only scalars (q, m, V, θ) are known (a
    kicked saddle of the survey), q, V are spread over the r directions and m, θ put on the first one."""
    x = getattr(init, "x", None)
    if isinstance(init, OrderParams):
        x = init
    if isinstance(x, OrderParams) and tuple(np.shape(x.M)) == (params.r, params.k) \
            and tuple(np.shape(x.theta)) == (params.r, params.r_star):
        return OrderParams(*(np.asarray(b, float) for b in x))
    r, k, rs = params.r, params.k, params.r_star
    q, m, V, th = (float(getattr(init, n)) for n in ("q", "m", "V", "theta"))
    if not all(np.isfinite([q, m, V, th])):
        return None
    M = np.zeros((r, k))
    M[0] = m / np.sqrt(k)
    T = np.zeros((r, rs))
    T[0, 0] = th
    return OrderParams(np.eye(r) * q / r, M, T, np.eye(r) * V / r)


def point_solver(params: ModelParams, integrator: str = "auto", *, qmc_config: Any = None) -> PointSolverFor:
    """The one-point solver of ``params`` on the integrator :func:`choose` picks."""
    return PointSolverFor(choose(params, integrator, qmc_config=qmc_config), qmc_config)


__all__ = ["choose", "solve", "point_solver", "PointSolverFor", "Solution", "scalar_state"]
