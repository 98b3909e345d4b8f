"""The split rule as an integrator (MODEL.md §6, L = 2, r = r* = 1): the map ``x ↦ prior(channel(x))`` with
the hats pinned to a branch (:class:`SplitMap`), its iteration by the one fixed-point loop
(:func:`iterate_split`: :func:`.fixed_point.iterate` with the split rule's options), the collapse snap of a
pinned branch (:class:`CollapseSnap`), the growth factor of a pinned direction (:func:`growth`) and the
:class:`~.integrator.Integrator` form (:class:`SplitIntegrator`).

A state is a flat vector of the 1 × 1 blocks of :class:`~.state.OrderParams` (:func:`to_vector`,
:func:`to_state`); components are named through :data:`IDX`, never by position.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ..model import ModelParams
from . import fixed_point
from .channel import channel
from .integrator import MapValue, as_states
from .onset_newton import crawling, newton_candidates, zero_attracts
from .prior import prior
from .quadrature import ProductRule
from .solution import scalar_state
from .state import Hats, OrderParams, overlap_vanished
from .switching import SplitRule
from .zero_point import ZERO_Q

IDX = {"q": 0, "M": 1, "V": 2, "theta": 3}
"""Component of each 1 × 1 block of :class:`OrderParams` in the split rule's state vector. The order is the
split rule's own (q, m, V, θ), kept so that its iteration (Anderson's least squares, Newton's linear solves) is
the same to the last bit as before the one loop (issue 29); code names the components, never their positions."""
Q, M, THETA, V = IDX["q"], IDX["M"], IDX["theta"], IDX["V"]
PINNED = {"semantic": ("M",), "positional": ("theta",), "uninformative": ("M", "theta"), "free": ()}
"""The blocks whose hats a branch pins to 0 (M̂ semantic, θ̂ positional; MODEL.md §6 "Branches")."""
OVERLAP = {"positional": "M", "semantic": "theta"}
"""The defining overlap of a pinned branch (m positional, θ semantic)."""
FLOOR = 1e-9
STABILITY_EPS = 1e-2
"""Relative size of the finite difference of :func:`growth`. The map is odd in the pinned overlap, so the
one-sided difference is off by O(eps²) only, while the rule's noise floor (~3e-7, MODEL.md §7) enters as
noise/(eps·√q): at 1e-4 that noise made the factor scatter by ~0.03 with spikes (ω = 0.377 near the semantic
end: 0.84 against 1.07–1.11 at α = 0.97, +0.02 against −0.20 at α = 1.2); 1e-2 and 3e-2 agree to ~0.03."""


MISS_LIMIT = 2
"""Failed certifications of the fast map after which a stage evaluates globally only."""


def pin_mask(branch: str) -> np.ndarray:
    """Boolean mask of the components ``branch`` pins (:data:`PINNED`)."""
    mask = np.zeros(len(IDX), bool)
    mask[[IDX[b] for b in PINNED[branch]]] = True
    return mask


def to_vector(x: OrderParams) -> np.ndarray:
    """A 1 × 1-block state as the split rule's vector (signs kept)."""
    v = np.zeros(len(IDX))
    for name, i in IDX.items():
        v[i] = float(np.asarray(getattr(x, name)).reshape(-1)[0])
    return v


def to_state(v: np.ndarray) -> OrderParams:
    """The split rule's vector as a state of 1 × 1 blocks."""
    return OrderParams(**{name: np.array([[float(v[i])]]) for name, i in IDX.items()})


def to_hats(h: np.ndarray) -> Hats:
    """The split rule's hat vector (components as :data:`IDX`) as 1 × 1 blocks."""
    return Hats(**{f"{name}_hat": np.array([[float(h[i])]]) for name, i in IDX.items()})


__all__ = ["IDX", "PINNED", "OVERLAP", "STABILITY_EPS", "SplitMap", "SplitIntegrator", "CollapseSnap", "iterate_split",
           "stability", "growth", "make_rule", "pin_mask", "to_vector", "to_state", "to_hats", "scalar_state"]


def make_rule(nodes: int, rule: str = "split"):
    """The integration rule of a given resolution: :class:`SplitRule` (Gauss–Hermite order ``nodes`` in
    ξ_v, y_v; ``4·nodes`` panels in y_u) or :class:`ProductRule` (``nodes`` per dimension)."""
    return SplitRule.of(nodes) if rule == "split" else ProductRule(nodes)


