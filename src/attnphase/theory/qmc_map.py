"""The QMC engine's map (MODEL.md §8) as one jit-compiled, vmapped program per structure: the branch's pins
(:func:`pin_hats`, :func:`teacher_pin`, :func:`even_hats`), the compiled-map cache (:func:`compiled_map`, stored
programs), the row bucketing of compacted calls (:func:`bucket`, :func:`padded_rows`), the QMC point sets
(:func:`qmc_points`) and the free map at given rows (:func:`free_map`, :func:`free_map_at`)."""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from .. import exported_programs, xla_cache
from ..model import ModelParams
from . import channel_general as CG
from . import prox_general as PG
from . import qmc
from .qmc_config import QMCConfig
from .state import Hats, canonical_gauge, flatten, unflatten


BRANCHES = ("semantic", "positional", "uninformative", "free")


PINNED = {"semantic": ("M_hat",), "positional": ("theta_hat",), "uninformative": ("M_hat", "theta_hat"),
           "free": ()}


def pin_hats(h: Hats, branch: str) -> Hats:
    """The branch's pinned hats (``PINNED``: M̂ semantic, θ̂ positional, both uninformative) set to 0."""
    return h._replace(**{name: jnp.zeros_like(getattr(h, name)) for name in PINNED[branch]})


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


def compiled_map(L: int, r: int, rs: int, k: int, A: tuple, P: tuple, branch: str, warm: bool = False,
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
        hats = pin_hats(out.hats, branch)
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


compiled_map.cache_clear = _stored_map.cache_clear      # type: ignore[attr-defined]


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


MAX_SAMPLES = 1 << 17
"""Most (row, sample) pairs in one compiled map call: rows beyond it go through the map in chunks (memory;
the error-controlled sizes reach 65536 points × 8 scrambles, 2^19 samples)."""


def qmc_points(params: ModelParams, cfg: QMCConfig):
    """The scrambled Sobol points of ``cfg`` as the student's ξ (S, N, L, r) and the teacher's y (S, N, L, r*)."""
    L, r, rs = params.L, params.r, params.r_star
    Z = qmc.scrambles(L * (r + rs), cfg.points, cfg.seeds)          # (S, N, L(r + r*))
    return Z[..., :L * r].reshape(cfg.scrambles, cfg.points, L, r), \
        Z[..., L * r:].reshape(cfg.scrambles, cfg.points, L, rs)


def free_map_at(sol_rows: list, X: np.ndarray, scr: np.ndarray, params, cfg,
                h_prev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The free map (:func:`compiled_map`: no pin, no ansatz, no gauge fixing) at rows X (R, n), row i at point
    ``sol_rows[i]``'s knobs on scramble ``scr[i]`` of the QMC size ``cfg``; the global multi-start prox, or with
    ``h_prev`` (R, N, 2, L, r) the warm one from those minimisers (:func:`prox_general.prox_warm`). Chunked so
    that rows × points ≤ ``MAX_SAMPLES``. Returns (F (R, n), valid (R,), minimisers (R, N, 2, L, r))."""
    knobs = np.array([[s.alpha, s.params.omega, s.params.sigma, s.params.lam] for s in sol_rows])   # (R, 4)
    return free_map(knobs, X, scr, params, cfg, h_prev)


def free_map(knobs: np.ndarray, X: np.ndarray, scr: np.ndarray, params, cfg,
             h_prev: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`free_map_at` with the rows' knobs given directly: ``knobs`` (R, 4) = (α, ω, σ, λ) per row."""
    warm = h_prev is not None
    fmap = compiled_map(params.L, params.r, params.r_star, params.k, params.A, params.P, "free", warm, False, False)
    xi, y = (jnp.asarray(a) for a in qmc_points(params, cfg))
    return chunked_rows(fmap, X, knobs, scr, xi, y, h_prev, max(1, MAX_SAMPLES // cfg.points),
                        lambda fx, ok, aux, h: (fx, ok, h))


def chunked_rows(fmap, X: np.ndarray, knobs: np.ndarray, scr: np.ndarray, xi, y, h_prev: np.ndarray | None,
                 chunk: int, keep) -> tuple[np.ndarray, ...]:
    """The compiled map ``fmap`` at the rows ``X`` (R, n) with their knobs (R, 4: α, ω, σ, λ), scramble indices
    ``scr`` and (warm map) previous minimisers ``h_prev``, in calls of at most ``chunk`` rows, a short last call
    padded to :func:`bucket` rows (few distinct shapes, each one compilation). ``keep(images, valid, aux,
    minimisers)`` picks the per-row outputs wanted; returns them for the R rows, in that order (float64, or
    bool for the valid flags)."""
    R = len(X)
    out: list[np.ndarray] | None = None
    for lo in range(0, R, chunk):
        idx = np.arange(lo, min(R, lo + chunk))
        m = len(idx)
        pad = np.concatenate([idx, np.full((bucket(m, chunk) if m < chunk else m) - m, idx[-1])])
        kn = CG.Knobs(*(jnp.asarray(knobs[pad, j]) for j in range(4)))
        got = keep(*fmap(jnp.asarray(X[pad]), kn, jnp.asarray(scr[pad]), xi, y,
                         None if h_prev is None else jnp.asarray(h_prev[pad])))
        got = [np.asarray(a)[:m] for a in got]
        if out is None:
            out = [np.empty((R,) + a.shape[1:], bool if a.dtype == bool else np.float64) for a in got]
        for o, a in zip(out, got):
            o[idx] = a
    return tuple(out or ())
