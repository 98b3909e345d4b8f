"""The general theory engine (MODEL.md §8): batched fixed points for any L, r, r*, A, P on JAX, with
randomized-QMC expectations, integration error bars from independent scrambles, and provenance.

``solve_batch(params, alphas, branch, omegas=…, sigmas=…, lams=…)`` solves a batch of points that share the
structure (L, r, r*, A, P) together: the map over the (point, scramble) rows is ONE jit-compiled, vmapped
function; rows that have converged (or failed) drop out and the active ones are padded to a power of two
(``bucket``), so a frozen point costs nothing. Two stages: converge on the first ``QMCConfig.coarse`` points,
then on all. float64 is requested explicitly (``jax.enable_x64`` around every computation, no global switch).
Each (point, scramble) is an independent fixed point on its own point set; a point's value is the mean over
its scrambles and ``*_err`` their standard error.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import __version__, exported_programs, xla_cache
from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from . import channel_general as CG
from .collapse import collapse_record, response_record
from . import fixed_point, prox_general as PG, qmc, resolution, starts
from .ladder import LADDER_FROM, Ladder, LadderEnd
from .routing import SAFEGUARD_HALVINGS, default_backtrack
from .state import (Hats, OrderParams, align_scrambles, block_residual, canonical_gauge, flatten, invariants,
                    shapes, teacher_frame, unflatten)
from .status import Status
from .symmetry import stabiliser_projector
from .zero_point import ZERO_Q, zero_point

BRANCHES = ("semantic", "positional", "uninformative", "free")
_PINNED = {"semantic": ("M_hat",), "positional": ("theta_hat",), "uninformative": ("M_hat", "theta_hat"),
           "free": ()}
SCALARS = ("q", "m", "theta", "V")
FULL_PROX_EVERY = 16
"""Default of ``solve_batch(full_prox_every=…)``: a full multi-start prox at least every 16 map evaluations
(besides the first of each stage and the certification). Was 4; the periodic full calls only cut short a
warm iteration that follows a wrong basin, which the certification catches anyway: measured at 4096 × 4
(L = 2 both branches at ω = 0.3, 0.5, L = 3 semantic) the same iterations and values with 16 as
with 4 (±1), with 3 full evaluations instead of 4–6 (docs/notes/benchmarks-log.md, hB section)."""
SIGNIFICANCE_K = 3.0
"""Default of ``solve_batch(significance=…)``: a pinned branch's defining overlap within this many standard
errors (over the scrambles) of zero is not significantly non-zero (``Status.NOT_SIGNIFICANT``)."""
SPREAD_LIMIT = 0.25
"""Largest relative spread over the scrambles, ``std_s(Z)/‖Z̄‖_F``, of a pinned branch's defining overlap that
counts as resolved (equivalently ``t ≥ √S / SPREAD_LIMIT``). Measured: genuine branch points 0.02–0.03 (L = 2
positional, ω = 0.3, 256–1024 points); the collapsed positional branch at ω = 0.1, α = 2: 0.34–0.66."""
RESOLUTION_SHRINK = 0.5
"""A defining overlap that falls below this fraction of its coarse-stage value when the QMC points are refined
is not a fixed point of the N → ∞ map (``Status.NOT_SIGNIFICANT``; measured: genuine branch points move by
the coarse integration error, ~1e-2 relative; the collapsed positional branch at ω = 0.1, α = 2 falls to 0.3
of it from 1024 to 4096 points, docs/notes/2026-12-05-theory-general.md)."""
_DEFINING = {"positional": "M", "semantic": "theta"}
"""The overlap that defines a pinned branch (the other one is pinned to zero)."""
COARSE_RTOL = 1e-3
"""Tolerance of the coarse stage (its fixed point differs from the full one by the coarse integration error,
~1e-2 relative, so a tighter tolerance buys nothing)."""


@dataclass(frozen=True)
class QMCConfig:
    """Resolution of the QMC integrator: ``points`` Sobol points per scramble, ``scrambles`` independent
    scrambles with seeds ``seed, seed+1, …``. ``coarse``: the fixed point is first converged (to
    ``COARSE_RTOL``) on the first ``coarse`` points of each scramble (a subset of the full set: Sobol points
    are nested), then on all ``points``; 0, or a value >= ``points``, skips that stage.

    ``target > 0``: error control (:mod:`.resolution`) — a converged point whose relative standard error of
    q, m, θ, V, ε_g or e_t exceeds ``target`` is continued on more scrambles and points (nested: the first
    ``points`` of scramble s stay among the larger set) up to ``max_scrambles`` and ``max_points`` (None: the
    structure's cap :func:`resolution.default_max_points`, set by ``solve_batch``); the sizes
    and errors reached are in ``GeneralSolution.resolution``. 0 (the default of a hand-made config): the size
    is fixed. :meth:`default` is the engine's default rule."""

    points: int = qmc.DEFAULT_POINTS
    scrambles: int = qmc.DEFAULT_SCRAMBLES
    seed: int = 0
    coarse: int = qmc.DEFAULT_COARSE
    target: float = 0.0
    max_points: int | None = None
    max_scrambles: int = resolution.MAX_SCRAMBLES

    @classmethod
    def default(cls) -> "QMCConfig":
        """The engine's default: 4096 points × 4 scrambles (coarse stage 1024), grown until every relative
        standard error is below ``resolution.DEFAULT_TARGET`` (5e-3/3), at most 8 scrambles and the structure's
        ``resolution.default_max_points`` (65536 at L = 2, r = 1)."""
        return cls(target=resolution.DEFAULT_TARGET)

    def __post_init__(self) -> None:
        n = check_int("qmc_points", self.points, 2)
        if n & (n - 1):
            raise ParameterError("qmc_points", "a power of two >= 2 (Sobol balance)", n)
        if check_int("scrambles", self.scrambles, 1) < 2:
            raise ParameterError("scrambles", "an integer >= 2 (the error bar needs two)", self.scrambles)
        check_int("seed", self.seed, 0)
        c = check_int("coarse", self.coarse, 0)
        if c and c & (c - 1):
            raise ParameterError("coarse", "0 or a power of two (Sobol balance)", c)
        check_range("target", self.target, lo=0.0)
        if self.max_points is not None:
            mp = check_int("max_points", self.max_points, 2)
            if mp & (mp - 1):
                raise ParameterError("max_points", "a power of two >= 2 (Sobol balance)", mp)
        check_int("max_scrambles", self.max_scrambles, 2)

    def grown(self, ratio: float) -> "QMCConfig | None":
        """The next size for a relative error ``ratio`` × the target (:func:`resolution.grown_size`), no coarse
        stage (the start is a converged fixed point); None at the caps."""
        cap = resolution.MAX_POINTS if self.max_points is None else self.max_points
        size = resolution.grown_size(self.points, self.scrambles, ratio, cap, self.max_scrambles)
        return None if size is None else replace(self, points=size[0], scrambles=size[1], coarse=0)

    @property
    def stages(self) -> tuple[int, ...]:
        """Point counts of the stages: (coarse, points), or (points,) without a coarse stage."""
        return (self.coarse, self.points) if 0 < self.coarse < self.points else (self.points,)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.scrambles))