class SplitMap:
    """The fixed-point map of MODEL.md §6 at one (params, α), hats pinned to ``branch`` (:data:`PINNED`).

    ``fast``: after the first evaluation the prox is continued from the previous evaluation's minimisers only
    (``channel(global_search=False)``); ``last_global`` says whether the last evaluation ran the full global
    search (the first one always does). :func:`iterate_split` certifies a converged fast evaluation with a
    global one at the same state."""

    def __init__(self, params: ModelParams, alpha: float, branch: str, rule, fast: bool = False):
        self.params, self.alpha, self.branch, self.rule, self.fast = params, float(alpha), branch, rule, fast
        self.pins = pin_mask(branch)
        self.warm = None
        self.evals = self.global_evals = 0
        self.last_global = True
        self.error = ""
        self.certifying = False            # the last batch call certified a fast evaluation (global, same state)
        self.misses = 0

    def hats(self, x: np.ndarray, global_search: bool | None = None):
        """The pinned hats at ``x`` (vector in :data:`IDX` order) and the channel's result."""
        full = (not self.fast) if global_search is None else global_search
        full = full or self.warm is None
        q, m, th, V_ = (float(x[i]) for i in (Q, M, THETA, V))
        ch = channel(self.params, self.alpha, q, m, V_, th, self.rule, warm=self.warm, global_search=full)
        self.warm = ch.h
        self.evals += 1
        self.global_evals += int(full)
        self.last_global = full
        h = np.zeros(len(IDX))
        h[[Q, M, THETA, V]] = ch.q_hat, ch.m_hat, ch.theta_hat, ch.V_hat
        h[self.pins] = 0.0
        return h, ch

    def __call__(self, x: np.ndarray, global_search: bool | None = None):
        """``(F(x), hats, channel result)``; raises FloatingPointError where the prior side fails (D ≤ 0)."""
        h, ch = self.hats(x, global_search)
        q, m, V_, th = prior(self.params, h[Q], h[M], h[V], h[THETA])
        fx = np.zeros(len(IDX))
        fx[[Q, M, THETA, V]] = q, m, th, V_
        return fx, h, ch

    def batch(self, X: np.ndarray, idx, full: np.ndarray):
        """The loop's two-tier form (:func:`.fixed_point.iterate`, ``compact``, ``full_every``): rows ``X`` with
        ``full`` the global search asked for (the fast map's warm continuation otherwise). A failed evaluation
        is invalid (``ok`` False, its message in :attr:`error`)."""
        FX, ok = np.array(X, float), np.ones(len(X), bool)
        H, EM, used = np.full_like(FX, np.nan), np.full(len(X), np.nan), np.ones(len(X), bool)
        self.certifying = bool(self.fast and np.all(full) and not self.last_global)
        for i, x in enumerate(X):
            try:
                FX[i], H[i], ch = self(x, global_search=bool(full[i]) or not self.fast)
                EM[i] = ch.EM
            except FloatingPointError as exc:
                ok[i], self.error = False, str(exc)
            used[i] = self.last_global
        return FX, ok, {"hats": H, "EM": EM, fixed_point.FULL_TIER: used}

    def step_taken(self, miss_limit: int = 2) -> None:
        """The loop steps on: a certification just before it missed (its global residual was not below rtol);
        after ``miss_limit`` misses the map is global from then on (the warm starts missed a basin)."""
        if self.certifying:
            self.misses += 1
            self.fast = self.fast and self.misses < miss_limit
            self.certifying = False

    @contextmanager
    def unpinned(self):
        """Inside the block the map is the full (unpinned) one; the warm state is shared."""
        saved, self.pins = self.pins, np.zeros(len(IDX), bool)
        try:
            yield self
        finally:
            self.pins = saved


def rel_change(a: np.ndarray, b: np.ndarray, floor=FLOOR) -> float:
    """``max |a − b| / (max(|a|, |b|) + floor)`` over the components."""
    return float(np.max(np.abs(a - b) / (np.maximum(np.abs(a), np.abs(b)) + floor)))


def state_floors(params: ModelParams, x: np.ndarray) -> np.ndarray:
    """Scales below which a change of an order parameter counts as absolute: m and θ against 1e-3·σ√q (both
    are bounded by that scale; on a collapsing branch they shrink to round-off)."""
    xo = 1e-3 * params.sigma * math.sqrt(max(abs(x[Q]), 0.0))
    out = np.full(len(IDX), FLOOR)
    out[[M, THETA]] += xo
    return out


