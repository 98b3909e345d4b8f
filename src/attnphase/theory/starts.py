"""Starting points of the general engine derived from the model (σ, λ, ω, A, P, α), not tuned to one σ, λ
(MODEL.md §8; issue 11 "starts from the model"; measurements in docs/notes/2026-12-05-theory-general.md, section "Starts away
from σ = 0.5, λ = 0.01").

The magnitudes are those of the L = 2, r = 1 split-rule start (:func:`attnphase.theory.solver.start_state`,
MODEL.md §6), written for any L, r, r*, A, P:

* semantic: the student aligned with the teacher, ``Q = c·Q*`` plus 10 % orthogonal weight (c = 0.7):
  ``θ = c σ²``, ``q = 1.1 c² σ²`` per signal direction;
* positional: the student along the first positional direction with the attention a purely positional
  student needs to match the teacher's mean self-weight t = E[T_ll] (:func:`teacher_self_weight`): at
  L = 2, ``S_11 = sigmoid(2 m²) = t`` gives ``m² = logit(t)/2``, the token part of the logits takes about half
  of it, so ``m² = logit(t)/4`` (at least 0.01); for L tokens the same with the odds of t against the uniform
  weight 1/L, ``logit(t) + log(L − 1)``; ``q = 3 σ² m²``;
* V from the prior side (MODEL.md §8, ``V = σ² (λ + σ² V̂)⁻¹``) with ``V̂ ≈ k α σ² q`` per direction (the
  curvature of the loss ``(σ²/2)‖T − S‖²`` in h is ~σ² q per token): k = 0.6 semantic, 1.9 positional (the
  split-rule start's constants, measured there). This is what carries α and λ: V grows like 1/λ at small α and
  falls like 1/(α σ⁴ q) at large α; a V fixed in units of σ² (the engine's start before) was 5–20× off
  (σ = 1, α = 2 semantic: 48 against 2.6 at the split-rule fixed point; λ = 0.1, α = 3 positional: 11 against
  2.3; λ = 0.001, α = 0.35 positional: 11 against 226).

r > 1: :func:`reference_start` (magnitudes measured at σ = 0.5, λ = 0.01 in units of σ; the rank-1 prior-side
V is far too small there) with V carried to the point's λ, α by the prior side.

No single start converges everywhere (measured, docs/notes/2026-12-05-theory-general.md): ``engine.solve_batch`` solves a point
that failed from :func:`model_start` again from the next of :func:`start_candidates` (the reference start).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..model import ModelParams
from .state import OrderParams, flatten, teacher_frame

SEMANTIC_C = 0.7
"""θ = c σ², q = 1.1 c² σ² on the semantic start (as the split-rule start)."""
CURVATURE_K = {"semantic": 0.6, "positional": 1.9, "free": 0.6, "uninformative": 0.6}
"""k of ``V̂ ≈ k α σ² q`` per branch (the split-rule start's: 0.5–0.7 measured on the semantic branch at
σ ∈ {0.5, 0.7}, λ ∈ {0.001, 0.01}; 1.88–1.92 on the positional one at σ = 0.5, ω = 0.3)."""
DEFAULT_ALPHA = 1.0
"""α assumed by :func:`model_start` when none is given."""
TEACHER_SAMPLES = 4096
"""Monte Carlo samples (fixed seed) of :func:`teacher_self_weight` beyond L = 2."""


def self_weight_quadrature(sigma: float, order: int = 24) -> float:
    """E[softmax(h* h*ᵀ)_11] at L = 2, r* = 1 (MODEL.md §1): Gauss–Hermite in h*_1, h*_2 ~ N(0, σ²)."""
    t, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    h1, h2 = np.meshgrid(sigma * t, sigma * t, indexing="ij")
    return float(np.einsum("i,j,ij->", w, w, 1.0 / (1.0 + np.exp(np.clip(h1 * h2 - h1 * h1, -700, 700)))))


@lru_cache(maxsize=64)
def self_weight_monte_carlo(L: int, r_star: int, sigma: float) -> float:
    """E[softmax(h* h*ᵀ)_ll] with h*_l ~ N(0, σ² I_{r*}), any L, r* (MODEL.md §1): ``TEACHER_SAMPLES`` Monte Carlo
    samples with a fixed seed (a start needs two digits)."""
    h = sigma * np.random.default_rng(0).standard_normal((TEACHER_SAMPLES, L, r_star))
    logits = np.einsum("nlr,nmr->nlm", h, h)
    logits -= logits.max(axis=-1, keepdims=True)
    S = np.exp(logits)
    S /= S.sum(axis=-1, keepdims=True)
    return float(np.mean(np.einsum("nll->nl", S)))


def teacher_self_weight(params: ModelParams) -> float:
    """t = E[(1/L) Σ_l T_ll], the mean weight a token gives itself in the teacher's attention
    ``T = (1 − ω) softmax(h* h*ᵀ) + ω A`` (MODEL.md §1)."""
    A = np.asarray(params.A, float)
    sem = (self_weight_quadrature(float(params.sigma)) if params.L == 2 and params.r_star == 1
           else self_weight_monte_carlo(params.L, params.r_star, float(params.sigma)))
    return (1.0 - params.omega) * sem + params.omega * float(np.trace(A)) / params.L


def encoding_scale(params: ModelParams) -> float:
    """The root mean square of the encodings' norms ‖P_l‖ (1 for the paper's P = (1, −1)ᵀ and for P = I); 1 where
    P = 0."""
    P = np.asarray(params.P, float)
    rms = float(np.sqrt(np.mean(np.sum(P * P, axis=1))))
    return rms if rms > 0 else 1.0


def positional_overlap(params: ModelParams) -> float:
    """m of the positional start: ``m² = (logit(t) + log(L − 1))/4``, at least 0.01 (module docstring), divided by
    the encodings' scale (:func:`encoding_scale`): the positional logits are ``m² P_l·P_k``, so the attention
    asked for needs m/c at P = c·(1, −1)ᵀ. Before, m ignored P: at P = 2·(1, −1)ᵀ the start was twice the fixed
    point's m·c and the iteration left for the m = 0 point or an invalid state (issue 11, helper hA;
    docs/notes/2026-12-05-theory-general.md, "Large α and larger encodings in the engine")."""
    L = params.L
    t = min(max(teacher_self_weight(params), 1.0 / L + 1e-6), 1.0 - 1e-6)
    return math.sqrt(max(0.25 * (math.log(t / (1.0 - t)) + math.log(L - 1)), 0.01)) / encoding_scale(params)


def prior_V(params: ModelParams, alpha: float, branch: str, q: float) -> float:
    """``V = σ² / (λ + σ² V̂)`` with ``V̂ = k α σ² q`` (MODEL.md §8 prior; k from ``CURVATURE_K``)."""
    s2 = params.sigma ** 2
    return s2 / (params.lam + s2 * CURVATURE_K[branch] * float(alpha) * s2 * q)


def model_start(params: ModelParams, branch: str, alpha: float | None = None) -> OrderParams:
    """The starting point of ``branch`` at ``alpha`` (default ``DEFAULT_ALPHA``) on the branch's subspace
    (module docstring): q (r×r), M (r×k), θ (r×r*), V (r×r)."""
    alpha = DEFAULT_ALPHA if alpha is None else float(alpha)
    r, k, rs = params.r, params.k, params.r_star
    s2, s = params.sigma ** 2, params.sigma
    th = np.zeros((r, rs))
    M = np.zeros((r, k))
    if r > 1:
        return _rank_r_start(params, branch, alpha)
    c, m = SEMANTIC_C, positional_overlap(params)
    q_sem, q_pos = 1.1 * c * c * s2, 3.0 * s2 * m * m
    if branch == "semantic":
        q1 = q_sem
        th[0, 0] = c * s2
    elif branch == "positional":
        q1 = q_pos
        M[0, 0] = m
    elif branch == "free":          # r = 1: both overlaps at half their pure values
        q1 = 0.5 * (q_sem + q_pos)
        th[0, 0], M[0, 0] = 0.5 * c * s2, 0.5 * m
    else:
        q1 = 0.3 * s2
    return OrderParams(q1 * np.eye(r), M, th, prior_V(params, alpha, branch, q1) * np.eye(r))


REFERENCE_LAM = 0.01
"""λ at which the rank-r start's magnitudes were measured (σ = 0.5, ω = 0.3, α ∈ [1, 2])."""