@dataclass(frozen=True)
class GeneralSolution:
    """One point: mean over scrambles and standard errors (``*_err``). Values are NaN unless ``status`` is
    CONVERGED (an unconverged point is reported, never a result), or COLLAPSED onto the q = 0 point
    (``significance["zero_q"]``, :func:`zero_q_record`: a fixed point, its values kept); ``last`` keeps the last
    iterate otherwise.
    ``significance``: the test of the pinned branch's defining overlap (:func:`overlap_significance`; None
    where it does not apply); a point that fails it has status ``NOT_SIGNIFICANT``. ``resolution``: the error
    control's record (target, the QMC sizes tried with their worst relative standard error, ``met``,
    ``capped``; None for a fixed size, :func:`_refine`). ``iteration``: damping asked and in use at the end
    (the safeguard of ``fixed_point.iterate`` may lower it), its halvings, the Anderson depth.
    ``stability``: the growth factor of the pinned direction (:func:`stability_general.pinned_growth`: growth,
    growth_err, stable True/False/None, verdict, reason, …); None on the free branch or when not asked for.
    ``scramble_x``: the per-scramble converged states (S, n), flattened, each in its own map's gauge (not
    aligned: the state the scramble's map was iterated to; not in the JSON); ``coarse_scramble_x``: the same at the
    end of the coarse stage (its last iterates, converged or not; None without a coarse stage).
    ``verdict``: the free branch's verdict (:mod:`.free_verdict`: is the iteration on a pinned point?); None
    where it does not apply."""

    params: ModelParams
    alpha: float
    branch: str
    status: Status
    iterations: int
    residual: float
    x: OrderParams
    hats: Hats
    values: dict
    errors: dict
    integrator: str = "qmc"
    qmc: QMCConfig = field(default_factory=QMCConfig)
    max_grad: float = float("nan")
    last: OrderParams | None = None
    full_prox_every: int = 1
    full_prox_calls: int = 0
    iteration: dict | None = None
    significance: dict | None = None
    even: bool = False
    resolution: dict | None = None
    stability: dict | None = None
    scramble_x: np.ndarray | None = field(default=None, repr=False)
    coarse_scramble_x: np.ndarray | None = field(default=None, repr=False)
    verdict: dict | None = None
    version: str = __version__

    @property
    def converged(self) -> bool:
        return self.status is Status.CONVERGED

    def __getattr__(self, name: str):
        v = self.__dict__.get("values")
        if v is not None and name in v:
            return v[name]
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the scalar keys (q = tr q, m = ‖M‖_F, theta = ‖θ‖_F, V = tr V, eps_g, e_t, …), the
        full matrices, ``*_err`` and provenance."""
        d: dict[str, Any] = {"alpha": self.alpha, "branch": self.branch, "omega": self.params.omega}
        d.update({k: float(v) for k, v in self.values.items() if np.ndim(v) == 0})
        d.update({f"{k}_err": float(v) for k, v in self.errors.items() if np.ndim(v) == 0})
        d.update(converged=self.converged, status=self.status.value, iterations=self.iterations,
                 residual=self.residual, max_grad=self.max_grad, start=(self.iteration or {}).get("start"))
        st = self.stability          # the split rule's scalar keys (stability = growth factor, stable), + error
        d.update(stability=None if st is None else st["growth"], stability_err=None if st is None else st["growth_err"],
                 stable=None if st is None else st["stable"])
        d["matrices"] = {**{k: np.asarray(v).tolist() for k, v in self.x._asdict().items()},
                         **{k: np.asarray(v).tolist() for k, v in self.hats._asdict().items()},
                         "q_eig": np.asarray(self.values["q_eig"]).tolist(),
                         "theta_sv": np.asarray(self.values["theta_sv"]).tolist()}
        d["provenance"] = {"params": self.params.to_dict(), "integrator": self.integrator,
                           "qmc_points": self.qmc.points, "scrambles": self.qmc.scrambles,
                           "seeds": list(self.qmc.seeds),
                           "coarse_points": self.qmc.stages[0] if len(self.qmc.stages) > 1 else 0,
                           "coarse_rtol": COARSE_RTOL, "version": self.version,
                           "newton": {"scout": PG.SCOUT_STEPS, "polish": PG.POLISH_STEPS,
                                      "random_starts": PG.RANDOM_STARTS, "gtol": PG.GTOL,
                                      "derivatives": "closed form, unrolled (prox_general.moreau_terms)",
                                      "full_prox_every": self.full_prox_every,
                                      "full_prox_calls": self.full_prox_calls,
                                      "certified_by": "global multi-start prox"},
                           "iteration": self.iteration,
                           "significance": None if self.significance is None else dict(self.significance),
                           "ansatz": "even in the signal-free directions (engine.even_hats)" if self.even else None,
                           "resolution": self.resolution,
                           "stability": None if self.stability is None else dict(self.stability),
                           "free_verdict": self.verdict}
        return d


def default_init(params: ModelParams, branch: str, alpha: float | None = None) -> OrderParams:
    """A starting point on the branch's subspace derived from the model at ``alpha`` (σ, λ, ω, A, P, α;
    :func:`starts.model_start`: the split-rule start's magnitudes for any L, r, r*, V from the prior side).

    Before (issue 11): magnitudes fixed in units of σ, measured at σ = 0.5, λ = 0.01 (V = 44–48 σ², now
    :func:`starts.reference_start`, the second start); e.g. L = 2, λ = 0.001, α = 2 semantic went
    ``invalid_state`` from it and converges from the model start (docs/notes/2026-12-05-theory-general.md, "Starts away from
    σ = 0.5, λ = 0.01")."""
    return starts.model_start(params, branch, alpha)


def _pin(h: Hats, branch: str) -> Hats:
    return h._replace(**{name: jnp.zeros_like(getattr(h, name)) for name in _PINNED[branch]})


def teacher_pin(h: Hats) -> Hats:
    """A student of lower rank than the teacher (r < r*): θ̂'s columns beyond the r-th set to 0 (MODEL.md §8).
    T depends on h* only through h* h*ᵀ, so the teacher's rotations ``Q* → Q* O`` (O ∈ O(r*)) map fixed points
    to fixed points (``θ → θO``, ``θ̂ → θ̂O``): every fixed point has a copy with ``θ = [θ_r, 0]`` (rotate
    θ's r-dimensional row space onto the first r teacher axes, :func:`state.teacher_frame`). On that subspace
    the teacher's further columns are pure noise (``h*_c = σ y_c``) and their reflection ``y_c → −y_c`` is a
    symmetry, so ``E[g y_c] = 0``: the subspace is invariant and its θ̂ columns vanish in expectation. Without
    the pin the QMC map (whose points break the rotation) lets θ turn slowly along the circle of copies and
    each scramble settles at its own angle (docs/notes/2026-12-05-theory-general.md, "A student of lower rank than the
    teacher"). No-op for r >= r*."""
    r, rs = h.theta_hat.shape
    if rs <= r:
        return h
    return h._replace(theta_hat=h.theta_hat.at[:, r:].set(0.0))


def signal_rank(branch: str, r: int, k: int, rs: int) -> int | None:
    """Student directions a pinned branch's signal can use: min(r, r*) semantic, min(r, k) positional, 0
    uninformative; None for ``free`` (no reflection ansatz there)."""
    return {"semantic": min(r, rs), "positional": min(r, k), "uninformative": 0}.get(branch)


def even_hats(h: Hats, rho: int) -> Hats:
    """Project the hats onto the states invariant under reflecting each student direction j >= ``rho``
    (``Q e_j → −Q e_j``, a case of the gauge ``Q → QO``, a symmetry for every A, P, MODEL.md §8): those
    directions carry no signal (θ̂_j = M̂_j = 0) and no cross terms (q̂, V̂ diagonal in them). In the canonical
    gauge the signal lies in directions < rho, so a pinned branch's fixed point is even in the others; the
    discretised map is only even up to QMC noise, and that noise in the odd sector (q₀₁, V₀₁: a soft direction
    of the map) kept the r = 2 pinned branches from converging (docs/notes/2026-12-05-theory-general.md)."""
    r = h.q_hat.shape[0]
    keep = jnp.asarray([[i == j or (i < rho and j < rho) for j in range(r)] for i in range(r)], h.q_hat.dtype)
    sig = jnp.asarray([[1.0] if i < rho else [0.0] for i in range(r)], h.q_hat.dtype)
    return h._replace(q_hat=h.q_hat * keep, V_hat=h.V_hat * keep, theta_hat=h.theta_hat * sig, M_hat=h.M_hat * sig)


def _compiled_map(L: int, r: int, rs: int, k: int, A: tuple, P: tuple, branch: str, warm: bool = False,
                  even: bool = False, gauge: bool = True, m_proj: tuple | None = None):
    """:func:`_stored_map` with every argument passed by position, so that one structure has one cache entry
    however the caller spells it (``lru_cache`` keys keyword and positional calls apart: a second entry is a
    second program, traced or loaded again)."""
    return _stored_map(L, r, rs, k, A, P, branch, bool(warm), bool(even), bool(gauge), m_proj)


@lru_cache(maxsize=32)
def _stored_map(L: int, r: int, rs: int, k: int, A: tuple, P: tuple, branch: str, warm: bool, even: bool,
                gauge: bool, m_proj: tuple | None):
    """The jit-compiled map over rows (point, scramble): X (R, n), knobs (R,), scramble index (R,) into the point
    sets xi (S, N, L, r), y (S, N, L, r*), and the previous minimisers h (R, N, 2, L, r) (used by the ``warm``
    map only: :func:`prox_general.prox_warm` instead of the global multi-start prox). One compiled function
    per structure and tier; jax caches its executables per shape (R, N). ``even``: the reflection ansatz
    (:func:`even_hats`) on the hats after pinning. ``gauge=False``: no gauge fixing at r > 1 (the map stays
    equivariant under ``Q → QO`` and smooth across the pinned subspaces: :mod:`.stability_general`).
    ``m_proj`` (k×k, nested tuples): M̂ is projected onto the subspace a symmetry of the start fixes
    (:func:`symmetry.stabiliser_projector`, ``M̂ → M̂ Π``; :func:`solve_batch`'s ``symmetric``).

    Returned as a :class:`attnphase.exported_programs.StoredProgram`: traced once with symbolic sizes
    (:data:`MAP_AXES`) and kept on disk, so that a fresh process loads the program instead of tracing it (the
    same numbers, bit for bit; ``ATTNPHASE_EXPORTED=off`` traces it in every process as before;
    docs/notes/2026-12-05-theory-general.md, "Fresh-process latency (issue 11, helper hA)")."""
    xla_cache.enable()
    A_, P_ = np.asarray(A), np.asarray(P)
    Pi = None if m_proj is None else jnp.asarray(np.asarray(m_proj, float))
    offsets = PG.start_offsets(L, r)

    def one(xf, knobs, s, xi_all, y_all, h_prev):
        xi, y = xi_all[s], y_all[s]
        x = unflatten(xf, r, k, rs)
        out = CG.channel(x, knobs, xi, y, A_, P_, offsets, h_prev if warm else None)
        hats = _pin(out.hats, branch)
        if Pi is not None:             # the start's symmetry: M̂ in its fixed subspace
            hats = hats._replace(M_hat=hats.M_hat @ Pi)
        if gauge:                      # r < r*: the teacher-side gauge (θ in the first r teacher directions)
            hats = teacher_pin(hats)
        if even:
            hats = even_hats(hats, signal_rank(branch, r, k, rs))
        fx = CG.prior(hats, knobs)
        if r > 1 and gauge:            # fix the gauge Q → QO (checked: the map commutes with it, tests)
            fx = canonical_gauge(fx, ref=x)   # free signs aligned with the input (state.canonical_gauge)
        aux = {"hats": flatten(hats), "EM": out.EM, "eps_g": out.eps_g, "max_grad": out.max_grad,
               "e_t": -CG.free_energy(x, hats, out.EM, knobs)}
        return flatten(fx), CG.valid(x, hats, knobs), aux, out.h

    fn = jax.jit(jax.vmap(one, in_axes=(0, 0, 0, None, None, 0 if warm else None)))
    static = (L, r, rs, k, A, P, branch, warm, even, gauge, m_proj)
    return exported_programs.StoredProgram("engine._compiled_map", fn, static, MAP_AXES)


_compiled_map.cache_clear = _stored_map.cache_clear      # type: ignore[attr-defined]


MAP_AXES = (("R", None), ("R",), ("R",), ("S", "N", None, None), ("S", "N", None, None),
            ("R", "N", None, None, None))
"""Axes of the map's arguments (X, knobs, scramble index, xi, y, previous minimisers) that change size between
calls: rows R, scrambles S, QMC points N — one stored program (:mod:`attnphase.exported_programs`) serves
every row count and QMC size of a structure."""


MIN_BUCKET = 8
"""Fewest rows a compacted map call is padded to (each new row count costs one compilation)."""


def bucket(n: int, total: int) -> int:
    """Padded row count for ``n`` active rows out of ``total``: the next power of two, at least ``MIN_BUCKET``,
    at most ``total`` (few distinct shapes, few compilations; at most 2× the work of the active rows, against
    all ``total`` rows without compaction)."""
    return min(total, max(MIN_BUCKET, 1 << max(0, int(n - 1).bit_length())))


def padded_rows(n: int, total: int, chunk: int) -> int:
    """Rows a map call on ``n`` active rows of ``total`` computes: :func:`bucket`, rounded up to a multiple of
    ``chunk`` (the rows per compiled call) when it exceeds it."""
    R = bucket(n, total)
    return -(-R // chunk) * chunk if R > chunk else R


def _points(params: ModelParams, cfg: QMCConfig):
    L, r, rs = params.L, params.r, params.r_star
    Z = qmc.scrambles(L * (r + rs), cfg.points, cfg.seeds)          # (S, N, L(r + r*))
    return Z[..., :L * r].reshape(cfg.scrambles, cfg.points, L, r), \
        Z[..., L * r:].reshape(cfg.scrambles, cfg.points, L, rs)


def _as_batch(name, values, B):
    a = np.atleast_1d(np.asarray(values, dtype=np.float64))
    if a.size == 1:
        a = np.full(B, a[0])
    if a.shape != (B,):
        raise ParameterError(name, f"a number or a sequence of {B} numbers (one per alpha)", values)
    return a


def solve_batch(params: ModelParams, alphas: Sequence[float] | float, branch: str = "semantic", *,
                omegas=None, sigmas=None, lams=None, init: OrderParams | Sequence[OrderParams] | None = None,
                qmc_config: QMCConfig | None = None, rtol: float = 1e-5, max_steps: int = 200,
                damping: float | None = None, anderson: int = 5,
                full_prox_every: int = FULL_PROX_EVERY,
                significance: float = SIGNIFICANCE_K, even: bool | None = None,
                backtrack: int | None = None, stability: bool = True, free_verdict: bool = True,
                symmetric: bool | None = None,
                progress: resolution.ProgressCallback | None = None) -> list[GeneralSolution]:
    """Solve the fixed point of MODEL.md §8 at a batch of points (α, ω, σ, λ) sharing (L, r, r*, A, P).

    ``omegas``, ``sigmas``, ``lams`` default to ``params``'; each may be one number or one per α. ``init``:
    one state for all points, or one per point (default :func:`default_init`, the model start at each point's
    ω, σ, λ, α; a point that fails from it — ``RETRY`` — is solved again from the reference start,
    :func:`_other_starts`, and ``iteration["start"]`` says which start the result came from). Returns one
    :class:`GeneralSolution` per point, with its own status.

    ``qmc_config``: the integrator's size; default :meth:`QMCConfig.default` (4096 × 4, grown per point until
    the relative standard errors are below 5e-3/3, :mod:`.resolution`). A config with ``target = 0`` keeps
    its size.

    ``full_prox_every``: the QMC points are fixed during a stage, so most evaluations run ONE warm Newton per
    sample from its previous minimiser (:func:`prox_general.prox_warm`); the global multi-start prox runs on
    the first evaluation of each stage, at least every ``full_prox_every`` evaluations, and on the evaluation
    that certifies the fixed point (``fixed_point.iterate``: a point converges only on a full evaluation, so
    the returned point is a fixed point of the global-prox map). 1: every evaluation full (the scheme before).

    ``significance``: k of the test that a pinned branch's defining overlap is non-zero
    (:func:`overlap_significance`); a converged point that fails it is reported ``NOT_SIGNIFICANT`` (NaN
    values, the iterate in ``last``), never as a branch point. 0 switches the test off.

    ``even``: the reflection ansatz (:func:`even_hats`) — a pinned branch's fixed point is sought among the
    states even in the student directions its signal does not use. Default (None): on for pinned branches
    with such directions at r > 1 (r > rank of the signal), off otherwise; recorded in the provenance.

    ``damping``: weight of the new map value; default (None) :func:`default_damping` (0.6, lowered where the
    positional encodings are larger than the paper's).

    ``backtrack``: the safeguard of ``fixed_point.iterate`` — per row, up to this many halvings of the damping
    when an evaluation is invalid (back to the last valid iterate) or a mode oscillates with a growing
    residual; 0 switches it off; default (None): ``routing.default_backtrack`` (on at r > 1, off at r = 1).
    The damping in use at the end is in ``GeneralSolution.iteration``.

    ``stability``: on a pinned branch, the growth factor of the pinned direction at every converged point
    (:func:`stability_general.pinned_growth`, on the final QMC size; one batched map call) goes into
    ``GeneralSolution.stability``; a point that did not converge gets a record with ``stable = None`` and the
    reason; the free branch None (no pinned direction).

    ``free_verdict``: on the free branch, a point that ended ``max_steps`` or converged within reach of a
    pinned subspace is compared with that pinned branch at the same α on the same QMC points
    (:func:`free_verdict.apply`: one pinned solve per branch and size, with its stability); where the free
    iterate sits on a converged, stable pinned point and its pinned overlap is an integration artefact, the
    status is ``ON_PINNED`` (no values; the pinned point's values in ``verdict``); else the status stays, with
    the evidence in ``verdict``.

    ``symmetric``: on the positional branch (default None: on there, off elsewhere), M̂ is projected onto the
    subspace fixed by the token exchanges that fix every start's M (:func:`symmetry.stabiliser_projector`;
    none: no projection). The exact map keeps that subspace (it is equivariant), so its fixed points there
    are fixed points; the projection only removes the QMC noise across it. Needed where the positional
    branch leaves q = 0 along a degenerate direction (L = 3, A = 0.4 I + 0.2 J, P = I: M ⟂ (1, 1, 1), a
    plane in which the map is isotropic to order |M|⁵): without it every scramble drifted along the plane
    and λ = 0.09, α = 2 ended ``max_steps`` (docs/notes/2026-12-05-theory-general.md, "The engine next to a q = 0 onset").
    ``iteration["m_symmetry"]`` records the exchanges (None: no projection).

    ``progress``: called with a :class:`resolution.Progress` when the first size starts, whenever the error
    control starts a larger size, and at the end (the library prints nothing itself).
    """
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if branch not in BRANCHES:
        raise ParameterError("branch", f"one of {', '.join(BRANCHES)}", branch)
    qmc_config = QMCConfig.default() if qmc_config is None else qmc_config
    if not isinstance(qmc_config, QMCConfig):
        raise ParameterError("qmc_config", "a QMCConfig (or None for the default)", type(qmc_config).__name__)
    if qmc_config.max_points is None:
        qmc_config = replace(qmc_config, max_points=resolution.default_max_points(params.L, params.r))
    al = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    B = al.size
    for a in al:
        check_range("alpha", a, lo=0.0, lo_open=True)
    om = _as_batch("omegas", params.omega if omegas is None else omegas, B)
    sg = _as_batch("sigmas", params.sigma if sigmas is None else sigmas, B)
    lm = _as_batch("lams", params.lam if lams is None else lams, B)
    for i in range(B):
        check_range("omega", om[i], lo=0.0, hi=1.0)
        check_range("sigma", sg[i], lo=0.0, lo_open=True)
        check_range("lam", lm[i], lo=0.0)
    full_prox_every = check_int("full_prox_every", full_prox_every, 1)
    backtrack = default_backtrack(params) if backtrack is None else check_int("backtrack", backtrack, 0)
    significance = check_range("significance", significance, lo=0.0)
    rho = signal_rank(branch, params.r, params.k, params.r_star)
    if even is None:
        even = rho is not None and params.r > max(rho, 1)
    elif even and (rho is None or params.r <= rho):
        raise ParameterError("even", "False for this branch and rank (no student direction free of signal)", even)
    S = qmc_config.scrambles
    inits = init if isinstance(init, (list, tuple)) and init and isinstance(init[0], OrderParams) else [init] * B
    if len(inits) != B:
        raise ParameterError("init", f"one OrderParams or {B} of them", len(inits))
    x0 = np.stack([start_vector(default_init(params.replace(omega=float(om[i]), sigma=float(sg[i]),
                                                            lam=float(lm[i])), branch, al[i])
                                if inits[i] is None else inits[i]) for i in range(B)])
    m_sym = None
    if symmetric or (symmetric is None and branch == "positional"):
        m_sym = stabiliser_projector(params, [unflatten(x, params.r, params.k, params.r_star).M for x in x0])
    auto_damping = damping is None
    damping = default_damping(params, branch) if auto_damping else check_range("damping", damping, lo=0.0,
                                                                             lo_open=True, hi=1.0)
    job = _Job(params, branch, al, om, sg, lm, rtol, max_steps, damping, anderson, full_prox_every,
               significance, bool(even), backtrack, auto_damping=auto_damping,
               m_proj=None if m_sym is None else tuple(map(tuple, np.round(m_sym[0], 15).tolist())),
               m_fixed_by=None if m_sym is None else tuple(m_sym[1]))
    if progress is not None:
        progress(resolution.Progress("solve", qmc_config.points, qmc_config.scrambles, math.nan,
                                     qmc_config.target, points_pending=B))
    with jax.enable_x64(True):
        sols, xs, hist = job.run(np.arange(B), np.repeat(x0[:, None, :], S, axis=1), qmc_config,
                                 qmc_config.stages)
        cold = [i for i in range(B) if inits[i] is None]
        sols, xs, hist = _other_starts(job, cold, sols, xs, hist, qmc_config, progress)
        sols, xs, hist = _continue_in_scale(job, cold, sols, xs, hist, qmc_config, progress)
        sols, xs, hist = _continue_in_alpha(job, cold, sols, xs, hist, qmc_config, progress)
        sols, xs, hist = _continue_down_in_alpha(job, cold, sols, xs, hist, qmc_config, progress)
        if qmc_config.target > 0:
            sols = _refine(job, sols, xs, hist, qmc_config, progress)
        if free_verdict and branch == "free":
            from .free_verdict import apply   # imports engine: deferred to avoid a cycle
            sols = apply(sols, max_steps=max_steps, k_se=significance or SIGNIFICANCE_K)
        if stability and branch != "free":
            from .stability_general import pinned_growth     # imports engine: deferred to avoid a cycle
            sols = [replace(s, stability=rec) for s, rec in zip(sols, pinned_growth(sols))]
    if progress is not None:
        progress(resolution.final_progress(sols, qmc_config.target))
    return sols


def start_vector(x: OrderParams) -> np.ndarray:
    """A start as the iteration's flat state: float arrays, θ in the teacher frame at r < r*
    (:func:`state.teacher_frame`, the subspace the map keeps it in: :func:`teacher_pin`)."""
    return np.asarray(flatten(teacher_frame(OrderParams(*(np.asarray(b, float) for b in x)))))


RETRY = (Status.MAX_STEPS, Status.INVALID_STATE, Status.DIVERGED)
"""Statuses after which a point solved from its default start is solved again from the next of
:func:`starts.start_candidates` (the other statuses are verdicts: converged, not_significant, collapsed)."""


def _other_starts(job: "_Job", free: list[int], sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig,
                  progress=None):
    """Points of ``free`` (solved from the default start) whose solve failed (``RETRY``) go through the next
    start of :func:`starts.start_candidates` (one batch per start); a retry's result replaces the first only
    if it is not a failure itself. ``iteration["start"]`` records the start of every returned point.
    ``progress``: a ``"start"`` report before each batch."""
    sols = [replace(s, iteration={**(s.iteration or {}), "start": "model" if i in free else "given"})
            for i, s in enumerate(sols)]
    S = cfg.scrambles
    dX, dF = list(hist[0]), list(hist[1])
    for n in range(1, 4):
        todo, x0, names = [], [], []
        for i in free:
            if sols[i].status not in RETRY:
                continue
            p = job.point_params(i)
            cand = starts.start_candidates(p, job.branch, float(job.al[i]))
            if n < len(cand):
                todo.append(i)
                names.append(cand[n][0])
                x0.append(start_vector(cand[n][1]))
        if not todo:
            break
        if progress is not None:
            progress(resolution.Progress("start", cfg.points, cfg.scrambles, math.nan, cfg.target, note=(
                f"{len(todo)} point(s) failed: solving again from start {n + 1} ({', '.join(sorted(set(names)))})")))
        new, nx, nh = job.run(np.asarray(todo), np.repeat(np.stack(x0)[:, None, :], S, axis=1), cfg, cfg.stages)
        for j, i in enumerate(todo):
            if new[j].status in RETRY:
                continue
            sols[i] = replace(new[j], iteration={**new[j].iteration, "start": names[j]})
            xs[i] = nx[j]
            dX[i * S:(i + 1) * S], dF[i * S:(i + 1) * S] = nh[0][j * S:(j + 1) * S], nh[1][j * S:(j + 1) * S]
    return sols, xs, (dX, dF)


DAMPING = 0.6
"""Damping (weight of the new map value) of the engine's iteration at the paper's encodings."""
SCALE_RATIO = 1.25
"""Largest ratio between successive encoding scales of :func:`_continue_in_scale`."""


def default_damping(params: ModelParams, branch: str) -> float:
    """``DAMPING``, divided by c² on the branches with a positional overlap (positional, free) where the
    encodings' scale c = :func:`starts.encoding_scale` exceeds 1: the map's leading eigenvalue, along M, grows
    like c² (measured at L = 2, ω = 0.3, α = 1.5, P = c·(1, −1)ᵀ: −4.6, −9.6, −16.6 at c = 1, 1.5, 2), and the
    damped factor 1 − β(1 − λ) of that mode stays as at the paper's P (docs/notes/2026-12-05-theory-general.md, "Large α and
    larger encodings in the engine")."""
    c = starts.encoding_scale(params)
    return DAMPING / max(1.0, c * c) if branch in ("positional", "free") else DAMPING


def _ladder_points(job: "_Job", todo: list[int]):
    """``sub(pts, value, **changes)``: the job of the points ``todo[pts]`` with every α set to ``value`` (or
    with ``changes``, e.g. other params)."""
    idx = np.asarray(todo)

    def sub(pts, alpha=None, **changes):
        al = job.al[idx[pts]] if alpha is None else np.full(len(pts), float(alpha))
        return replace(job, al=al, om=job.om[idx[pts]], sg=job.sg[idx[pts]], lm=job.lm[idx[pts]],
                       backtrack=max(job.backtrack, SAFEGUARD_HALVINGS), **changes)
    return sub


def _ladder_base(base: "_Job", cfg: QMCConfig, progress=None):
    """The first rung of a continuation: ``base``'s points from their model starts (then the other starts) on
    the first ``cfg.stages[0]`` points of each scramble (``progress``: the other starts' reports). Returns
    (solutions, per-scramble states (b, S, n))."""
    low = replace(cfg, points=cfg.stages[0], coarse=0, target=0.0)      # nested: the same first points
    b = len(base.al)
    x0 = np.stack([start_vector(default_init(base.point_params(j), base.branch, float(base.al[j])))
                   for j in range(b)])
    got, state, _ = base.run(np.arange(b), np.repeat(x0[:, None, :], cfg.scrambles, axis=1), low, low.stages)
    got, state, _ = _other_starts(base, list(range(b)), got, state, ((), ()), low, progress)
    return got, state


def _climb(step, lads: list, todo: list[int], state: np.ndarray, sols: list, xs: np.ndarray, hist: tuple,
           cfg: QMCConfig, low: QMCConfig | None = None, from_mean: ModelParams | None = None, progress=None,
           extend: float | None = None):
    """Follow each point's :class:`.ladder.Ladder` from the converged first rung (per-scramble states
    ``state``), every step warm-started from the last; ``step(pts, value)`` is the job of the points
    ``todo[pts]`` at the ladder's ``value``. Points at the same value go through one batch; the steps below the
    target on the first ``cfg.stages[0]`` points of each scramble (the same points: Sobol points are nested),
    the step to the target through ``cfg.stages``. A point that gets there takes that step's solution,
    ``iteration["start"]`` saying how; else it keeps its solution, and if that is not converged,
    ``iteration["continuation"]`` says where the continuation stopped. ``low``: the size of the steps below
    the target instead (and the last step on ``cfg``'s points only, no coarse stage). ``from_mean`` (the
    model): every scramble starts a step from the scrambles' mean state of the last (:func:`_aligned_mean`)
    instead of its own. ``progress`` (the engine's callback): every ladder's steps as ``"continuation"``
    reports (:meth:`.ladder.Ladder.report`). ``extend``: a step that ends ``max_steps`` below this residual
    iterates once more from where it stopped (:func:`_extend_slow`) before it counts as failed."""
    S = cfg.scrambles
    for lad in lads:
        if progress is not None and lad.progress is None:
            lad.progress = _ladder_progress(progress, cfg)
        if lad.started:
            lad.report("started")
    if low is not None:
        cfg = replace(cfg, coarse=0)
    low = replace(cfg, points=cfg.stages[0], coarse=0, target=0.0) if low is None else low
    dX, dF = list(hist[0]), list(hist[1])
    while climbing := [j for j, lad in enumerate(lads) if lad.climbing]:
        groups: dict = {}
        for j in climbing:
            v = lads[j].next_value()
            groups.setdefault((v, v == lads[j].target), []).append(j)
        for (v, final), grp in groups.items():
            c, pts = (cfg if final else low), np.asarray(grp)
            new, nx, nh = step(pts, v).run(np.arange(len(grp)), state[pts], c, c.stages)
            if extend is not None:
                new, nx, nh = _extend_slow(step(pts, v), new, nx, nh, c, extend)
            for k, j in enumerate(grp):
                ok = new[k].status is Status.CONVERGED
                lads[j].record(v, ok, None if ok else _step_failure(new[k]), partial=_partial_failure(new[k]))
                if ok:
                    state[j] = nx[k] if from_mean is None else np.repeat(_aligned_mean(nx[k], from_mean), S, 0)
                if ok and final:
                    i = todo[j]
                    sols[i] = replace(new[k], iteration={**new[k].iteration, "start": lads[j].start_note()})
                    xs[i] = nx[k]
                    dX[i * S:(i + 1) * S], dF[i * S:(i + 1) * S] = nh[0][k * S:(k + 1) * S], nh[1][k * S:(k + 1) * S]
    for j, i in enumerate(todo):
        if not lads[j].reached and sols[i].status is not Status.CONVERGED:
            sols[i] = replace(sols[i], iteration={**(sols[i].iteration or {}), "continuation": lads[j].stop_note(),
                                                  "continuation_started": lads[j].started})
    return sols, xs, (dX, dF)


def _extend_slow(job: "_Job", new: list, nx: np.ndarray, nh: tuple, cfg: QMCConfig, tol: float):
    """Points of ``job`` (its run gave ``new``, states ``nx``, secant pairs ``nh``) that ended ``max_steps`` with
    every scramble's residual below ``tol`` iterate once more (``max_steps`` again, on ``cfg``'s last stage) from
    their last iterates and secant pairs: near a branch end the map contracts slowly (measured at r = 2, r* = 3:
    4.5 → 3 stopped at 230 iterations with one scramble at residual 3.6e-5, and α = 3 converges). The result
    replaces the first; ``iteration["extended"]`` marks it."""
    slow = [k for k, x in enumerate(new) if x.status is Status.MAX_STEPS and x.residual < tol]
    if not slow:
        return new, nx, nh
    S = cfg.scrambles
    rows = [k * S + s_ for k in slow for s_ in range(S)]
    pts = np.asarray(slow)
    more, mx, mh = job.run(pts, nx[pts], cfg, (cfg.stages[-1],), hist=([nh[0][r] for r in rows],
                                                                       [nh[1][r] for r in rows]))
    new, nx, dX, dF = list(new), np.array(nx), list(nh[0]), list(nh[1])
    for m, k in enumerate(slow):
        new[k] = replace(more[m], iterations=new[k].iterations + more[m].iterations,
                         iteration={**more[m].iteration, "extended": True})
        nx[k] = mx[m]
        dX[k * S:(k + 1) * S], dF[k * S:(k + 1) * S] = mh[0][m * S:(m + 1) * S], mh[1][m * S:(m + 1) * S]
    return new, nx, (dX, dF)


def _step_failure(sol: GeneralSolution) -> str:
    """How a continuation's step failed, in a few words: status, failed scrambles, iterations, residual."""
    bad = (sol.iteration or {}).get("failed_scrambles", [])
    what = f"{sol.status.value}, {len(bad)} of {sol.qmc.scrambles} scrambles" if bad else sol.status.value
    return f"{what}, {sol.iterations} iterations, residual {sol.residual:.2g}"


def _partial_failure(sol: GeneralSolution) -> bool:
    """A failed step where some scrambles converged (only the others failed)."""
    bad = (sol.iteration or {}).get("failed_scrambles", [])
    return sol.status is not Status.CONVERGED and 0 < len(bad) < sol.qmc.scrambles


def _ladder_progress(progress, cfg: QMCConfig):
    """The :class:`.ladder.Ladder`'s ``progress`` (one string) as the engine's ``"continuation"`` report."""
    return lambda text: progress(resolution.Progress("continuation", cfg.points, cfg.scrambles, math.nan,
                                                     cfg.target, note=text))


def _continue_in_alpha(job: "_Job", cold: list[int], sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig,
                       progress=None):
    """Points of ``cold`` (solved from the default starts) at α > ``LADDER_FROM`` that still failed (``RETRY``):
    the starts are fitted at α ≤ 2 and far off at α = 10 (issue 11 audit). Each is solved at ``LADDER_FROM``
    (:func:`_ladder_base`) and followed up in α (:func:`_climb`, the schedule of :class:`.ladder.Ladder` as
    the split rule's ``solve_point(continuation=True)``), with the safeguard on (at r = 1 the map's oscillating
    mode at large α outgrows the damping: steps of ratio 1.5 from converged points failed without it).
    ``iteration["start"]``: ``continuation from α = 2 (n steps)``."""
    todo = [i for i in cold if sols[i].status in RETRY and job.al[i] > LADDER_FROM]
    if not todo:
        return sols, xs, hist
    sub = _ladder_points(job, todo)
    everyone = np.arange(len(todo))
    got, state = _ladder_base(sub(everyone, LADDER_FROM), cfg, progress)
    lads = [Ladder(float(job.al[i]), started=got[j].status is Status.CONVERGED) for j, i in enumerate(todo)]
    return _climb(sub, lads, todo, state, sols, xs, hist, cfg, progress=progress)


DOWN_FACTOR = 1.5
""":func:`_continue_down_in_alpha` follows a failed semantic point at α down from max(α × this, 2 ×
``LADDER_FROM``) (the model's starts are fitted at α ≤ 2; at r = 2, r* = 3 the full-signal start converges
at α = 4, 4.5)."""
DOWN_BRACKET_TOL = 1e-2
"""The descent stops once the branch's end is bracketed within this (relative: upper/lower − 1)."""
DOWN_MAX_STEPS = 24
"""Most steps of one descent (from α = 4 to 0.1 at ratio 1.5: 10; a bisection from ratio 1.5 to 1 %: 6)."""
DOWN_EXTEND_RESIDUAL = 1e-3
"""A descent step that ends ``max_steps`` with every residual below this iterates once more before it counts as
failed (:func:`_extend_slow`; measured: 3.6e-5 at α = 3, which converges; beyond the end, at α = 2.75, 7e-3 –
1.3e-2)."""
DOWN_MAX_WALL = 1800.0
"""Most seconds the descents of one batch may take, all together (checked between steps)."""


def _down_key(job: "_Job", i: int) -> tuple:
    """The model of point ``i`` (ω, σ, λ): points of one model share a descent (:func:`_continue_down_in_alpha`)."""
    return (float(job.om[i]), float(job.sg[i]), float(job.lm[i]))


def _down_top(job: "_Job", i: int) -> float:
    """Where the descent to point ``i`` starts when no point above it was reached: max(``DOWN_FACTOR`` × α, 4)."""
    return float(max(DOWN_FACTOR * job.al[i], 2.0 * LADDER_FROM))


def _continue_down_in_alpha(job: "_Job", cold: list[int], sols: list, xs: np.ndarray, hist: tuple,
                            cfg: QMCConfig, progress=None):
    """Semantic points of ``cold`` that still failed (``RETRY``) after the other starts, at α ≤
    ``LADDER_FROM`` or where the upward continuation (:func:`_continue_in_alpha`) found no point at its start:
    the semantic branch exists at large α and ends at a smaller one, so each is solved at max(``DOWN_FACTOR`` ×
    α, 2 × ``LADDER_FROM``) (:func:`_ladder_base`, its own starts) and followed DOWN in α to the point
    (:func:`_climb`, :class:`.ladder.Ladder` descending in bracket mode: after a failed step it bisects between
    the last success and the failure, never steps past a failure nor repeats one — the target once excepted —
    and stops at a bracket of ``DOWN_BRACKET_TOL``, or at ``DOWN_MAX_STEPS`` / ``DOWN_MAX_WALL``; every step on
    all ``cfg.points``, no coarse stage, and from the scrambles' mean state of the last step. Measured at r = 2,
    r* = 3: the step from α = 4 to 3.5 fails on one scramble at 1024 × 4 points; at 4096 × 4 the steps 4 → 3.5
    → 3 converge from the mean, while from each scramble's own state 3.614 → 3.266 and → 3.436 failed).

    Points of one model (:func:`_down_key`) share the descent, largest α first: the next one continues from the
    last one reached, and once one stops short, the branch ends above every smaller α of that model, which
    get its bracket without a solve (a descent cannot help them). A point whose solve at its start fails is
    not followed (no descent: said in the note). Where the descent gets there, that is the solution
    (``iteration["start"]``: ``continuation from α = … (n steps)``); where it stops,
    ``iteration["branch_end"]`` = {``between``: [b, a] or None, ``from``, ``status`` (:class:`.ladder.LadderEnd`
    value), ``steps``, ``tried``, ``points``, ``scrambles``, ``note``} and ``iteration["continuation"]`` the
    note. Measured at r = 2, r* = 3, L = 2 (docs/notes/2026-12-05-theory-general.md, "A firmer `collapsed` …" and "The descent
    in α near a branch end"). ``progress``: every step (:func:`_climb`)."""
    todo = [i for i in cold if job.branch == "semantic" and sols[i].status in RETRY
            and (job.al[i] <= LADDER_FROM or not (sols[i].iteration or {}).get("continuation_started", False))]
    if not todo:
        return sols, xs, hist
    pending: dict = {}
    for i in sorted(todo, key=lambda i: -job.al[i]):
        pending.setdefault(_down_key(job, i), []).append(i)
    reached: dict = {}                 # model → (α, mean state) of its last point reached
    deadline = time.monotonic() + DOWN_MAX_WALL
    while pending:
        heads = {key: pts.pop(0) for key, pts in pending.items()}
        if time.monotonic() >= deadline:
            why = f"the descents' wall cap ({DOWN_MAX_WALL:g} s) was spent"
            for key in list(pending):
                for i in [heads[key]] + pending.pop(key):
                    sols[i] = _with_end(sols[i], _skipped_end(job, i, cfg, why))
            break
        sols, xs, hist, lads = _descend(job, list(heads.values()), [reached.get(key) for key in heads], sols, xs,
                                        hist, cfg, deadline, progress)
        for (key, i), lad in zip(heads.items(), lads):
            if lad.reached:
                reached[key] = (float(job.al[i]), np.repeat(_aligned_mean(xs[i], job.params), cfg.scrambles, 0))
                continue
            end = _branch_end(lad, cfg)
            sols[i] = _with_end(sols[i], end)
            why = f"the descent for α = {float(job.al[i]):g} stopped: {end['note']}"
            for i2 in list(pending[key]):  # started: the branch ends above (or a cap): every smaller α of the
                if lad.started or _down_top(job, i2) == lad.origin:      # model; not: those from that start
                    pending[key].remove(i2)
                    sols[i2] = _with_end(sols[i2], _skipped_end(job, i2, cfg, why, end))
        pending = {key: pts for key, pts in pending.items() if pts}
    return sols, xs, hist


def _descend(job: "_Job", todo: list[int], starts_at: list, sols: list, xs: np.ndarray, hist: tuple,
             cfg: QMCConfig, deadline: float, progress):
    """One round of :func:`_continue_down_in_alpha`: each point of ``todo`` from ``starts_at[j]`` ((α, state)
    of a point reached above it) or, where None, from its own solve at max(``DOWN_FACTOR`` × α, 4); the
    ladders stop at ``deadline`` (``time.monotonic``). Returns (sols, xs, hist, ladders)."""
    sub = _ladder_points(job, todo)
    full = replace(cfg, coarse=0, target=0.0)      # every step on all the points: the branch's end is soft
    origin = np.array([s[0] if s is not None else _down_top(job, i) for s, i in zip(starts_at, todo)])
    ok = np.array([s is not None for s in starts_at])
    state = np.zeros((len(todo), cfg.scrambles, xs.shape[-1]))
    groups: dict = {}
    for j, a in enumerate(origin):
        if starts_at[j] is not None:
            state[j] = starts_at[j][1]
        else:
            groups.setdefault(float(a), []).append(j)
    for a, js in groups.items():
        g, st = _ladder_base(sub(np.asarray(js), a), full, progress)
        for k_, j in enumerate(js):
            ok[j], state[j] = g[k_].status is Status.CONVERGED, np.repeat(_aligned_mean(st[k_], job.params),
                                                                         cfg.scrambles, 0)
    lads = [Ladder(float(job.al[i]), origin=float(origin[j]), started=bool(ok[j]), bracket_tol=DOWN_BRACKET_TOL,
                   max_steps=DOWN_MAX_STEPS, max_wall=deadline - time.monotonic()) for j, i in enumerate(todo)]
    sols, xs, hist = _climb(sub, lads, todo, state, sols, xs, hist, cfg, low=full, from_mean=job.params,
                            progress=progress, extend=DOWN_EXTEND_RESIDUAL)
    return sols, xs, hist, lads


def _branch_end(lad: Ladder, cfg: QMCConfig) -> dict:
    """``iteration["branch_end"]`` of a descent that did not reach its point (:func:`_continue_down_in_alpha`)."""
    rec = {"between": None, "from": lad.origin, "status": lad.end.value, "steps": lad.steps,
           "tried": [list(t) for t in lad.tried], "failures": {f"{v:.6g}": w for v, w in lad.details.items()},
           "points": cfg.points, "scrambles": cfg.scrambles}
    size = f"{cfg.points} × {cfg.scrambles} QMC points"
    if not lad.started:
        return {**rec, "note": f"no semantic fixed point at α = {lad.origin:g} either (its own starts failed): "
                               "no descent"}
    end = lad.end
    cap = (f"step cap {lad.max_steps}" if end is LadderEnd.STEP_CAP else
           f"wall cap {lad.max_wall:.0f} s" if end is LadderEnd.WALL_CAP else None)
    if lad.failed is None:
        return {**rec, "note": f"continuation from α = {lad.origin:g} stopped at α = {lad.a:g} ({cap}, no step "
                               "failed)"}
    lo, hi = lad.bracket
    tail = f", {cap}: the bracket is wider than {DOWN_BRACKET_TOL:g}" if cap else ""
    if lad.failed in lad.partial:      # some scrambles still had a fixed point: the path broke, not the branch
        return {**rec, "between": [lo, hi], "partial": True,
                "note": (f"the continuation from α = {lad.origin:g} lost the semantic branch between α = {lo:.4g} "
                         f"and {hi:.4g}: at {lo:.4g} only some scrambles failed ({lad.details.get(lad.failed)}), "
                         f"so the branch may go on below; not an end of the branch ({size}{tail}; more QMC "
                         "points may carry the continuation further)")}
    return {**rec, "between": [lo, hi], "partial": False,
            "note": (f"the semantic branch, followed down from α = {lad.origin:g}, ends between α = {lo:.4g} and "
                     f"{hi:.4g} (no fixed point at {lo:.4g} from the one at {hi:.4g}, {size}{tail})")}


def _skipped_end(job: "_Job", i: int, cfg: QMCConfig, why: str, end: dict | None = None) -> dict:
    """The ``branch_end`` of a point whose descent was not run: ``why``; ``end`` the record it inherits."""
    base = {"between": None, "from": None, "status": "not_tried", "steps": 0, "tried": [],
            "failures": {}, "points": cfg.points, "scrambles": cfg.scrambles} if end is None else {
                **end, "steps": 0, "tried": [], "failures": {}}
    return {**base, "status": "not_tried", "note": f"no descent for α = {float(job.al[i]):g}: {why}"}


def _with_end(sol, end: dict):
    return replace(sol, iteration={**(sol.iteration or {}), "branch_end": end, "continuation": end["note"]})


def _continue_in_scale(job: "_Job", cold: list[int], sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig,
                       progress=None):
    """Positional branch with encodings larger than the paper's (c = :func:`starts.encoding_scale` > 1): every
    point of ``cold`` is solved again at the paper's scale P/c (where the model start is fitted) and followed
    in c up to the point's P (:func:`_climb`, ratio ≤ ``SCALE_RATIO``), the damping following c
    (:func:`default_damping`). Its result replaces the cold start's where it gets there: from the cold start
    the iteration can leave for the m = 0 point (measured at P = 1.2·(1, −1)ᵀ, α = 1.5: two of four scrambles,
    ``not_significant``), a wrong verdict. ``iteration["start"]``: ``continuation from encoding scale = 1
    (n steps)``."""
    c = starts.encoding_scale(job.params)
    if job.branch != "positional" or not cold or not c > 1.0 + 1e-9:
        return sols, xs, hist
    P0 = np.asarray(job.params.P, float) / c
    sub = _ladder_points(job, cold)

    def at(pts, scale):
        p = job.params if scale == c else job.params.replace(P=tuple(map(tuple, (P0 * scale).tolist())))
        return sub(pts, params=p, damping=default_damping(p, job.branch) if job.auto_damping else job.damping)

    everyone = np.arange(len(cold))
    got, state = _ladder_base(at(everyone, 1.0), cfg, progress)
    lads = [Ladder(c, origin=1.0, max_ratio=SCALE_RATIO, name="encoding scale",
                   started=got[j].status is Status.CONVERGED) for j in range(len(cold))]
    return _climb(at, lads, cold, state, sols, xs, hist, cfg, progress=progress)


@dataclass(frozen=True)
class _Job:
    """What the points of one :func:`solve_batch` call share: the model structure, the branch, the per-point
    knobs (α, ω, σ, λ as arrays over the batch) and the iteration settings."""

    params: ModelParams
    branch: str
    al: np.ndarray
    om: np.ndarray
    sg: np.ndarray
    lm: np.ndarray
    rtol: float
    max_steps: int
    damping: float
    anderson: int
    full_prox_every: int
    significance: float
    even: bool
    backtrack: int = 0
    jump_rtol: float = fixed_point.JUMP_RTOL
    auto_damping: bool = False
    m_proj: tuple | None = None
    m_fixed_by: tuple | None = None

    def point_params(self, i: int) -> ModelParams:
        """The model of the batch's point ``i`` (its ω, σ, λ)."""
        return self.params.replace(omega=float(self.om[i]), sigma=float(self.sg[i]), lam=float(self.lm[i]))

    def run(self, pts: np.ndarray, x0: np.ndarray, cfg: QMCConfig, stages: tuple[int, ...],
            hist: tuple | None = None, coarse_x: np.ndarray | None = None, damp: np.ndarray | None = None):
        """Iterate the points ``pts`` (indices into the batch) from ``x0`` (b, S, n), one row per (point,
        scramble), through the QMC stages ``stages`` of ``cfg``; ``hist``: Anderson secant pairs per row to start
        from; ``coarse_x`` (b·S, n): a previous resolution's states for the significance test's trend (the
        coarse stage's, if it runs); ``damp`` (b·S,): each row's damping to start from (default ``self.damping``;
        the safeguard's lowered damping carries over from stage to stage). Returns (solutions, final states
        (b, S, n), secant pairs per row)."""
        params, branch = self.params, self.branch
        L, r, rs, k, S = params.L, params.r, params.r_star, params.k, cfg.scrambles
        b = len(pts)
        n = x0.shape[-1]
        blocks = shapes(r, k, rs)
        xi_all, y_all = (jnp.asarray(a) for a in _points(params, cfg))
        maps = {w: _compiled_map(L, r, rs, k, params.A, params.P, branch, w, self.even, m_proj=self.m_proj)
                for w in (False, True)}
        row_knobs = np.stack([np.repeat(v[pts], S) for v in (self.al, self.om, self.sg, self.lm)])   # (4, b·S)
        sig_flat = np.repeat(self.sg[pts], S)
        X = x0.reshape(b * S, n)
        used = np.zeros(b * S, int)
        full_calls = np.zeros(b * S, int)    # per row: evaluations whose prox was the global multi-start one
        damp = np.full(b * S, self.damping) if damp is None else np.asarray(damp, float)
        halvings = np.zeros(b * S, int)
        coarse_last = None                  # the coarse stage's last iterates, converged or not (free_verdict)
        for i_stage, N in enumerate(stages):
            xi, y = xi_all[:, :N], y_all[:, :N]
            h_cache = np.zeros((b * S, N, 2, L, r))     # each row's minimisers (best, runner-up) at its last call
            chunk = max(1, MAX_SAMPLES // N)            # rows per compiled call (memory: rows × N samples)

            def call(Xa, idx, warm, xi=xi, y=y, h_cache=h_cache, chunk=chunk):
                m = len(idx)
                R = padded_rows(m, b * S, chunk)
                pad = np.concatenate([idx, np.full(R - m, idx[-1])])
                Xp = np.concatenate([Xa, np.repeat(Xa[-1:], R - m, axis=0)])
                parts = []
                for lo in range(0, R, chunk):
                    sl = slice(lo, lo + chunk)
                    knobs = CG.Knobs(*(jnp.asarray(v[pad[sl]]) for v in row_knobs))
                    h_prev = jnp.asarray(h_cache[pad[sl]]) if warm else None
                    parts.append(maps[warm](jnp.asarray(Xp[sl]), knobs, jnp.asarray(pad[sl] % S), xi, y, h_prev))
                fx, ok, aux, h = (parts[0] if len(parts) == 1 else
                                  jax.tree_util.tree_map(lambda *a: np.concatenate(a), *parts))
                h_cache[idx] = np.asarray(h)[:m]
                cut = lambda v: np.asarray(v)[:m]  # noqa: E731
                return cut(fx), cut(ok), {key: cut(v) for key, v in aux.items()}

            def F(Xa, idx, full, chunk=chunk):
                """Full rows through the global prox, the others warm: two calls at most. Where the full call's
                padding (:func:`padded_rows`) has room for every active row, the warm rows ride along in it
                (the exact map instead of the warm one, at no extra cost: one call instead of two)."""
                if full.any() and padded_rows(int(full.sum()), b * S, chunk) >= len(idx):
                    full = np.ones_like(full)
                parts = [(np.nonzero(sel)[0], call(Xa[sel], idx[sel], warm))
                         for sel, warm in ((full, False), (~full, True)) if sel.any()]
                if len(parts) == 1:
                    fx, ok, aux = parts[0][1]
                else:
                    fx = np.empty_like(Xa)
                    ok = np.empty(len(idx), bool)
                    aux = {}
                    for pos, (f_, o_, a_) in parts:
                        fx[pos], ok[pos] = f_, o_
                        for key, v in a_.items():
                            aux.setdefault(key, np.empty((len(idx),) + v.shape[1:], v.dtype))[pos] = v
                # the rows that got the global prox, riding ones included (counted by iterate: Run.full_calls)
                return fx, ok, {**aux, fixed_point.FULL_TIER: full}

            final = i_stage == len(stages) - 1
            newton = _onset_newton(self, pts, S, F, sig_flat) if r == 1 else None
            run = fixed_point.iterate(F, X, lambda X, Y: block_residual(X, Y, blocks, sig_flat),
                                      rtol=self.rtol if final else max(self.rtol, COARSE_RTOL),
                                      max_steps=self.max_steps, damping=damp, anderson=self.anderson,
                                      admissible=lambda v, i: _admissible(v, r, k, rs, sig_flat[i]), history=hist,
                                      compact=True, full_every=self.full_prox_every, certify=final,
                                      backtrack=self.backtrack, groups=np.arange(b * S) // S,
                                      jump_rtol=self.jump_rtol, newton=newton)
            if final and self.backtrack:     # scrambles that failed restart from their point's converged ones
                run = _restart_failed(run, F, lambda X, Y, rows: block_residual(X, Y, blocks, sig_flat[rows]),
                                      lambda v, i: _admissible(v, r, k, rs, sig_flat[i]), S, params, self)
            used += run.iterations
            full_calls += run.full_calls
            damp, halvings = run.damping, halvings + run.halvings
            hist = run.history
            if not final:          # a coarse stage that failed leaves that point at its start
                conv = np.array([s is Status.CONVERGED for s in run.status])
                coarse_x = np.where(conv[:, None], run.x, np.nan)
                coarse_last = np.array(run.x, float)
                ok = np.array([s in (Status.CONVERGED, Status.MAX_STEPS) for s in run.status])
                X = np.where(ok[:, None] & np.all(np.isfinite(run.x), axis=1)[:, None], run.x, X)
        run.iterations = used
        run.full_calls = full_calls
        run.halvings = halvings
        sols = [replace(_collect(self.point_params(i), float(self.al[i]), branch, run, slice(j * S, (j + 1) * S),
                                 cfg, self.full_prox_every, coarse_x, self.significance), even=self.even,
                        iteration=self.iteration_record(run, slice(j * S, (j + 1) * S), cfg),
                        coarse_scramble_x=None if coarse_last is None else coarse_last[j * S:(j + 1) * S])
                for j, i in enumerate(pts)]
        return sols, run.x.reshape(b, S, n), run.history

    def iteration_record(self, run: fixed_point.Run, sl: slice, cfg: QMCConfig) -> dict:
        """The provenance of the iteration of one point (rows ``sl``): damping asked and in use at the end
        (lowest over the scrambles; the safeguard may have halved it), halvings, Anderson depth, and the
        scrambles (by seed) whose own fixed point failed, with status and last residual (a point is converged
        only if every scramble is), the scrambles converged at a jump of their map (``jump_scrambles``, with the
        jump's residual; ``fixed_point.iterate(jump_rtol=…)``) and the iteration budget ``max_steps``."""
        failed = [{"seed": seed, "status": st.value, "residual": float(res)}
                  for seed, st, res in zip(cfg.seeds, run.status[sl], run.residual[sl]) if st is not Status.CONVERGED]
        restarted = getattr(run, "restarted", None)
        restarted = [] if restarted is None else [seed for seed, rs_ in zip(cfg.seeds, restarted[sl]) if rs_]
        at_jump = getattr(run, "at_jump", None)
        jumps = [] if at_jump is None else [{"seed": seed, "residual": float(res)} for seed, j, res in
                                            zip(cfg.seeds, at_jump[sl], run.residual[sl]) if j]
        return {"damping": self.damping, "damping_final": float(np.min(run.damping[sl])),
                "damping_scrambles": [float(v) for v in run.damping[sl]],
                "halvings": int(np.max(run.halvings[sl])), "backtrack": self.backtrack, "anderson": self.anderson,
                "failed_scrambles": failed, "restarted_scrambles": restarted,
                "jump_rtol": self.jump_rtol, "jump_scrambles": jumps, "max_steps": self.max_steps,
                "m_symmetry": None if self.m_fixed_by is None else
                {"exchanges": [list(pi) for pi in self.m_fixed_by], "projector": [list(v) for v in self.m_proj]}}


ZERO_FLOOR = 1e-2
"""Lowest q a Newton step to q = 0 goes to, in units of ``ZERO_Q·σ²`` (:func:`_onset_newton`)."""


def _onset_newton(job: "_Job", pts: np.ndarray, S: int, F, sigma_rows: np.ndarray):
    """The ``newton`` hook of ``fixed_point.iterate`` for one stage of :meth:`_Job.run` (r = 1): a (point,
    scramble) row whose residual crawls while q is small (:func:`.onset_newton.crawling`, next to an onset from
    q = 0) gets Newton steps in √q (:func:`.onset_newton.newton_candidates`, the split rule's, on the state
    (q, M, θ, V) with the branch's pinned components fixed), the forward differences of all such rows in one
    batched call of the warm map ``F``; a step may fall to q = 0 only where the closed-form q = 0 point attracts
    the branch (:func:`.onset_newton.zero_attracts`, per point, L·r* ≤ 6; else never more than half of √q).
    Measured at L = 3, λ = 0.106 (1.7 % above the positional onset: 58 steps, was ``max_steps``):
    docs/notes/2026-12-05-theory-general.md, "The engine next to a q = 0 onset"."""
    from .onset_newton import crawling, newton_candidates, zero_attracts
    p = job.params
    n = sum(a * b for a, b in shapes(1, p.k, p.r_star))
    at = OrderParams(*(np.asarray(b).ravel() for b in unflatten(np.arange(n), 1, p.k, p.r_star)))  # positions
    iq, overlaps = int(at.q[0]), np.concatenate([at.M, at.theta])     # q; the blocks that scale like √q
    free = np.ones(n, bool)
    if "M_hat" in _PINNED[job.branch]:
        free[at.M] = False
    if "theta_hat" in _PINNED[job.branch]:
        free[at.theta] = False
    nfree = int(free.sum())
    total = len(pts) * S
    attracts: dict[int, bool] = {}

    def to_zero(j: int) -> bool:
        if j not in attracts:
            attracts[j] = zero_attracts(job.point_params(int(pts[j])), float(job.al[pts[j]]), job.branch)
        return attracts[j]

    def hook(X, FX, rows, hist):
        cand = np.full_like(X, np.nan)
        floor = ZERO_Q * sigma_rows ** 2
        sel = np.array([i for i in np.nonzero(rows)[0] if X[i, iq] >= floor[i]
                        and crawling(list(hist[i][np.isfinite(hist[i])]), float(X[i, iq]), float(sigma_rows[i]))], int)
        if not len(sel):
            return cand
        rep = np.repeat(sel, nfree)

        def batch(Xs):
            out = []
            for lo in range(0, len(Xs), total):
                hi = min(lo + total, len(Xs))
                fx, ok, _ = F(Xs[lo:hi], rep[lo:hi], np.zeros(hi - lo, bool))
                out.append(np.where(np.asarray(ok)[:, None], fx, np.nan))
            return np.concatenate(out)

        cand[sel] = newton_candidates(batch, X[sel], FX[sel], free, [to_zero(i // S) for i in sel],
                                      v_index=int(at.V[0]))
        # a step to q = 0 stops at ZERO_FLOOR·ZERO_Q σ² (the overlaps scaled with √q): from there the plain
        # iteration settles at its round-off floor (q ~ 1e-15), which zero_q_record reports as the q = 0 point;
        # a Newton step below it lands where the relative residual of M, θ is round-off and never converges
        low = np.nonzero(np.isfinite(cand[:, iq]) & (cand[:, iq] < ZERO_FLOOR * floor))[0]
        for i in low:
            q_new = ZERO_FLOOR * floor[i]
            cand[i, overlaps] = X[i, overlaps] * math.sqrt(q_new / X[i, iq])
            cand[i, iq] = q_new
        return cand

    return hook


def _restart_failed(run: fixed_point.Run, F, residual, admissible, S: int, params: ModelParams,
                    job: "_Job") -> fixed_point.Run:
    """Part of the safeguard (``backtrack``): a scramble whose iteration failed (invalid state, diverged,
    max_steps) while other scrambles of the same point converged restarts ONCE from the mean of those (aligned
    to one gauge, :func:`aligned_scrambles`; the same map up to QMC noise, so their fixed point is the best
    start there is), at the lowest damping they used; certified on the full map as always. Measured: the free
    r = 2 point at α = 2.3 on 1024 × 4 points, where one scramble ran out of halvings from the default start
    (docs/notes/2026-12-05-theory-general.md, "Rank 2 on the defaults"). The restart's evaluations add to the row's count;
    ``run.restarted`` marks the rows. Returns ``run`` updated in place."""
    conv = np.array([st is Status.CONVERGED for st in run.status])
    run.restarted = np.zeros(len(conv), bool)
    rows, starts, damps = [], [], []
    for j in range(len(conv) // S):
        sl = slice(j * S, (j + 1) * S)
        if conv[sl].any() and not conv[sl].all():
            good = run.x[sl][conv[sl]]
            start = _aligned_mean(good, params)[0]
            d0 = float(np.min(run.damping[sl][conv[sl]]))
            for i in np.nonzero(~conv[sl])[0] + j * S:
                rows.append(i)
                starts.append(start)
                damps.append(d0)
    if not rows:
        return run
    rows = np.asarray(rows)
    sub = fixed_point.iterate(lambda Xa, idx, full: F(Xa, rows[idx], full), np.stack(starts),
                              lambda X, Y: residual(X, Y, rows), rtol=job.rtol, max_steps=job.max_steps,
                              damping=np.asarray(damps), anderson=job.anderson,
                              admissible=lambda v, i: admissible(v, rows[i]), compact=True,
                              full_every=job.full_prox_every, certify=True, backtrack=job.backtrack,
                              jump_rtol=job.jump_rtol)
    run.x[rows], run.status[rows], run.residual[rows] = sub.x, sub.status, sub.residual
    if run.at_jump is not None and sub.at_jump is not None:
        run.at_jump[rows] = sub.at_jump
    run.iterations[rows] += sub.iterations
    run.full_calls[rows] += sub.full_calls
    run.damping[rows], run.halvings[rows] = sub.damping, run.halvings[rows] + sub.halvings
    for key, v in sub.aux.items():
        run.aux[key][rows] = v
    for i, row in enumerate(rows):
        run.history[0][row], run.history[1][row] = sub.history[0][i], sub.history[1][i]
    run.restarted[rows] = True
    return run


MAX_SAMPLES = 1 << 17
"""Most (row, sample) pairs in one compiled map call: rows beyond it go through the map in chunks (memory;
the error-controlled sizes reach 65536 points × 8 scrambles, 2^19 samples)."""


def _resolution_entry(sol: GeneralSolution) -> dict:
    rse = resolution.relative_errors(sol.values, sol.errors)
    name, worst = resolution.worst(rse)
    return {"points": sol.qmc.points, "scrambles": sol.qmc.scrambles, "status": sol.status.value,
            "iterations": sol.iterations, "max_steps": (sol.iteration or {}).get("max_steps"),
            "failed_scrambles": (sol.iteration or {}).get("failed_scrambles", []),
            "jump_scrambles": (sol.iteration or {}).get("jump_scrambles", []), "worst": name, "rse": worst}


def _refine(job: _Job, sols: list, xs: np.ndarray, hist: tuple, cfg: QMCConfig, progress=None) -> list:
    """Error control (:mod:`.resolution`): continue every converged point whose worst relative standard error
    exceeds ``cfg.target`` on a larger, nested QMC size, from its converged per-scramble states (a new
    scramble starts from their mean), until the target is met or the caps stop it. Points needing the same
    size go through one batch. Each solution gets ``resolution``: the target, the sizes tried with their worst
    relative errors, ``met`` and ``capped``. Where a larger size does not converge (a scramble without a fixed
    point there), the point keeps its last converged size and values, ``met = False``, ``growth_failed`` the
    failed size's record (``sizes`` ends at the kept size); before, it was reported unconverged and its
    converged smaller size was lost (measured: free r = 2 at α = 1, 16384 × 8, docs/notes/2026-12-05-theory-general.md "Rank 2
    on the defaults"). Each ``sizes`` entry and ``growth_failed`` record the iteration budget (``max_steps``) and
    which scrambles failed or converged at a jump of their map. A larger iteration budget for the growth
    (2 × the previous size's iterations) was tried and removed: near the end of the positional branch at
    ω = 0.1 the failing scrambles wander on their rough maps for all 302 iterations too (16384 × 8 and
    65536 × 8, docs/notes/2026-12-05-theory-general.md "Near the positional fold (ω = 0.1)")."""
    B = len(sols)
    states = [xs[i] for i in range(B)]
    pairs = [([hist[0][i * xs.shape[1] + s] for s in range(xs.shape[1])],
              [hist[1][i * xs.shape[1] + s] for s in range(xs.shape[1])]) for i in range(B)]
    log = [[_resolution_entry(s)] for s in sols]
    capped = [False] * B
    failed: list = [None] * B  # a larger size that did not converge (its record): the point keeps its last size

    def needs(i):
        return sols[i].status is Status.CONVERGED and log[i][-1]["rse"] > cfg.target

    pending = [i for i in range(B) if needs(i)]
    while pending:
        groups: dict = {}
        for i in pending:
            new = sols[i].qmc.grown(log[i][-1]["rse"] / cfg.target)
            if new is None:
                capped[i] = True
            else:
                groups.setdefault(new, []).append(i)
        for new, pts in groups.items():
            S = new.scrambles
            if progress is not None:
                w = max((log[i][-1] for i in pts), key=lambda e: e["rse"])
                progress(resolution.Progress("grow", new.points, S, w["rse"], cfg.target, w["worst"], len(pts)))
            x0 = np.stack([np.concatenate([states[i],   # new scrambles start from the mean (in one gauge)
                                           np.repeat(_aligned_mean(states[i], job.params), S - len(states[i]), 0)])
                           for i in pts])                                                  # (b, S, n)
            h = tuple([row for i in pts for row in (pairs[i][w] + [[]] * (S - len(states[i])))] for w in (0, 1))
            new_sols, new_xs, new_hist = job.run(
                np.asarray(pts), x0, new, (new.points,), h, coarse_x=x0.reshape(-1, x0.shape[-1]),
                damp=np.repeat([_resume_damping(sols[i]) for i in pts], S))
            for j, i in enumerate(pts):
                if new_sols[j].status is not Status.CONVERGED:   # keep the converged smaller size
                    failed[i] = _resolution_entry(new_sols[j])
                    continue
                log[i].append(_resolution_entry(new_sols[j]))
                sols[i], states[i] = new_sols[j], new_xs[j]
                pairs[i] = (new_hist[0][j * S:(j + 1) * S], new_hist[1][j * S:(j + 1) * S])
        pending = [i for i in pending if not capped[i] and failed[i] is None and needs(i)]
    return [replace(s, resolution={"target": cfg.target, "max_points": cfg.max_points,
                                   "max_scrambles": cfg.max_scrambles, "sizes": log[i],
                                   "met": _resolution_entry(s)["rse"] <= cfg.target and s.status is Status.CONVERGED,
                                   "capped": capped[i], "growth_failed": failed[i]})   # sizes[-1]: the kept size
            for i, s in enumerate(sols)]


def _admissible(v: np.ndarray, r: int, k: int, rs: int, sigma: float) -> bool:
    """May an Anderson step go to ``v``: q and V positive definite, and the token covariance
    ``[[q, θ], [θᵀ, ρ]]`` (ρ = σ² I) positive semi-definite, ``σ² I − θᵀ q⁻¹ θ ⪰ 0`` (MODEL.md §8; Cauchy–Schwarz,
    r = r* = 1: θ² ≤ σ² q). The prior side's output always satisfies it, and so does every damped step between
    two such states (the set is convex); an extrapolation need not: measured at r = 1, r* = 2, L = 2, α = 2
    (1024 × 4), two scrambles' Anderson steps reached θ²/q = 0.35, 0.63 > σ² = 0.25 and ended ``invalid_state``
    (the channel floors the residual covariance's square root and its output is meaningless there)."""
    x = unflatten(np.asarray(v), r, k, rs)
    q = np.asarray(x.q)
    if not (np.linalg.eigvalsh(q)[0] > 0 and np.linalg.eigvalsh(np.asarray(x.V))[0] > 0):
        return False
    th = np.asarray(x.theta)
    return bool(np.linalg.eigvalsh(sigma ** 2 * np.eye(rs) - th.T @ np.linalg.solve(q, th))[0] >= 0)


def _collect(params, alpha, branch, run: fixed_point.Run, sl, cfg: QMCConfig, full_prox_every: int,
             coarse_x: np.ndarray | None, k_se: float) -> GeneralSolution:
    r, k, rs, S = params.r, params.k, params.r_star, cfg.scrambles
    sts = list(run.status[sl])
    status = next((s for s in (Status.DIVERGED, Status.INVALID_STATE, Status.MAX_STEPS) if s in sts),
                  Status.CONVERGED)
    xs, hs = aligned_scrambles(np.asarray(run.x[sl]), np.asarray(run.aux["hats"][sl]), r, k, rs)
    sig = None
    if status is Status.CONVERGED:
        xc = None if coarse_x is None else np.asarray(coarse_x[sl])
        sig = overlap_significance(branch, xs, xc if xc is not None and np.all(np.isfinite(xc)) else None,
                                   r, k, rs, k_se)
        if sig is not None and not sig["significant"]:
            status = Status.NOT_SIGNIFICANT     # collapsed where the artefact is the noise image of a stable 0
            rec = response_record(params, alpha, branch, np.asarray(run.x[sl], float), cfg)
            if rec is not None and rec["collapsed"]:
                status, sig = Status.COLLAPSED, {**rec, "significance": sig}
            elif rec is not None:           # why not collapsed, in the record and in the reason
                sig = {**sig, "collapse_test": rec, "reason": f"{sig['reason']}; {rec['reason']}"}
        zero = zero_q_record(params, branch, xs, alpha)
        if zero is not None and branch in _DEFINING:      # the pinned branch fell onto the q = 0 point
            status, sig = Status.COLLAPSED, zero
        elif zero is not None and branch == "uninformative":   # converged, said to be q = 0
            sig = zero
    else:                       # a failure where the branch's overlap vanished: collapsed (collapse.py)
        sig = collapse_record(params, alpha, branch, xs)
        status = status if sig is None else Status.COLLAPSED
    per = {**invariants(unflatten(xs, r, k, rs)),
           **{f"{kk}_hat": v for kk, v in invariants(unflatten(hs, r, k, rs, Hats)).items() if kk in SCALARS},
           "eps_g": run.aux["eps_g"][sl], "e_t": run.aux["e_t"][sl]}
    mean = {kk: np.mean(v, axis=0) for kk, v in per.items()}
    err = {kk: np.std(v, axis=0, ddof=1) / math.sqrt(S) for kk, v in per.items() if np.ndim(v) == 1}
    x_mean = unflatten(xs.mean(axis=0), r, k, rs)
    h_mean = unflatten(hs.mean(axis=0), r, k, rs, Hats)
    last = None
    if status is not Status.CONVERGED and not (sig is not None and sig.get("zero_q")):
        last = OrderParams(*(np.asarray(b) for b in x_mean))
        nanify = lambda t: type(t)(*(np.full(np.shape(b), np.nan) for b in t))  # noqa: E731
        x_mean, h_mean = nanify(x_mean), nanify(h_mean)
        mean = {kk: np.full(np.shape(v), np.nan) for kk, v in mean.items()}
        err = {kk: np.full(np.shape(v), np.nan) for kk, v in err.items()}
    return GeneralSolution(params, alpha, branch, status, int(np.max(run.iterations[sl])),
                           float(np.max(run.residual[sl])), OrderParams(*(np.asarray(b) for b in x_mean)),
                           Hats(*(np.asarray(b) for b in h_mean)), mean, err, "qmc", cfg,
                           float(np.max(run.aux["max_grad"][sl])), last, full_prox_every=full_prox_every,
                           full_prox_calls=int(np.max(run.full_calls[sl])), significance=sig,
                           scramble_x=np.array(run.x[sl], float))


def zero_q_record(params: ModelParams, branch: str, xs: np.ndarray, alpha: float | None = None) -> dict | None:
    """A converged point at the q = 0 fixed point (the student Q = 0; MODEL.md §6, theory/zero_point.py): tr q of
    every scramble below ``ZERO_Q`` σ² (round-off around 0; genuine points have q ≳ 1e-3 σ²). Returns the record
    that :func:`_collect` reports as ``Status.COLLAPSED`` on a pinned branch — in the split rule's words (a
    semantic/positional solve there is ``collapsed``: its overlap vanished, it is the uninformative point) — with
    the values kept (the point is a fixed point, not a failure); None where q is not 0. Was ``not_significant``
    (λ = 0.5, α = 2: |θ| = 4.8e-25 within 3 s.e. of 0) with no mention of q = 0. With ``alpha`` the record also
    holds ``closed_form``: the closed-form q = 0 point (:func:`.zero_point.zero_point`: V, V̂, D, ε_g, e_t and the
    growth factors; any L, A, P with L·r* ≤ 6), or None where it has no admissible V or is not evaluated."""
    xs = np.asarray(xs, float)
    if xs.shape[0] == 0 or not np.all(np.isfinite(xs)):
        return None
    x = unflatten(xs, params.r, params.k, params.r_star)
    q = np.trace(np.asarray(x.q), axis1=-2, axis2=-1)
    if not float(np.max(np.abs(q))) < ZERO_Q * params.sigma ** 2:
        return None
    name = _DEFINING.get(branch)
    overlap = {"M": "m", "theta": "theta"}.get(name)
    value = float(np.max(np.linalg.norm(np.asarray(getattr(x, name)).reshape(xs.shape[0], -1), axis=1))) \
        if name else 0.0
    what = (f"the {branch} branch collapses to q = 0 here" if name else f"the {branch} point is q = 0 here")
    closed = None
    if alpha is not None:
        try:
            closed = zero_point(params, alpha, error=True).to_dict()
        except ValueError:
            closed = None
    return {"overlap": overlap, "value": value, "q": float(np.max(q)), "zero_q": True, "significant": False,
            "closed_form": closed,
            "reason": f"q = 0: {what} — the student is zero (Q = 0); q ≤ {float(np.max(q)):.2g}"
                      + (f", |{overlap}| ≤ {value:.2g}" if name else "")}


def aligned_scrambles(xs: np.ndarray, hs: np.ndarray | None, r: int, k: int, rs: int):
    """Flattened per-scramble states ``xs`` (S, n) and hats ``hs`` (S, n) of one point, put into one gauge
    (:func:`state.align_scrambles`) so that their mean and spread mean something (a scramble on a gauge copy,
    e.g. ``−M``, is the same fixed point). Rows that are not finite (an unconverged scramble) are left out of
    the alignment and returned as they were."""
    xs = np.array(xs, float)
    hs = None if hs is None else np.array(hs, float)
    good = np.all(np.isfinite(xs), axis=1) & (True if hs is None else np.all(np.isfinite(hs), axis=1))
    if good.sum() < 1:
        return xs, hs
    xa, ha = align_scrambles(unflatten(xs[good], r, k, rs),
                             None if hs is None else unflatten(hs[good], r, k, rs, Hats))
    xs[good] = _flat(xa)
    if hs is not None:
        hs[good] = _flat(ha)
    return xs, hs


def _resume_damping(sol: GeneralSolution) -> float:
    """The damping every scramble of a converged point starts from at a larger QMC size: the largest its
    scrambles converged with (that damping is known to work on this map; a scramble that halved more did so on
    its way from a far start, and the continuation starts at the fixed point; the safeguard halves again where
    needed). Was the smallest: measured, free r = 2 at α = 1, 4096 × 4 → 16384 × 8 ran > 12 min at load ~5
    without finishing, every row crawling at the one scramble's 0.019 (docs/notes/2026-12-05-theory-general.md, "Rank 2 on the
    defaults")."""
    return float(max(sol.iteration.get("damping_scrambles") or [sol.iteration["damping_final"]]))


def _aligned_mean(xs: np.ndarray, params: ModelParams) -> np.ndarray:
    """The mean of a point's per-scramble states (S, n) in one gauge (:func:`aligned_scrambles`), shape (1, n):
    where the error control adds scrambles, they start there."""
    return aligned_scrambles(xs, None, params.r, params.k, params.r_star)[0].mean(axis=0)[None]


def _flat(t) -> np.ndarray:
    """numpy :func:`state.flatten` of stacked blocks (S, ·, ·) → (S, n)."""
    return np.concatenate([np.asarray(b).reshape(np.shape(b)[0], -1) for b in t], axis=1)


def overlap_significance(branch: str, xs: np.ndarray, xs_coarse: np.ndarray | None, r: int, k: int, rs: int,
                         k_se: float = SIGNIFICANCE_K) -> dict | None:
    """Is the pinned branch's defining overlap Z (M on the positional branch, θ on the semantic one) really
    non-zero? ``xs``: the converged per-scramble states (S, n) (r > 1: all in the canonical gauge, so their
    matrices are comparable); ``xs_coarse``: the same rows converged on the coarse stage's points, or None.
    Three tests, any one makes the point ``NOT_SIGNIFICANT``:

    - scramble significance: ``t = ‖Z̄‖_F / ‖se(Z)‖_F < k_se`` (mean and element-wise standard error over the
      independent scrambles; r = k = 1: |m̄|/s.e.);
    - scramble agreement: the relative spread ``√S / t`` (std over scrambles / ‖Z̄‖) above ``SPREAD_LIMIT``:
      the scrambles do not agree on the overlap's size (with S = 2–4 scrambles the s.e. itself is too
      uncertain for a t of 3 to mean much);
    - resolution trend (where a coarse stage converged on every scramble): ``‖Z̄‖_F < RESOLUTION_SHRINK ×
      ‖Z̄_coarse‖_F``. Needed because a collapsed branch's artefact need not change sign between scrambles:
      at positional ω = 0.1, α = 2 every scramble's discretised map has its own small m > 0 (1024 × 4:
      0.037, 0.062, 0.014, 0.018, t = 3.0), and m shrinks as the points are refined.

    ``per_scramble``: each scramble's ‖Z_s‖_F (in the reason of a point that fails: which scrambles found a
    large overlap and which one near 0). Returns None for branches without a defining overlap (uninformative,
    free) or ``k_se = 0``."""
    name = _DEFINING.get(branch)
    if name is None or k_se <= 0:
        return None
    S = xs.shape[0]
    if r > 1:    # one gauge (a scramble on a rotated or reflected copy is the same point); at r = 1 a sign
        xs = aligned_scrambles(xs, None, r, k, rs)[0]    # disagreement stays evidence of an unresolved overlap

    Z = np.asarray(getattr(unflatten(xs, r, k, rs), name))                      # (S, a, b)
    value = float(np.linalg.norm(Z.mean(axis=0)))
    se = float(np.linalg.norm(Z.std(axis=0, ddof=1) / math.sqrt(S)))
    t = value / se if se > 0 else (math.inf if value > 0 else 0.0)
    out = {"overlap": "m" if name == "M" else "theta", "value": value, "se": se, "t": t, "k": k_se,
           "coarse_value": None, "shrink": None, "shrink_limit": RESOLUTION_SHRINK, "reason": None}
    out["spread"] = math.sqrt(S) / t if t > 0 else math.inf
    out["spread_limit"] = SPREAD_LIMIT
    if t < k_se:
        out["reason"] = f"|{out['overlap']}| = {value:.3g} is within {k_se:g} s.e. ({se:.2g}) of 0"
    elif out["spread"] > SPREAD_LIMIT:
        out["reason"] = (f"the scrambles disagree on |{out['overlap']}| = {value:.3g} by {out['spread']:.0%} "
                         f"(limit {SPREAD_LIMIT:.0%})")
    if xs_coarse is not None:
        if r > 1:
            xs_coarse = aligned_scrambles(xs_coarse, None, r, k, rs)[0]
        vc = float(np.linalg.norm(np.asarray(getattr(unflatten(xs_coarse, r, k, rs), name)).mean(axis=0)))
        out["coarse_value"] = vc
        out["shrink"] = value / vc if vc > 0 else math.inf
        if out["reason"] is None and value < RESOLUTION_SHRINK * vc:
            out["reason"] = (f"|{out['overlap']}| falls from {vc:.3g} (coarse points) to {value:.3g}: "
                             "it shrinks with the QMC size")
    out["per_scramble"] = [float(v) for v in np.linalg.norm(Z.reshape(S, -1), axis=1)]
    if out["reason"] is not None:      # which scrambles found what (e.g. L = 4 positional: some on a large
        out["reason"] += " (per scramble ‖{}‖ = {})".format(   # overlap, some near 0; docs/notes/2026-12-05-theory-general.md)
            out["overlap"], ", ".join(f"{v:.3g}" for v in out["per_scramble"]))
    out["significant"] = out["reason"] is None
    return out


def solve(params: ModelParams, alpha: float, branch: str = "semantic", **kw) -> GeneralSolution:
    """One point (a batch of one): see :func:`solve_batch`."""
    return solve_batch(params, [alpha], branch, **kw)[0]