def hat_floors(params: ModelParams, h: np.ndarray) -> np.ndarray:
    """m̂ and θ̂ against 1e-3·√q̂, V̂ (which may cross zero) against 1e-3·(λ/σ² + 1e-6)."""
    ho = 1e-3 * math.sqrt(max(abs(h[Q]), 0.0))
    out = np.full(len(IDX), FLOOR)
    out[[M, THETA]] += ho
    out[V] = 1e-3 * (params.lam / params.sigma ** 2 + 1e-6)
    return out


def growth(F: SplitMap, x: np.ndarray, i: int, d: float, shrink: tuple[float, ...] = (1.0, 0.1, 0.01)) -> float:
    """``F(x + d·s·e_i)_i / (d·s)`` at the first ``s`` of ``shrink`` whose perturbed state the map accepts.
    Where it does not (D = λ + σ²V̂ ≤ 0 in the prior: σ = 0.3, ω = 0.02 near the positional branch's beginning)
    the step is divided by 10, twice; if it still fails the factor is NaN — unknown, never a number (the
    continuation labels the point ``stability unknown``)."""
    for s in shrink:
        xp = x.copy()
        xp[i] += d * s
        try:
            fx, _, _ = F(xp)
        except FloatingPointError:
            continue
        return float(fx[i] / (d * s))
    return float("nan")


def stability(F: SplitMap, x: np.ndarray, branch: str, eps: float = STABILITY_EPS) -> float:
    """Growth factor of the pinned direction under the full (unpinned) map, linearised at the fixed point
    (MODEL.md §7): ``∂x'_p / ∂x_p`` (x_p = m semantic, θ positional, the max of both uninformative) by a
    one-sided difference of size ``eps·√q`` (the map is odd in x_p: exact to O(eps²))."""
    idx = [IDX[b] for b in PINNED[branch]]
    with F.unpinned():
        out = [growth(F, x, i, eps * math.sqrt(max(x[Q], 1e-12))) for i in idx]
    return float("nan") if any(math.isnan(v) for v in out) else max(out)