def reference_start(params: ModelParams, branch: str) -> OrderParams:
    """The magnitudes measured on the fixed points at σ = 0.5, λ = 0.01, ω = 0.3, α ∈ [1, 2], in units of σ
    (the engine's only start before; semantic q = 0.4 σ², θ = 0.6 σ², V = 48 σ²; positional q = 0.2 σ²
    (L = 2; 0.4 σ² beyond, 0.2 σ² is invalid there), m = 0.5 σ, V = 44 σ²; r > 1: q, V ∝ I — the further
    directions fit noise, V̂ ≤ 0 there, so V per direction is 2–4× the rank-1 value; ``free`` at the mixed
    point: θ ≈ 0.4 σ², q₁₁ ≈ 0.24 σ² on direction 1, m ≈ 0.44 σ, q₂₂ ≈ 0.08 σ² on direction 2, V ≈ 68 σ²)."""
    r, k, rs = params.r, params.k, params.r_star
    s2, s = params.sigma ** 2, params.sigma
    th = np.zeros((r, rs))
    M = np.zeros((r, k))
    if branch == "free" and r > 1:
        th[0, 0], M[1, 0] = 0.4 * s2, 0.44 * s
        return OrderParams(s2 * np.diag([0.24, 0.08] + [0.08] * (r - 2)), M, th, 68.0 * s2 * np.eye(r))
    pos = branch == "positional"
    q = (0.2 if pos and params.L == 2 else 0.4) * s2 * np.eye(r)
    if branch in ("semantic", "free"):
        th[0, 0] = 0.6 * s2
    if branch in ("positional", "free"):
        M[0, 0] = 0.5 * s
    return OrderParams(q, M, th, (44.0 if pos else 48.0) * s2 * np.eye(r))


