"""Finite-d training of the tied low-rank attention student (MODEL.md §2, §4).

Normalisation (checked against ``reference/gd_d1000_omega0.3.csv``): the optimised objective is the
summed empirical risk ``R(Q) = Σ_μ ‖y_μ − f_Q(x_μ)‖²/(2d) + (λ/2)‖Q‖_F²`` and plain gradient descent
``Q ← Q − lr ∇R(Q)`` with ``lr = 0.15`` is applied to ``R`` itself (not to ``R/d`` or the mean loss).
With ``n = αd`` samples the Hessian of ``R`` is O(α) in Q's natural scale, so a step of 0.15 is stable
and 5000 steps reach the minimum; on ``R/d`` the same step would move Q by ~1/d per step and the
positional branch (``m ≈ 0.26``, i.e. ``u·Q ≈ 8`` at d = 1000) would not be reached. The reported
training loss is ``e_t = R(Q)/d`` (the reference's ``attention_train_error_mean`` is ``R``).

Sign convention: ``R`` is invariant under ``Q → −Q``; for ``r = r* = k = 1`` we report ``|m|`` and ``|θ|``.
For larger ranks ``m`` and ``θ`` are the Frobenius norms of the ``k×r`` and ``r*×r`` overlap matrices
and ``q`` is the trace of the ``r×r`` self overlap.

Every instance ``i`` draws its teacher, training set, test set and random initialisation from
``jax.random.fold_in(jax.random.key(seed), i)``, so instance ``i`` is identical whether it is run alone or
in a batch. All instances are trained in one jit-compiled, vmapped call.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import baseline as _bl
from .data import n_samples, sample_dataset, sample_teacher
from .errors import ParameterError, check_int, check_range
from .model import ModelParams, empirical_risk, positional_directions, positional_encodings, sample_loss
from .provenance import provenance

INITS = ("semantic", "positional", "random")
OPTIMIZERS = ("gd", "lbfgs")
OBSERVABLES = ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm",
               "iterations", "converged")
_TEST_CHUNK = 2500


@dataclass(frozen=True)
class TrainConfig:
    """How the student is trained (MODEL.md §4).

    init: ``"semantic"`` (Q₀ = Q*; for r ≠ r* the shared columns are Q*'s, the rest ``0.01·N(0,1)``),
    ``"positional"`` (``Q₀[:, 0] = 1_d/√d`` as in the paper, further columns ``0.01·N(0,1)``),
    ``"random"`` (``0.1·N(0,1)``).
    optimizer: ``"gd"`` (full-batch GD on R, ``steps`` iterations of step ``lr``) or ``"lbfgs"``
    (optax L-BFGS with zoom line search, until ``‖∇R‖ ≤ gtol·max(1, ‖∇R(Q₀)‖)`` or ``max_iter``).
    x64: train in float64 (otherwise float32).
    """

    init: str = "semantic"
    optimizer: str = "gd"
    lr: float = 0.15
    steps: int = 5000
    gtol: float = 1e-6
    max_iter: int = 2000
    x64: bool = False

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ParameterError("init", f"one of {{{', '.join(INITS)}}}", self.init)
        if self.optimizer not in OPTIMIZERS:
            raise ParameterError("optimizer", f"one of {{{', '.join(OPTIMIZERS)}}}", self.optimizer)
        object.__setattr__(self, "lr", check_range("lr", self.lr, lo=0.0, lo_open=True))
        object.__setattr__(self, "steps", check_int("steps", self.steps, 0))
        object.__setattr__(self, "gtol", check_range("gtol", self.gtol, lo=0.0, lo_open=True))
        object.__setattr__(self, "max_iter", check_int("max_iter", self.max_iter, 1))
        if not isinstance(self.x64, bool):
            raise ParameterError("x64", "a bool", self.x64)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SimulationResult:
    """Per-instance results of :func:`simulate` (numpy arrays of length ``instances``)."""

    m: np.ndarray
    theta: np.ndarray
    theta_over_sigma2: np.ndarray
    q: np.ndarray
    e_t: np.ndarray
    eps_g: np.ndarray
    eps_lin: np.ndarray
    grad_norm: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    params: ModelParams
    alpha: float
    d: int
    config: TrainConfig
    seed: int
    instances: int
    test_samples: int
    provenance: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, float]]:
        """``{observable: {"mean", "std", "sem"}}`` over instances (std with ddof=1 when >1 instance)."""
        out = {}
        for k in OBSERVABLES:
            v = np.asarray(getattr(self, k), dtype=float)
            std = float(v.std(ddof=1)) if v.size > 1 else 0.0
            out[k] = {"mean": float(v.mean()), "std": std, "sem": std / math.sqrt(v.size)}
        return out

    def to_dict(self) -> dict[str, Any]:
        s = self.summary()
        out: dict[str, Any] = {k: getattr(self, k).tolist() for k in OBSERVABLES}
        out["mean"] = {k: v["mean"] for k, v in s.items()}
        out["std"] = {k: v["std"] for k, v in s.items()}
        out["sem"] = {k: v["sem"] for k, v in s.items()}
        out.update(alpha=self.alpha, d=self.d, n=n_samples(self.alpha, self.d), seed=self.seed,
                   instances=self.instances, test_samples=self.test_samples,
                   params=self.params.to_dict(), config=self.config.to_dict(),
                   provenance=self.provenance)
        return out

    def to_frame(self):
        import pandas as pd
        df = pd.DataFrame({k: getattr(self, k) for k in OBSERVABLES})
        df.insert(0, "instance", np.arange(self.instances))
        p = self.params
        cols = dict(d=self.d, alpha=self.alpha, n=n_samples(self.alpha, self.d), L=p.L, r=p.r,
                    r_star=p.r_star, sigma=p.sigma, lam=p.lam, omega=p.omega, A=str([list(a) for a in p.A]),
                    init=self.config.init, optimizer=self.config.optimizer, lr=self.config.lr,
                    steps=self.config.steps, seed=self.seed, test_samples=self.test_samples)
        for i, (k, v) in enumerate(cols.items()):
            df.insert(1 + i, k, v)
        return df


# ---------------------------------------------------------------------------------------------------


def _initial_Q(key, init: str, Q_star, params: ModelParams, d: int, dtype):
    r = params.r
    if init == "semantic":
        if params.r_star == r:
            return Q_star
        Q0 = 0.01 * jax.random.normal(key, (d, r), dtype)
        c = min(r, params.r_star)
        return Q0.at[:, :c].set(Q_star[:, :c])
    if init == "positional":
        Q0 = 0.01 * jax.random.normal(key, (d, r), dtype)
        return Q0.at[:, 0].set(jnp.full((d,), 1.0 / math.sqrt(d), dtype))
    return 0.1 * jax.random.normal(key, (d, r), dtype)


def _observables(Q, Q_star, u, sigma):
    d = Q.shape[0]
    m = u @ Q / math.sqrt(d)
    th = Q_star.T @ Q / d
    qq = sigma ** 2 * Q.T @ Q / d
    return jnp.sqrt(jnp.sum(m * m)), sigma ** 2 * jnp.sqrt(jnp.sum(th * th)), jnp.sqrt(jnp.sum(th * th)), jnp.trace(qq)


@lru_cache(maxsize=32)
def _build(params: ModelParams, d: int, n: int, config: TrainConfig, test_samples: int):
    """A jitted ``keys -> dict of per-instance arrays`` for fixed shapes (cached across calls)."""
    dtype = jnp.float64 if config.x64 else jnp.float32
    lam = params.lam
    chunk = min(_TEST_CHUNK, test_samples)
    n_chunks = -(-test_samples // chunk)

    def one(key):
        k_teacher, k_train, k_test, k_init = jax.random.split(key, 4)
        Q_star = sample_teacher(k_teacher, params, d, dtype)
        X, Y = sample_dataset(k_train, params, Q_star, n)
        p = positional_encodings(params, d, dtype)
        u = positional_directions(d, params.k, dtype)
        risk = lambda Q: empirical_risk(Q, X, Y, p, lam)  # noqa: E731
        grad = jax.grad(risk)
        Q0 = _initial_Q(k_init, config.init, Q_star, params, d, dtype)

        if config.optimizer == "gd":
            lr = jnp.asarray(config.lr, dtype)
            Q = jax.lax.fori_loop(0, config.steps, lambda i, Q: Q - lr * grad(Q), Q0)
            R, g = jax.value_and_grad(risk)(Q)
            gn = jnp.sqrt(jnp.sum(g * g))
            iters = jnp.asarray(config.steps, jnp.int32)
            conv = jnp.isfinite(R) & jnp.isfinite(gn) & jnp.all(jnp.isfinite(Q))
        else:
            import optax
            opt = optax.lbfgs()
            vg = optax.value_and_grad_from_state(risk)
            g0 = grad(Q0)
            tol = config.gtol * jnp.maximum(1.0, jnp.sqrt(jnp.sum(g0 * g0)))

            def body(c):
                Q, st, it, _ = c
                v, g = vg(Q, state=st)
                upd, st = opt.update(g, st, Q, value=v, grad=g, value_fn=risk)
                Q = optax.apply_updates(Q, upd)
                gnew = optax.tree_utils.tree_get(st, "grad")
                return Q, st, it + 1, jnp.sqrt(jnp.sum(gnew * gnew))

            def cond(c):
                _, _, it, gn = c
                return (it == 0) | ((it < config.max_iter) & (gn > tol) & jnp.isfinite(gn))

            init = (Q0, opt.init(Q0), jnp.asarray(0, jnp.int32), jnp.asarray(jnp.inf, dtype))
            Q, _, iters, _ = jax.lax.while_loop(cond, body, init)
            R, g = jax.value_and_grad(risk)(Q)
            gn = jnp.sqrt(jnp.sum(g * g))
            conv = (gn <= tol) & jnp.isfinite(R)

        B = _bl.fit_linear(X, Y)

        def test_chunk(carry, j):
            Xt, Yt = sample_dataset(jax.random.fold_in(k_test, j), params, Q_star, chunk)
            w = (j * chunk + jnp.arange(chunk)) < test_samples
            la = jnp.sum(jnp.where(w, sample_loss(Q, Xt, Yt, p), 0.0))
            ll = jnp.sum(jnp.where(w, _bl.linear_sample_loss(B, Xt, Yt), 0.0))
            return (carry[0] + la, carry[1] + ll), None

        zero = jnp.asarray(0.0, dtype)
        (sa, sl), _ = jax.lax.scan(test_chunk, (zero, zero), jnp.arange(n_chunks))
        m, theta, tos, q = _observables(Q, Q_star, u, params.sigma)
        return dict(m=m, theta=theta, theta_over_sigma2=tos, q=q, e_t=R / d, eps_g=sa / test_samples,
                    eps_lin=sl / test_samples, grad_norm=gn, iterations=iters, converged=conv)

    return jax.jit(jax.vmap(one))


def instance_keys(seed: int, instances: int, start: int = 0) -> jax.Array:
    """Per-instance keys ``fold_in(key(seed), i)`` for ``i = start .. start+instances-1``."""
    base = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.arange(start, start + instances))


def simulate(params: ModelParams, *, alpha: float, d: int, config: TrainConfig = TrainConfig(),
             instances: int = 1, seed: int = 0, test_samples: int = 50_000,
             progress: Callable[[str], None] | None = None) -> SimulationResult:
    """Train ``instances`` independent students at sample complexity ``alpha`` and dimension ``d``.

    Returns per-instance order parameters ``|m|, |θ|, θ/σ², q``, training loss ``e_t = R(Q)/d``, test error
    ``ε_g`` on ``test_samples`` fresh samples (evaluated in chunks of 2500), the finite-d linear baseline
    ``ε_lin`` fitted on the same training set and tested on the same test set, the final ``‖∇R‖``,
    the iteration count and convergence flags. ``progress``, if given, is called with short status strings.
    """
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if not isinstance(config, TrainConfig):
        raise ParameterError("config", "a TrainConfig", type(config).__name__)
    alpha = check_range("alpha", alpha, lo=0.0, lo_open=True)
    d = check_int("d", d, max(2, params.k))
    instances = check_int("instances", instances, 1)
    seed = check_int("seed", seed, 0)
    test_samples = check_int("test_samples", test_samples, 1)
    n = n_samples(alpha, d)

    def say(msg: str) -> None:
        if progress is not None:
            progress(msg)

    ctx = jax.enable_x64(True) if config.x64 else _nullcontext()
    with ctx:
        fn = _build(params, d, n, config, test_samples)
        say(f"compiling + training {instances} instance(s), d={d}, n={n}, {config.optimizer}")
        out = fn(instance_keys(seed, instances))
        out = {k: np.asarray(jax.device_get(v)) for k, v in out.items()}
    say("done")
    conv = out["converged"].astype(bool)
    prov = provenance(
        dict(params=params.to_dict(), alpha=alpha, d=d, n=n, config=config.to_dict(), instances=instances,
             seed=seed, test_samples=test_samples),
        seeds=dict(base_seed=seed, instance_keys="fold_in(key(seed), i)", instances=list(range(instances))),
        convergence=dict(all_converged=bool(conv.all()), converged=conv.tolist(),
                         grad_norm=out["grad_norm"].tolist(), iterations=out["iterations"].tolist()),
    )
    return SimulationResult(
        m=out["m"].astype(float), theta=out["theta"].astype(float),
        theta_over_sigma2=out["theta_over_sigma2"].astype(float), q=out["q"].astype(float),
        e_t=out["e_t"].astype(float), eps_g=out["eps_g"].astype(float), eps_lin=out["eps_lin"].astype(float),
        grad_norm=out["grad_norm"].astype(float), iterations=out["iterations"].astype(int), converged=conv,
        params=params, alpha=alpha, d=d, config=config, seed=seed, instances=instances,
        test_samples=test_samples, provenance=prov)


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False