@dataclass
class CollapseSnap:
    """Collapse of a pinned branch onto the uninformative point, decided once per stage (MODEL.md §7).

    Where the iterate's overlap x_p (m positional, θ semantic) has vanished (:func:`.state.overlap_vanished`,
    or an Anderson candidate puts it there), the growth factor of x_p at x_p = 0 is evaluated once (one unpinned
    map evaluation); if it is below +1, x_p = 0 attracts and x_p is set to exactly 0 from then on (the map keeps
    it 0 by the exact symmetry), so the point converges onto the uninformative point in (q, V) instead of
    crawling there (docs/notes/2026-12-05-theory-general.md, "Collapsing pinned branches"). Where the factor is
    ≥ 1 (or unknown) nothing changes."""

    F: SplitMap
    ok: bool | None = None                 # x_p = 0 attracts (evaluated at the first need)
    p: int | None = field(init=False)

    def __post_init__(self):
        self.p = IDX[OVERLAP[self.F.branch]] if self.F.branch in OVERLAP else None

    def _small(self, x: np.ndarray) -> bool:
        return (self.p is not None and not math.isnan(float(x[self.p]))
                and overlap_vanished(float(x[self.p]), float(x[Q]), self.F.params.sigma) and x[Q] > 0)

    def _attracts(self, x: np.ndarray) -> bool:
        if self.ok is None:
            xz = x.copy()
            xz[self.p] = 0.0
            with self.F.unpinned():
                g = growth(self.F, xz, self.p, STABILITY_EPS * math.sqrt(max(float(x[Q]), 1e-12)))
            self.ok = bool(g < 1.0)     # NaN: unknown, no snap
        return self.ok

    def guarded(self, cand: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``cand`` for the Anderson step's size guard: an x_p that the candidate puts below the collapse scale
        (and that will be snapped) does not count as a jump."""
        if self.p is None or not self._small(cand) or not self._attracts(cand):
            return cand
        out = cand.copy()
        out[self.p] = x[self.p]
        return out

    def apply(self, x: np.ndarray) -> None:
        """Set x_p = 0 in place where it is below the collapse scale and x_p = 0 attracts."""
        if self.p is not None and x[self.p] != 0.0 and self._small(x) and self._attracts(x):
            x[self.p] = 0.0


def iterate_split(F: SplitMap, x: np.ndarray, rtol: float, max_steps: int, damping: float, anderson: int,
                  history: tuple | None = None) -> fixed_point.Run:
    """The split rule's stage of the one loop (:func:`.fixed_point.iterate`) from ``x``: damping + Anderson on
    the UNDAMPED residual ``max(|F(x) − x| / |x|, |x̂(x_k) − x̂(x_{k−1})| / |x̂|)`` over all eight order
    parameters (floors: :func:`state_floors`, :func:`hat_floors`), a fast evaluation certified by a global one
    at the same state (two misses: global from then on), Anderson candidates accepted where q, V > 0 and no
    component changes by half (the collapse snap's overlap excepted), then pins, the collapse snap
    (:class:`CollapseSnap`) and the q = 0 point (below ``ZERO_Q·σ²``) applied to every new iterate; Newton steps
    in √q next to an onset from q = 0 (:mod:`.onset_newton`). ``history``: Anderson pairs of a previous stage
    (the same map on a coarser rule). One row; ``Run.aux`` holds the hats and E[M] at the returned state."""
    params, pins = F.params, F.pins
    snap = CollapseSnap(F)
    zero_q = ZERO_Q * params.sigma ** 2
    newton_mode: dict = {}

    def residual(X, FX):
        return np.array([rel_change(fx, x_, state_floors(params, x_)) for x_, fx in zip(X, FX)])

    def aux_residual(aux, prev):
        return np.array([rel_change(h, hp, hat_floors(params, h)) for h, hp in zip(aux["hats"], prev["hats"])])

    def guard(cand, x_, _row):
        c = cand.copy()
        c[pins] = 0.0
        return bool(c[Q] > 0 and c[V] > 0 and rel_change(snap.guarded(c, x_), x_) < 0.5)

    def project(X, _rows):
        X = np.array(X, float)
        for x_ in X:
            x_[pins] = 0.0
            snap.apply(x_)
            if x_[Q] < zero_q:
                x_[[Q, M, THETA]] = 0.0     # round-off around q = 0: the q = 0 point itself (zero_point.py)
        return X

    def newton(X, FX, rows, residuals):      # (called first in every step of an active row)
        out = np.full_like(X, np.nan)
        if not rows[0]:
            return out
        F.step_taken(MISS_LIMIT)
        hist = [float(r) for r in residuals[0] if not math.isnan(r)]
        if "to_zero" not in newton_mode and crawling(hist, float(X[0, Q]), params.sigma):
            newton_mode["to_zero"] = zero_attracts(params, F.alpha, F.branch)
        if "to_zero" in newton_mode:
            out[0] = newton_candidates(lambda Xs: np.stack([F(x_)[0] for x_ in Xs]), X[0], FX[0], ~pins,
                                       newton_mode["to_zero"], v_index=V)[0]
        return out

    return fixed_point.iterate(F.batch, np.asarray(x, float)[None], residual, rtol=rtol, max_steps=max_steps,
                               damping=damping, anderson=anderson, history=history, compact=True,
                               full_every=max_steps + 1, aux_residual=aux_residual, certify_same=True,
                               miss_limit=MISS_LIMIT, step_guard=guard, free=~pins, project=project, creep=False,
                               newton=newton)


@dataclass(frozen=True)
class SplitIntegrator:
    """The split rule (or the product Gauss–Hermite rule, ``rule="product"``) as an
    :class:`~.integrator.Integrator`: outer order ``nodes`` (:func:`make_rule`), full global prox search at every
    evaluation."""

    params: ModelParams
    nodes: int = 8
    rule: str = "split"
    name: str = "split"

    def evaluate(self, states, alpha: float, branch: str = "free") -> MapValue:
        xs, out, hats, ok = as_states(states), [], [], []
        F = SplitMap(self.params, alpha, branch, make_rule(self.nodes, self.rule))
        for x in xs:
            try:
                fx, h, _ = F(to_vector(x))
                out.append(to_state(fx))
                hats.append(to_hats(h))
                ok.append(True)
            except FloatingPointError:
                out.append(to_state(np.full(len(IDX), np.nan)))
                hats.append(Hats(*(np.full((1, 1), np.nan) for _ in IDX)))
                ok.append(False)
        return MapValue(out, hats, np.array(ok, bool))

    @property
    def resolution(self) -> dict:
        return {"rule": self.rule, "nodes": self.nodes}

    def finer(self) -> "SplitIntegrator":
        """The next finer outer order (twice the order, at most 40)."""
        return SplitIntegrator(self.params, min(2 * self.nodes, 40), self.rule, self.name)