def _rank_r_start(params: ModelParams, branch: str, alpha: float) -> OrderParams:
    """r > 1: :func:`reference_start` (the rank-1 prior-side V is far too small there: measured at σ = 0.7,
    α = 1 semantic, ``invalid_state`` from it against converged from the reference) with V carried to the
    point's λ, α by the prior side: × V_prior(λ, α) / V_prior(``REFERENCE_LAM``, α) (:func:`prior_V`; 1 at
    λ = 0.01)."""
    x = reference_start(params, branch)
    q1 = float(np.trace(x.q)) / params.r
    f = prior_V(params, alpha, branch, q1) / prior_V(params.replace(lam=REFERENCE_LAM), alpha, branch, q1)
    return x._replace(V=x.V * f)


def start_candidates(params: ModelParams, branch: str, alpha: float | None = None) -> list[tuple[str, OrderParams]]:
    """The starts the engine tries in turn for a point whose solve failed (``max_steps``, ``invalid_state``,
    ``diverged``; a verdict — converged, ``not_significant``, ``collapsed`` — ends the list): the model start
    (:func:`model_start`), then :func:`reference_start` where it differs, then (semantic, r, r* > 1)
    :func:`full_signal_start`. Neither of the first two alone converges everywhere:
    measured at 512–1024 × 4 (docs/notes/2026-12-05-theory-general.md), L = 2 λ = 0.001 semantic α = 2 only from the model
    start, L = 3 σ = 1 semantic α = 2 only from the reference."""
    out = [("model", model_start(params, branch, alpha))]
    ref = reference_start(params, branch)
    if not all(np.allclose(a, b, rtol=1e-12, atol=0.0) for a, b in zip(out[0][1], ref)):
        out.append(("reference", ref))
    full = full_signal_start(params, branch, alpha)
    if full is not None:
        out.append(("full_signal", full))
    return out


def full_signal_start(params: ModelParams, branch: str, alpha: float | None = None) -> OrderParams | None:
    """Semantic, r > 1 and r* > 1: the rank-r start (:func:`_rank_r_start`) with the semantic overlap on each
    of the min(r, r*) directions the signal can use (θ_jj = 0.6 σ², j < min(r, r*)) instead of on the first
    only; None elsewhere. Measured at r = 2, r* = 3 (L = 2, σ = 0.5, α = 4; docs/notes/2026-12-05-theory-general.md, "r < r*
    follow-ups"): from the rank-1 θ the first map call gives V̂₂₂ = −0.042 < −λ/σ² (D = λ + σ²V̂ not positive:
    ``invalid_state`` on every scramble); from this start it converges, to θ's two singular values 0.19, 0.19."""
    rho = min(params.r, params.r_star)
    if branch != "semantic" or rho < 2:
        return None
    x = _rank_r_start(params, branch, DEFAULT_ALPHA if alpha is None else float(alpha))
    th = np.array(x.theta, float)
    th[np.arange(rho), np.arange(rho)] = th[0, 0]
    return x._replace(theta=th)


def default_init(params: ModelParams, branch: str, alpha: float | None = None) -> OrderParams:
    """A starting point on the branch's subspace derived from the model at ``alpha`` (σ, λ, ω, A, P, α;
    :func:`starts.model_start`: the split-rule start's magnitudes for any L, r, r*, V from the prior side).

    Before (issue 11): magnitudes fixed in units of σ, measured at σ = 0.5, λ = 0.01 (V = 44–48 σ², now
    :func:`starts.reference_start`, the second start); e.g. L = 2, λ = 0.001, α = 2 semantic went
    ``invalid_state`` from it and converges from the model start (docs/notes/2026-12-05-theory-general.md, "Starts away from
    σ = 0.5, λ = 0.01")."""
    return model_start(params, branch, alpha)


def start_vector(x: OrderParams) -> np.ndarray:
    """A start as the iteration's flat state: float arrays, θ in the teacher frame at r < r*
    (:func:`state.teacher_frame`, the subspace the map keeps it in: :func:`teacher_pin`)."""
    return np.asarray(flatten(teacher_frame(OrderParams(*(np.asarray(b, float) for b in x)))))
