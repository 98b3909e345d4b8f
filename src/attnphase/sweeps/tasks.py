"""Task kinds of a sweep: ``simulate``, ``theory``, ``baseline`` (and any registered with :func:`register_kind`).

A *task* is one JSON-able configuration dict (see :mod:`.spec`); its *runner* returns a JSON-able result
dict ``{"scalars": {...}, "per_instance": {name: [..]}, "converged": bool, "provenance": {...}}``.
The heavy modules (:mod:`attnphase.simulate`, :mod:`attnphase.theory`, :mod:`attnphase.baseline`) are
imported lazily inside the runners, so a sweep file can be validated without them.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ParameterError, check_int, check_range
from ..jsonable import to_jsonable

MODEL_KEYS = ("L", "r", "r_star", "sigma", "lam", "omega", "A", "P")
"""Parameters of :class:`attnphase.model.ModelParams` accepted by every kind that takes a model."""

Validator = Callable[[str, Any], Any]


def _pos_float(name: str, v: Any) -> float:
    _num(name, v)
    return check_range(name, v, lo=0.0, lo_open=True)


def _nonneg_float(name: str, v: Any) -> float:
    _num(name, v)
    return check_range(name, v, lo=0.0)


def _num(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ParameterError(name, "a number", v)


def _int_ge(lo: int) -> Validator:
    def check(name: str, v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ParameterError(name, f"an integer >= {lo}", v)
        return check_int(name, v, lo)
    return check


def _choice(*allowed: str) -> Validator:
    def check(name: str, v: Any) -> str:
        if v not in allowed:
            raise ParameterError(name, f"one of {{{', '.join(allowed)}}}", v)
        return v
    return check


def _bool(name: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ParameterError(name, "true or false", v)
    return v


def _opt(check: Validator) -> Validator:
    return lambda name, v: None if v is None else check(name, v)


@dataclass
class TaskKind:
    """A registered kind: its runner, its own parameters (name -> validator) and defaults."""

    name: str
    runner: Callable[[dict[str, Any]], dict[str, Any]]
    params: dict[str, Validator] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    model: bool = True          # accepts the ModelParams keys
    seeded: bool = True         # takes `seed`
    instanced: bool = False     # takes `instances` (batched in one call by the runner)
    validate: Callable[[dict[str, Any]], None] | None = None   # extra checks of a whole task (no work done)


REGISTRY: dict[str, TaskKind] = {}


def register_kind(kind: TaskKind) -> TaskKind:
    """Register (or replace) a task kind; returns it. Used for the built-ins and by tests."""
    REGISTRY[kind.name] = kind
    return kind


def get_kind(name: Any) -> TaskKind:
    if name not in REGISTRY:
        raise ParameterError("kind", f"one of {{{', '.join(sorted(REGISTRY))}}}", name)
    return REGISTRY[name]


def model_params(cfg: dict[str, Any]):
    from ..model import ModelParams
    return ModelParams(**{k: cfg["model"][k] for k in MODEL_KEYS if k in cfg["model"]})


# ---------------------------------------------------------------------------------------------------
# Built-in runners


def _arr(x: Any) -> list:
    import numpy as np
    return np.asarray(x).reshape(-1).tolist()


def validate_simulate(cfg: dict[str, Any]) -> None:
    """The checks :func:`attnphase.simulate.simulate` makes, and its memory guard, without training."""
    from ..guards import check_simulation
    from ..simulate import TrainConfig
    p, params = cfg["params"], model_params(cfg)
    tc_keys = ("init", "optimizer", "lr", "steps", "gtol", "max_iter", "warmup_steps", "x64")
    TrainConfig(**{k: p[k] for k in tc_keys if k in p and p[k] is not None})
    check_simulation(params.L, params.r, params.r_star, params.k, alpha=p["alpha"], d=p["d"],
                     instances=cfg.get("instances") or 1, seed=cfg.get("seed") or 0,
                     test_samples=p.get("test_samples", 1), x64=bool(p.get("x64")))


def validate_theory(cfg: dict[str, Any]) -> None:
    """The checks of :func:`attnphase.theory.solve_point` (supported L, r, r*, nodes, branch), without solving."""
    from ..theory import solver
    from ..theory.solver import DEFAULT_NODES
    p = cfg["params"]
    nodes = DEFAULT_NODES if p.get("nodes") is None else p["nodes"]
    check = getattr(solver, "validate_point", None) or solver._validate
    from ..guards import check_theory
    check_theory(model_params(cfg))
    check(model_params(cfg), p["alpha"], p["branch"], nodes, p.get("rule", "split"))


def validate_baseline(cfg: dict[str, Any]) -> None:
    from ..guards import baseline_bytes, check_memory
    params = model_params(cfg)
    check_memory("L", params.L, baseline_bytes(params.L, params.r_star, 80, 400_000),
                 f"the linear baseline at L={params.L}")


def run_simulate(cfg: dict[str, Any]) -> dict[str, Any]:
    from ..simulate import TrainConfig, simulate  # lazy: developed in parallel
    p = cfg["params"]
    tc_keys = ("init", "optimizer", "lr", "steps", "gtol", "max_iter", "warmup_steps", "x64")
    tc = TrainConfig(**{k: p[k] for k in tc_keys if k in p and p[k] is not None})
    res = simulate(model_params(cfg), alpha=p["alpha"], d=p["d"], config=tc,
                   instances=cfg.get("instances", 1), seed=cfg["seed"],
                   test_samples=p.get("test_samples", 50_000))
    names = ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm",
             "iterations", "converged")
    per = {n: _arr(getattr(res, n)) for n in names if hasattr(res, n)}
    per = {n: [bool(v) for v in vals] if n == "converged" else vals for n, vals in per.items()}
    conv = all(per.get("converged", [True]))
    return {"scalars": {}, "per_instance": per, "converged": conv,
            "provenance": getattr(res, "provenance", None)}


def run_theory(cfg: dict[str, Any]) -> dict[str, Any]:
    from ..theory import solve_point  # lazy: developed in parallel
    p = cfg["params"]
    sol = solve_point(model_params(cfg), p["alpha"], p["branch"], nodes=p.get("nodes"))
    d = sol.to_dict() if hasattr(sol, "to_dict") else dict(vars(sol))
    scalars = {("solver_status" if k == "status" else k): v for k, v in d.items() if _scalar(v)}
    return {"scalars": scalars, "per_instance": {}, "converged": bool(sol.converged),
            "provenance": d.get("provenance")}


def run_baseline(cfg: dict[str, Any]) -> dict[str, Any]:
    try:
        from ..baseline import eps_lin  # lazy: developed in parallel
        source = "attnphase.baseline.eps_lin"
    except ImportError:
        from ..theory import eps_lin  # same population optimum (MODEL.md §5), by quadrature
        source = "attnphase.theory.eps_lin"
    return {"scalars": {"eps_lin": float(eps_lin(model_params(cfg))), "source": source},
            "per_instance": {}, "converged": True, "provenance": None}


def _scalar(v: Any) -> bool:
    if isinstance(v, (bool, int, float, str)) or v is None:
        return True
    try:
        import numpy as np
        return np.ndim(v) == 0 and np.asarray(v).dtype.kind in "biuf"
    except Exception:  # noqa: BLE001
        return False


register_kind(TaskKind(
    "simulate", run_simulate, instanced=True, validate=validate_simulate,
    params={"alpha": _pos_float, "d": _int_ge(1), "init": _choice("semantic", "positional", "random"),
            "optimizer": _choice("gd", "lbfgs"), "lr": _pos_float, "steps": _int_ge(0),
            "gtol": _opt(_pos_float), "max_iter": _opt(_int_ge(1)), "warmup_steps": _opt(_int_ge(0)),
            "x64": _bool, "test_samples": _int_ge(1)},
    defaults={"init": "semantic", "optimizer": "gd", "lr": 0.15, "steps": 5000, "x64": False,
              "test_samples": 50_000},
))
register_kind(TaskKind(
    "theory", run_theory, seeded=False, validate=validate_theory,
    params={"alpha": _pos_float, "branch": _choice("semantic", "positional", "uninformative", "free"),
            "nodes": _opt(_int_ge(2))},
    defaults={"branch": "semantic"},
))
register_kind(TaskKind("baseline", run_baseline, seeded=False, validate=validate_baseline))


# ---------------------------------------------------------------------------------------------------


def execute(cfg: dict[str, Any]) -> dict[str, Any]:
    """Run one task; never raises. Returns ``{"key", "status", "result", "error", "wall_s", ...}``.

    Module-level so that process pools and Dask workers can pickle it by reference.
    """
    from .. import provenance as prov
    from ..compiled_programs import release_if_crowded
    t0 = time.perf_counter()
    try:
        res = get_kind(cfg["kind"]).runner(cfg)
        status, error = "done", None
    except Exception as exc:  # noqa: BLE001 -- recorded in the store, retried on request
        res, status = None, "failed"
        error = f"{type(exc).__name__}: {exc}\n" + traceback.format_exc(limit=8)
    wall = time.perf_counter() - t0
    release_if_crowded()        # a worker meets many shapes: keep its compiled programs under the mapping limit
    conv = None if res is None else res.get("converged")
    inner = None if res is None else res.pop("provenance", None)
    provenance = {"git": prov.git_hash(), "wall_s": wall, "converged": conv,
                  "environment": _env_safe(), "runner": _clean(inner)}
    return {"key": cfg["key"], "status": status, "result": _clean(res), "error": error,
            "wall_s": wall, "converged": conv, "provenance": provenance}


def _env_safe() -> dict[str, Any] | None:
    try:
        from ..provenance import environment
        return environment()
    except Exception:  # noqa: BLE001
        return None


def _clean(obj: Any) -> Any:
    """JSON-able copy for the store: numpy/JAX to Python, non-finite floats to None, other objects to str."""
    return to_jsonable(obj, store=True)
