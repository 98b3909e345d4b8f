"""Finite-d training of the tied low-rank attention student (MODEL.md §2, §4).

Normalisation (checked against ``reference/gd_d1000_omega0.3.csv``): the optimised objective is the
summed empirical risk ``R(Q) = Σ_μ ‖y_μ − f_Q(x_μ)‖²/(2d) + (λ/2)‖Q‖_F²`` and plain gradient descent
``Q ← Q − lr ∇R(Q)`` with ``lr = 0.15`` is applied to ``R`` itself (not to ``R/d`` or the mean loss).
With ``n = αd`` samples the Hessian of ``R`` is O(α) in Q's natural scale, so a step of 0.15 is stable
and 5000 steps come close to a minimum (not always to it: status ``max_steps``); on ``R/d`` the same step
would move Q by ~1/d per step and the positional branch (``m ≈ 0.26``, i.e. ``u·Q ≈ 8`` at d = 1000) would not be reached. The reported
training loss is ``e_t = R(Q)/d`` (the reference's ``attention_train_error_mean`` is ``R``).

Sign convention: ``R`` is invariant under ``Q → −Q``; for ``r = r* = k = 1`` we report ``|m|`` and ``|θ|``.
For larger ranks ``m`` and ``θ`` are the Frobenius norms of the ``k×r`` and ``r*×r`` overlap matrices
and ``q`` is the trace of the ``r×r`` self overlap.

Every instance ``i`` draws its teacher, training set, test set and random initialisation from
``jax.random.fold_in(jax.random.key(seed), i)``, so instance ``i`` is identical whether it is run alone or
in a batch. All instances are trained in one jit-compiled call: on a CPU one after another, on an accelerator
vmapped together in groups as large as memory allows (:func:`instances_per_batch`).

Speed: training evaluates ``R`` and ``∇R`` in the sufficient-statistics form
:func:`attnphase.attention.empirical_risk_from_statistics` (two passes over ``Z = X + p`` per gradient); the
reported ``e_t`` is then evaluated with the reference :func:`attnphase.attention.empirical_risk`. σ, λ, ω, A,
the initialisation and the optimiser's numbers (lr, steps, gtol, max_iter) are traced arguments of the
compiled function, so changing them does not recompile; d, n, L, r, r*, P, A, the optimiser, x64, the
test-error method and (sampled) the number of test samples or (exact) the QMC point count do.

Test error: by default exact at this d (:mod:`attnphase.finite_d_error`, docs/finite_d.md): only projections
on ``span(Q, Q*, u)`` are computed per instance, and a low-dimensional QMC rule runs once for all instances
after training; ``test_error="sampled"`` draws ``test_samples`` fresh d-dimensional samples as the paper did.
Convergence is judged by the gradient norm for every optimiser (:class:`TrainStatus`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from functools import lru_cache, partial
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import baseline as _bl, xla_cache
from .finite_d_error import DEFAULT_POINTS, DEFAULT_SCRAMBLES, integrate, project, qmc_normals, subspace_dim
from .data import labelled_dataset, n_samples, sample_teacher
from .errors import ParameterError, check_int, check_range
from .guards import MAX_SEED, MAX_STEPS, check_simulation
from .model import ModelParams
from .attention import (RiskStatistics, empirical_risk, empirical_risk_from_statistics, positional_directions,
                        positional_encodings, risk_statistics, sample_loss, sample_loss_from_statistics)
from .provenance import provenance
from .precision import full_precision

INITS = ("semantic", "positional", "random")
OPTIMIZERS = ("gd", "lbfgs")
OBSERVABLES = ("m", "theta", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm",
               "iterations", "converged")
_EXTRA = ("status", "eps_g_se", "eps_lin_se")
TEST_ERRORS = ("exact", "sampled")
_TEST_CHUNK = 2500


class TrainStatus(str, Enum):
    """How training of one instance ended (``converged`` is ``status == CONVERGED``).

    CONVERGED: ``‖∇R‖ ≤ gtol·max(1, ‖∇R(Q_start)‖)`` at the end (for GD after its fixed number of steps);
    MAX_STEPS: GD ran its fixed ``steps`` (the paper's protocol) and the gradient is still above that;
    MAX_ITER: L-BFGS stopped at ``max_iter`` above the tolerance; NOT_FINITE: the loss or gradient is NaN/inf.
    """

    CONVERGED = "converged"
    MAX_STEPS = "max_steps"
    MAX_ITER = "max_iter"
    NOT_FINITE = "not_finite"


_STATUS_CODES = tuple(TrainStatus)


def _status_code(gn, R, tol, budget_status: TrainStatus):
    """Traced status index into ``_STATUS_CODES``."""
    finite = jnp.isfinite(gn) & jnp.isfinite(R)
    return jnp.where(~finite, _STATUS_CODES.index(TrainStatus.NOT_FINITE),
                     jnp.where(gn <= tol, _STATUS_CODES.index(TrainStatus.CONVERGED),
                               _STATUS_CODES.index(budget_status))).astype(jnp.int32)


@dataclass(frozen=True)
class TrainConfig:
    """How the student is trained (MODEL.md §4).

    init: ``"semantic"`` (Q₀ = Q*; for r ≠ r* the shared columns are Q*'s, the rest ``0.01·N(0,1)``),
    ``"positional"`` (``Q₀[:, 0] = 1_d/√d`` as in the paper, further columns ``0.01·N(0,1)``),
    ``"random"`` (``init_scale·N(0,1)``, paper: 0.1).
    optimizer: ``"gd"`` (full-batch GD on R, ``steps`` iterations of step ``lr``) or ``"lbfgs"``
    (``warmup_steps`` GD steps of step ``lr``, then optax L-BFGS with zoom line search until
    ``‖∇R‖ ≤ gtol·max(1, ‖∇R(Q_warm)‖)`` or ``max_iter`` iterations).
    warmup_steps: the GD warm-up of ``"lbfgs"``. Started cold, L-BFGS's first long steps can cross into a
    neighbouring stationary point (seen at d = 1000: positional start at α = 2, semantic start at α = 0.5,
    e_t 0.03–0.3 % above GD's limit); after 30, 60, 100, 150 or 300 GD steps it lands on the point GD
    converges to in 30 000 steps (e_t equal to 1e-7 relative, docs/finite_d.md); the default 60 keeps a 2×
    margin over the 30 found sufficient (it was 300: ~0.25 s per instance at d = 1000, α = 1).
    x64: train in float64 (otherwise float32).
    init_scale: standard deviation of the entries of the ``"random"`` start (traced: no recompilation);
    0 starts at ``Q = 0``, the uninformative stationary point (∇R(0) = 0).
    Convergence for every optimiser: ``‖∇R‖ ≤ gtol·max(1, ‖∇R(Q_start)‖)`` at the end (:class:`TrainStatus`).
    """

    init: str = "semantic"
    optimizer: str = "gd"
    lr: float = 0.15
    steps: int = 5000
    gtol: float = 1e-6
    max_iter: int = 2000
    warmup_steps: int = 60
    x64: bool = False
    init_scale: float = 0.1

    def __post_init__(self) -> None:
        if self.init not in INITS:
            raise ParameterError("init", f"one of {{{', '.join(INITS)}}}", self.init)
        if self.optimizer not in OPTIMIZERS:
            raise ParameterError("optimizer", f"one of {{{', '.join(OPTIMIZERS)}}}", self.optimizer)
        object.__setattr__(self, "lr", check_range("lr", self.lr, lo=0.0, lo_open=True))
        object.__setattr__(self, "steps", check_int("steps", self.steps, 0, MAX_STEPS))
        object.__setattr__(self, "gtol", check_range("gtol", self.gtol, lo=0.0, lo_open=True))
        object.__setattr__(self, "max_iter", check_int("max_iter", self.max_iter, 1, MAX_STEPS))
        object.__setattr__(self, "warmup_steps", check_int("warmup_steps", self.warmup_steps, 0, MAX_STEPS))
        object.__setattr__(self, "init_scale", check_range("init_scale", self.init_scale, lo=0.0))
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
    status: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    """Per instance, a :class:`TrainStatus` value string ("converged", "max_steps", ...)."""
    eps_g_se: np.ndarray = field(default_factory=lambda: np.array([]))
    """Integration error of each ``eps_g`` (QMC scrambles if exact, sampling s.e. if sampled)."""
    eps_lin_se: np.ndarray = field(default_factory=lambda: np.array([]))
    test_error: str = "exact"

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
        out: dict[str, Any] = {k: getattr(self, k).tolist() for k in OBSERVABLES + _EXTRA}
        out["mean"] = {k: v["mean"] for k, v in s.items()}
        out["std"] = {k: v["std"] for k, v in s.items()}
        out["sem"] = {k: v["sem"] for k, v in s.items()}
        out.update(alpha=self.alpha, d=self.d, n=n_samples(self.alpha, self.d), seed=self.seed,
                   instances=self.instances, test_samples=self.test_samples, test_error=self.test_error,
                   params=self.params.to_dict(), config=self.config.to_dict(),
                   provenance=self.provenance)
        return out

    def to_frame(self):
        import pandas as pd
        df = pd.DataFrame({k: getattr(self, k) for k in OBSERVABLES + _EXTRA})
        df.insert(0, "instance", np.arange(self.instances))
        p = self.params
        cols = dict(d=self.d, alpha=self.alpha, n=n_samples(self.alpha, self.d), L=p.L, r=p.r,
                    r_star=p.r_star, sigma=p.sigma, lam=p.lam, omega=p.omega, A=str([list(a) for a in p.A]),
                    init=self.config.init, optimizer=self.config.optimizer, lr=self.config.lr,
                    steps=self.config.steps, seed=self.seed, test_error=self.test_error,
                    test_samples=self.test_samples)
        for i, (k, v) in enumerate(cols.items()):
            df.insert(1 + i, k, v)
        return df


# ---------------------------------------------------------------------------------------------------


def _initial_Q(key, init_index, init_scale, Q_star, r: int, d: int, dtype):
    """``Q₀`` for ``INITS[init_index]`` (a traced index: changing the initialisation does not recompile)."""
    r_star = Q_star.shape[1]
    noise = jax.random.normal(key, (d, r), dtype)  # one draw serves all three (as before: same key)

    def semantic():
        if r_star == r:
            return Q_star
        c = min(r, r_star)
        return (0.01 * noise).at[:, :c].set(Q_star[:, :c])

    def positional():
        return (0.01 * noise).at[:, 0].set(jnp.full((d,), 1.0 / math.sqrt(d), dtype))

    def random():
        return init_scale * noise

    return jax.lax.switch(init_index, (semantic, positional, random))


@full_precision
def _observables(Q, Q_star, u, sigma):
    d = Q.shape[0]
    m = u @ Q / math.sqrt(d)
    th = Q_star.T @ Q / d
    qq = sigma ** 2 * Q.T @ Q / d
    return jnp.sqrt(jnp.sum(m * m)), sigma ** 2 * jnp.sqrt(jnp.sum(th * th)), jnp.sqrt(jnp.sum(th * th)), jnp.trace(qq)


def _grad_norm(g):
    return jnp.sqrt(jnp.sum(g * g))


@full_precision
def _gradient_descent(risk, Q0, steps, lr):
    """``steps`` full-batch steps ``Q ← Q − lr ∇R(Q)`` (MODEL.md §4)."""
    grad = jax.grad(risk)
    return jax.lax.fori_loop(0, steps, lambda i, Q: Q - lr * grad(Q), Q0)


@full_precision
def _train_gd(risk, Q0, knobs):
    """The paper's protocol (MODEL.md §4): ``steps`` GD steps of step ``lr``, always all of them. Status
    CONVERGED only if then ``‖∇R‖ ≤ gtol·max(1, ‖∇R(Q₀)‖)``, else MAX_STEPS (a trajectory, not a minimum)."""
    tol = knobs["gtol"] * jnp.maximum(1.0, _grad_norm(jax.grad(risk)(Q0)))
    Q = _gradient_descent(risk, Q0, knobs["steps"], knobs["lr"])
    R, g = jax.value_and_grad(risk)(Q)
    gn = _grad_norm(g)
    return Q, knobs["steps"], gn, _status_code(gn, R, tol, TrainStatus.MAX_STEPS)


@full_precision
def _train_lbfgs(risk, Q0, knobs):
    """``warmup_steps`` GD steps, then optax L-BFGS (zoom line search) until ``‖∇R‖ ≤ gtol·max(1, ‖∇R‖₀)``
    (``‖∇R‖₀`` after the warm-up) or ``max_iter`` L-BFGS iterations (the count returned)."""
    import optax
    Q0 = _gradient_descent(risk, Q0, knobs["warmup_steps"], knobs["lr"])
    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(risk)
    tol = knobs["gtol"] * jnp.maximum(1.0, _grad_norm(jax.grad(risk)(Q0)))

    def body(c):
        Q, st, it, _ = c
        v, g = vg(Q, state=st)
        upd, st = opt.update(g, st, Q, value=v, grad=g, value_fn=risk)
        return optax.apply_updates(Q, upd), st, it + 1, _grad_norm(optax.tree_utils.tree_get(st, "grad"))

    def cond(c):
        _, _, it, gn = c
        return (it == 0) | ((it < knobs["max_iter"]) & (gn > tol) & jnp.isfinite(gn))

    init = (Q0, opt.init(Q0), jnp.asarray(0, jnp.int32), jnp.asarray(jnp.inf, Q0.dtype))
    Q, _, iters, gn = jax.lax.while_loop(cond, body, init)
    # status and reported norm from the gradient the loop tested (its line search's, at the final Q): at
    # gtol = 1e-6 a float32 re-evaluation differs from it by rounding and could contradict the loop's decision
    return Q, iters, gn, _status_code(gn, risk(Q), tol, TrainStatus.MAX_ITER)


_TRAINERS = {"gd": _train_gd, "lbfgs": _train_lbfgs}
DEVICE_BATCH_BYTES = 4 * 2 ** 30
"""On an accelerator, the most bytes of training data (X, Y and Z = X + p, 3·n·L·d numbers per instance) that
:func:`simulate` vmaps at once; the instances beyond it run in further groups of the same call."""


def instances_per_batch(n: int, L: int, d: int, itemsize: int, instances: int, backend: str | None = None) -> int:
    """How many instances :func:`simulate` vmaps together (the groups run one after another in one call).

    CPU: 1 at every size. Measured at d = 1000 (docs/notes/benchmarks-log.md, issue 34): a vmapped group's L-BFGS
    ``while_loop`` runs in lockstep to its slowest instance (at α = 0.01 one instance in 24 needs 831
    iterations, the others ≤ 24: the group of 24 cost 13× the CPU time of one at a time), and from α ≈ 0.5 up
    a group's data no longer stays in the CPU's cache (pairs at α = 1: 1.45× the CPU time). Accelerator
    (``backend`` other than ``"cpu"``, default ``jax.default_backend()``): all instances, as many as
    :data:`DEVICE_BATCH_BYTES` holds; there each kernel launch and each trip of the loops costs about the same
    for one instance as for all of them (predicted, docs/gpu.md; not measured yet)."""
    backend = jax.default_backend() if backend is None else backend
    if backend == "cpu":
        return 1
    return max(1, min(instances, DEVICE_BATCH_BYTES // max(1, 3 * n * L * d * itemsize)))


def _structure(params: ModelParams) -> ModelParams:
    """The shape-determining part of ``params`` (L, r, r*, P); σ, λ, ω, A are passed as traced knobs."""
    return ModelParams(L=params.L, r=params.r, r_star=params.r_star, A=((1.0 / params.L,) * params.L,) * params.L, P=params.P)


def _knobs(params: ModelParams, config: TrainConfig, dtype, test_error: str = "exact",
           qmc_points: int = DEFAULT_POINTS, qmc_scrambles: int = DEFAULT_SCRAMBLES) -> dict[str, jax.Array]:
    """The run's numbers that do not change compiled shapes, as arrays (so changing them never recompiles);
    with ``test_error="exact"`` also the QMC normals ``xi`` of :func:`attnphase.finite_d_error.qmc_normals`."""
    f = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    kn = dict(sigma=f(params.sigma), lam=f(params.lam), omega=f(params.omega), A=f(params.A_array),
              lr=f(config.lr), gtol=f(config.gtol), steps=jnp.asarray(config.steps, jnp.int32),
              max_iter=jnp.asarray(config.max_iter, jnp.int32),
              warmup_steps=jnp.asarray(config.warmup_steps, jnp.int32),
              init_index=jnp.asarray(INITS.index(config.init), jnp.int32), init_scale=f(config.init_scale))
    if test_error == "exact":
        w = subspace_dim(params.r, params.r_star, params.k)
        kn["xi"] = f(qmc_normals(params.L, w, qmc_points, qmc_scrambles))
    return kn


class Instance(NamedTuple):
    """One training instance as :func:`simulate` draws it from its key (MODEL.md §2): teacher ``Q_star``
    (d, r*), training inputs ``X`` (n, L, d) and targets ``Y``, positional encodings ``p`` (L, d), positional
    directions ``u`` (k, d), and the keys of its test set and initialisation."""

    Q_star: jax.Array
    X: jax.Array
    Y: jax.Array
    p: jax.Array
    u: jax.Array
    key_test: jax.Array
    key_init: jax.Array


def _draw(key, structure: ModelParams, d: int, n: int, kn, dtype) -> Instance:
    """The instance of ``key`` (traceable; σ, ω, A from the knobs ``kn``)."""
    k_teacher, k_train, k_test, k_init = jax.random.split(key, 4)
    Q_star = sample_teacher(k_teacher, structure, d, dtype)
    X, Y = labelled_dataset(k_train, Q_star, n, structure.L, kn["sigma"], kn["omega"], kn["A"])
    return Instance(Q_star, X, Y, positional_encodings(structure, d, dtype), positional_directions(d, structure.k, dtype),
                    k_test, k_init)


def instance(params: ModelParams, *, alpha: float, d: int, seed: int = 0, index: int = 0,
             x64: bool = False) -> Instance:
    """Instance ``index`` of ``simulate(params, alpha=alpha, d=d, seed=seed, instances > index)``: the same key
    ``fold_in(key(seed), index)`` and draws (float32 unless ``x64``), for re-examining one run's end point
    (bench/investigations/bench_lbfgs_endpoints.py; :func:`train` from :func:`initial_Q` reproduces simulate's m, θ, q, e_t,
    tests/test_simulate_instance.py). Call inside ``jax.enable_x64(True)`` when ``x64``."""
    alpha = check_range("alpha", alpha, lo=0.0, lo_open=True)
    d = check_int("d", d, max(2, params.k))
    index = check_int("index", index, 0)
    dtype = jnp.float64 if x64 else jnp.float32
    kn = _knobs(params, TrainConfig(), dtype, test_error="sampled")
    key = instance_keys(check_int("seed", seed, 0, MAX_SEED), 1, start=index)[0]
    return _draw(key, _structure(params), d, n_samples(alpha, d), kn, dtype)


def initial_Q(inst: Instance, params: ModelParams, config: TrainConfig) -> jax.Array:
    """The start ``Q₀`` that :func:`simulate` uses for this instance under ``config.init`` (dtype of the
    instance's data)."""
    dtype = inst.X.dtype
    return _initial_Q(inst.key_init, jnp.asarray(INITS.index(config.init), jnp.int32),
                      jnp.asarray(config.init_scale, dtype), inst.Q_star, params.r, inst.X.shape[-1], dtype)


@partial(jax.jit, static_argnames="optimizer")
@full_precision
def _train_one(Q0, stats, kn, optimizer: str):
    return _TRAINERS[optimizer](lambda Q: empirical_risk_from_statistics(Q, stats, kn["lam"]), Q0, kn)


@full_precision
def train(inst: Instance, params: ModelParams, config: TrainConfig, Q0=None):
    """Train one instance as :func:`simulate` does (``config``'s optimiser and tolerances; from ``Q0``, default
    :func:`initial_Q`), in the dtype of ``Q0`` (float64 inside ``jax.enable_x64(True)``: cast the instance with
    it). Returns ``(Q, iterations, ‖∇R‖, TrainStatus)``."""
    xla_cache.enable()
    Q0 = initial_Q(inst, params, config) if Q0 is None else Q0
    dtype = Q0.dtype
    stats = risk_statistics(*(jnp.asarray(a, dtype) for a in (inst.X, inst.Y, inst.p)))
    Q, it, gn, status = _train_one(Q0, stats, _knobs(params, config, dtype, test_error="sampled"),
                                   config.optimizer)
    return Q, int(it), float(gn), _STATUS_CODES[int(status)]


@full_precision
def observables(Q, inst: Instance, params: ModelParams) -> dict[str, float]:
    """What :func:`simulate` reports of a student ``Q`` on this instance: ``m``, ``theta``, ``theta_over_sigma2``,
    ``q`` (norms and trace for r > 1) and ``e_t = R(Q)/d`` (reference :func:`attnphase.attention.empirical_risk`)."""
    dtype = Q.dtype
    Q_star, X, Y, p, u = (jnp.asarray(a, dtype) for a in (inst.Q_star, inst.X, inst.Y, inst.p, inst.u))
    m, th, tos, q = _observables(Q, Q_star, u, params.sigma)
    R = empirical_risk(Q, X, Y, p, jnp.asarray(params.lam, dtype))
    return dict(m=float(m), theta=float(th), theta_over_sigma2=float(tos), q=float(q), e_t=float(R) / Q.shape[0])


@full_precision
def _risk_twice_differentiable(Q, stats: RiskStatistics, lam):
    """The training objective of :func:`train` (:func:`attnphase.attention.empirical_risk_from_statistics`, the
    summed risk with the λ ridge, MODEL.md §2) without its reverse-only matrix product, so that forward mode
    (hence second derivatives) applies."""
    n, L, d = stats.Z.shape
    h = (stats.Z.reshape(n * L, d) @ Q).reshape(n, L, Q.shape[-1]) / math.sqrt(d)
    return jnp.sum(sample_loss_from_statistics(h, stats)) + 0.5 * lam * jnp.sum(Q * Q)


@partial(jax.jit, static_argnames="chunk")
@full_precision
def _hessian_columns(Q, stats, lam, chunk: int):
    grad = jax.grad(_risk_twice_differentiable)
    basis = jnp.eye(Q.size, dtype=Q.dtype).reshape((Q.size,) + Q.shape)
    hvp = lambda v: jax.jvp(lambda x: grad(x, stats, lam), (Q,), (v,))[1].ravel()  # noqa: E731
    return jax.lax.map(hvp, basis, batch_size=chunk)


@full_precision
def risk_hessian(Q, inst: Instance, params: ModelParams, chunk: int = 256) -> tuple[jax.Array, jax.Array]:
    """Gradient and Hessian of the training objective ``R(Q)`` (the summed risk with the (λ/2)‖Q‖² ridge,
    MODEL.md §2, exactly what :func:`train` minimises) at ``Q`` on this instance, with respect to all d·r
    entries of ``Q`` (flattened row-major, ``Q.ravel()``): ``(∇R (d·r,), H (d·r, d·r))`` in the dtype of ``Q``
    (call inside ``jax.enable_x64(True)`` with a float64 ``Q`` for float64).

    ``H`` is ``jax.hessian`` (forward over reverse) computed ``chunk`` columns at a time, so memory stays
    O(chunk·n·L) rather than O(d·r·n·L). R is invariant under ``Q → QO`` (O orthogonal r×r): for r > 1 ``H``
    has r(r−1)/2 exact zero modes at a critical point (none for r = 1)."""
    xla_cache.enable()
    dtype = Q.dtype
    stats = risk_statistics(*(jnp.asarray(a, dtype) for a in (inst.X, inst.Y, inst.p)))
    lam = jnp.asarray(params.lam, dtype)
    g = jax.grad(_risk_twice_differentiable)(Q, stats, lam).ravel()
    return g, _hessian_columns(Q, stats, lam, min(chunk, Q.size))


@lru_cache(maxsize=32)
def _build(structure: ModelParams, d: int, n: int, optimizer: str, x64: bool, test_samples: int, batch: int,
           test_error: str = "exact"):
    """A jitted ``(keys, knobs) -> dict of per-instance arrays`` for fixed shapes (cached across calls).

    ``batch`` instances are vmapped together; batches run one after another inside the same call.
    ``test_error``: ``"exact"`` (:mod:`attnphase.finite_d_error`, QMC normals in ``knobs["xi"]``;
    ``test_samples`` unused) or ``"sampled"`` (``test_samples`` fresh samples in chunks of 2500).
    """
    dtype = jnp.float64 if x64 else jnp.float32
    chunk = min(_TEST_CHUNK, test_samples)
    n_chunks = -(-test_samples // chunk)
    run_optimizer = _TRAINERS[optimizer]
    L = structure.L

    def sampled_errors(Q, Q_star, B, p, k_test, kn):
        def test_chunk(carry, j):
            Xt, Yt = labelled_dataset(jax.random.fold_in(k_test, j), Q_star, chunk, L, kn["sigma"],
                                      kn["omega"], kn["A"])
            w = (j * chunk + jnp.arange(chunk)) < test_samples
            la = jnp.where(w, sample_loss(Q, Xt, Yt, p), 0.0)
            ll = jnp.where(w, _bl.linear_sample_loss(B, Xt, Yt), 0.0)
            return (carry[0] + jnp.sum(la), carry[1] + jnp.sum(la * la), carry[2] + jnp.sum(ll),
                    carry[3] + jnp.sum(ll * ll)), None

        zero = jnp.asarray(0.0, dtype)
        (sa, sa2, sl, sl2), _ = jax.lax.scan(test_chunk, (zero,) * 4, jnp.arange(n_chunks))

        def mean_se(s1, s2):
            mu = s1 / test_samples
            var = jnp.maximum(s2 / test_samples - mu * mu, 0.0) * test_samples / max(1, test_samples - 1)
            return mu, jnp.sqrt(var / test_samples)

        return (*mean_se(sa, sa2), *mean_se(sl, sl2))

    def one(key, kn):
        inst = _draw(key, structure, d, n, kn, dtype)
        Q_star, X, Y, p, u, k_test = inst.Q_star, inst.X, inst.Y, inst.p, inst.u, inst.key_test
        # the barrier makes XLA materialise Z once; fused into the training loop, its producer
        # (X + p) is recomputed inside every matrix-vector product, ~2x slower per step on CPU
        stats = jax.lax.optimization_barrier(risk_statistics(X, Y, p))
        Q0 = _initial_Q(inst.key_init, kn["init_index"], kn["init_scale"], Q_star, structure.r, d, dtype)
        Q, iters, gn, status = run_optimizer(lambda Q: empirical_risk_from_statistics(Q, stats, kn["lam"]), Q0, kn)
        R = empirical_risk(Q, X, Y, p, kn["lam"])  # the reported e_t uses the reference definition
        B = _bl.fit_linear(X, Y)
        m, theta, tos, q = _observables(Q, Q_star, u, kn["sigma"])
        out = dict(m=m, theta=theta, theta_over_sigma2=tos, q=q, e_t=R / d, grad_norm=gn, iterations=iters,
                   converged=status == _STATUS_CODES.index(TrainStatus.CONVERGED), status=status)
        if test_error == "exact":  # only the projections here; the QMC rule runs after the loop, batched
            out.update(projection=project(Q, Q_star, p, u), B_lin=B)
        else:
            out.update(zip(("eps_g", "eps_g_se", "eps_lin", "eps_lin_se"),
                           sampled_errors(Q, Q_star, B, p, k_test, kn)))
        return out

    def run(keys, kn):
        out = jax.lax.map(lambda k: one(k, kn), keys, batch_size=batch)
        if test_error == "exact":
            ex = jax.vmap(lambda pr, B: integrate(pr, B, kn["sigma"], kn["omega"], kn["A"], kn["xi"]))(
                out.pop("projection"), out.pop("B_lin"))
            out.update(ex._asdict())
        return out

    return jax.jit(full_precision(run))


def instance_keys(seed: int, instances: int, start: int = 0) -> jax.Array:
    """Per-instance keys ``fold_in(key(seed), i)`` for ``i = start .. start+instances-1``."""
    base = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.arange(start, start + instances))


def simulate(params: ModelParams, *, alpha: float, d: int, config: TrainConfig = TrainConfig(),
             instances: int = 1, seed: int = 0, test_samples: int = 50_000,
             progress: Callable[[str], None] | None = None, test_error: str = "exact",
             qmc_points: int = DEFAULT_POINTS, qmc_scrambles: int = DEFAULT_SCRAMBLES) -> SimulationResult:
    """Train ``instances`` independent students at sample complexity ``alpha`` and dimension ``d``.

    Returns per-instance order parameters ``|m|, |θ|, θ/σ², q``, training loss ``e_t = R(Q)/d``, the test
    error ``ε_g`` and the finite-d linear baseline ``ε_lin`` (fitted on the same training set), each with its
    integration error, the final ``‖∇R‖``, the iteration count and the :class:`TrainStatus`.
    ``test_error="exact"`` (default): ``ε_g`` and ``ε_lin`` exact at this d (:mod:`attnphase.finite_d_error`,
    ``qmc_points × qmc_scrambles`` QMC points in ``L·(r + r* + k)`` dimensions; needs ``d ≥ r + r* + k``);
    ``"sampled"``: the mean over ``test_samples`` fresh samples (in chunks of 2500), the paper's estimate.
    ``progress``, if given, is called with short status strings.
    """
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if not isinstance(config, TrainConfig):
        raise ParameterError("config", "a TrainConfig", type(config).__name__)
    if test_error not in TEST_ERRORS:
        raise ParameterError("test_error", f"one of {{{', '.join(TEST_ERRORS)}}}", test_error)
    alpha = check_range("alpha", alpha, lo=0.0, lo_open=True)
    w = subspace_dim(params.r, params.r_star, params.k)
    d = check_int("d", d, max(2, params.k, w if test_error == "exact" else 0))
    instances = check_int("instances", instances, 1)
    seed = check_int("seed", seed, 0)
    test_samples = check_int("test_samples", test_samples, 1)
    n = check_simulation(params.L, params.r, params.r_star, params.k, alpha=alpha, d=d, instances=instances,
                         seed=seed, test_samples=test_samples, x64=config.x64, test_error=test_error)

    def say(msg: str) -> None:
        if progress is not None:
            progress(msg)

    xla_cache.enable()                  # before the training program is first compiled
    ctx = jax.enable_x64(True) if config.x64 else _nullcontext()
    with ctx:
        dtype = jnp.float64 if config.x64 else jnp.float32
        batch = instances_per_batch(n, params.L, d, jnp.dtype(dtype).itemsize, instances)
        fn = _build(_structure(params), d, n, config.optimizer, config.x64, test_samples, batch, test_error)
        say(f"compiling + training {instances} instance(s), d={d}, n={n}, {config.optimizer}")
        knobs = _knobs(params, config, dtype, test_error, qmc_points, qmc_scrambles)
        out = fn(instance_keys(seed, instances), knobs)
        out = {k: np.asarray(jax.device_get(v)) for k, v in out.items()}
    say("done")
    conv = out["converged"].astype(bool)
    status = np.array([_STATUS_CODES[int(c)].value for c in out["status"]], dtype=object)
    if test_error == "exact":
        method = dict(method="exact (finite_d_error, scrambled Sobol)", points=qmc_points, scrambles=qmc_scrambles,
                      dimension=params.L * w)
    else:
        method = dict(method="sampled", test_samples=test_samples)
    prov = provenance(
        dict(params=params.to_dict(), alpha=alpha, d=d, n=n, config=config.to_dict(), instances=instances,
             seed=seed, test_samples=test_samples, test_error=test_error),
        seeds=dict(base_seed=seed, instance_keys="fold_in(key(seed), i)", instances=list(range(instances))),
        convergence=dict(all_converged=bool(conv.all()), converged=conv.tolist(), status=status.tolist(),
                         criterion="|grad R| <= gtol * max(1, |grad R(Q_start)|)",
                         grad_norm=out["grad_norm"].tolist(), iterations=out["iterations"].tolist()),
        test_error=dict(method, max_eps_g_se=float(out["eps_g_se"].max()),
                        max_eps_lin_se=float(out["eps_lin_se"].max())),
    )
    f = lambda k: out[k].astype(float)  # noqa: E731
    return SimulationResult(
        m=f("m"), theta=f("theta"), theta_over_sigma2=f("theta_over_sigma2"), q=f("q"), e_t=f("e_t"),
        eps_g=f("eps_g"), eps_lin=f("eps_lin"), grad_norm=f("grad_norm"),
        iterations=out["iterations"].astype(int), converged=conv,
        params=params, alpha=alpha, d=d, config=config, seed=seed, instances=instances,
        test_samples=test_samples, provenance=prov, status=status, eps_g_se=f("eps_g_se"),
        eps_lin_se=f("eps_lin_se"), test_error=test_error)


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return False
