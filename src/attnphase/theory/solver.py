"""Fixed-point solver of MODEL.md §6 (L = 2, r = 1): damped iteration with Anderson mixing, branches pinned
on their invariant subspaces, stability of each pinned branch against its pinned direction."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np

from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from .channel import channel
from .observables import eps_g as _eps_g, free_energy
from .prior import prior
from .quadrature import ProductRule
from .routing import has_paper_encodings
from .state import overlap_vanished
from .switching import SplitRule
from .ladder import LADDER_FROM, Ladder
from .onset_newton import crawling, newton_candidate, zero_attracts
from .zero_point import ZERO_Q, largest_growth

BRANCHES = ("semantic", "positional", "uninformative", "free")
DEFAULT_NODES = 8
"""Default resolution ``nodes`` of the split-line rule: Gauss–Hermite order ``nodes`` in ξ_v, y_v and
``4·nodes`` composite Gauss–Legendre panels in y_u (docs/theory.md, convergence study)."""

SCALE_NODES = ((0.7, 8), (1.3, 16), (2.0, 24))
"""(largest student norm q, outer order of the split rule) measured accurate to ~1e-3 relative in q, θ, e_t
(issue 11 audit; docs/notes/2026-12-05-theory-general.md "Split rule: the resolution follows the student's scale"): the
integrand sharpens with q (the scores scale with it), so order 8, accurate to ~1e-5 at σ = 0.5 (q ≈ 0.12), is
6.6e-4 off in e_t at σ = 1 (q ≈ 0.6), 1.3e-2 at σ = 1.5 (q ≈ 1.2) and 1.4e-2 at σ = 2 (q ≈ 1.8); order 16 is
1.2e-4 off at σ = 1.5, order 24 2e-4 at σ = 2 (each against the next finer order, α = 2, ω = 0.3)."""
BEYOND_SCALE_NODES = 32
"""Order used above the measured range (q > 2): not validated there (:func:`resolution_note` says so)."""


def nodes_for_scale(q: float) -> int:
    """The smallest outer order of the split rule measured accurate (~1e-3) at student norm ``q``
    (:data:`SCALE_NODES`; :data:`BEYOND_SCALE_NODES` above it)."""
    for q_max, nodes in SCALE_NODES:
        if q <= q_max:
            return nodes
    return BEYOND_SCALE_NODES


def resolution_note(q: float, nodes: int, rule: str = "split") -> str | None:
    """A one-line note where the split rule at order ``nodes`` is used beyond the student norm it was measured
    accurate at (:data:`SCALE_NODES`); None where it is within it."""
    if rule != "split" or not np.isfinite(q):
        return None
    need = nodes_for_scale(q)
    if nodes >= need and q <= SCALE_NODES[-1][0]:
        return None
    if nodes >= need:
        return (f"q = {q:.3g} is beyond the range where the split rule's accuracy was measured (q ≤ "
                f"{SCALE_NODES[-1][0]:g}); compare with a finer --nodes")
    return (f"q = {q:.3g}: the split rule at nodes = {nodes} is accurate to ~1e-3 only for q ≤ "
            f"{max((qm for qm, n in SCALE_NODES if n <= nodes), default=0.0):g}; use nodes ≥ {need}")


_PINS = {"semantic": (False, True, False, False),       # pinned (q, m, V, θ): m̂ = 0
         "positional": (False, False, False, True),     # θ̂ = 0
         "uninformative": (False, True, False, True),
         "free": (False, False, False, False)}
_FLOOR = 1e-9


@dataclass(frozen=True)
class FixedPointSolution:
    alpha: float
    branch: str
    params: ModelParams
    q: float
    m: float
    V: float
    theta: float
    q_hat: float
    m_hat: float
    V_hat: float
    theta_hat: float
    eps_g: float
    e_t: float
    converged: bool
    iterations: int
    residual: float
    status: str
    stability: float | None
    stable: bool | None
    """``stability ≤ 1``: the growth factor of the pinned direction is the undamped map's eigenvalue there, and
    only its crossing of +1 is an instability (MODEL.md §7); a factor below −1 (semantic, ω = 0, α = 2: −3.69)
    makes the plain iteration oscillate but is stable — the training loss along m is convex there, curvature
    D (1 − g) (docs/notes/2026-12-05-theory-general.md, "Collapsing pinned branches")."""
    nodes: int
    rule: str = "split"
    fast_map: bool = False
    """Whether the iteration used the fast (warm-started) map; the returned point is then the value of a
    full global-search evaluation that passed the same convergence test (``_iterate``)."""
    stability_nodes: int | None = None
    """Outer order of the split rule the growth factor ``stability`` was evaluated on (None: not evaluated);
    by default ``min(nodes, STABILITY_NODES)``, see :func:`solve_point`'s ``stability_nodes``."""
    start: str = "given or model"
    """Where the iteration started: ``"given or model"`` (``init``, or :func:`start_state`), or ``"continuation
    from α = … (n steps)"`` where a failed cold start at large α was rescued (:func:`solve_point`'s
    ``continuation``), or ``"model, damping 0.6 (at 0.3 it …)"`` where the second cold start at the default
    damping was kept (:data:`COLD_DAMPING`)."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = self.params.to_dict()
        return d


RULES = ("split", "product")
COARSE_NODES = 4
"""Outer order of the coarse split rule that a solve converges on first (to ``COARSE_RTOL``) before the
default rule polishes the point (MODEL.md §7: the coarse map is ~1e-3 off, a good start)."""
COARSE_RTOL = 1e-4
STABILITY_NODES = 4
"""Default resolution of the (unpinned, so unsymmetrised and twice as costly) map evaluation behind
``stability`` (:func:`solve_point` uses ``min(nodes, STABILITY_NODES)`` unless told ``stability_nodes``): the
growth factor is a smooth derivative, accurate to ~1e-2 absolute on this rule (docs/theory.md) — enough to
classify a point, not to locate where the factor crosses +1 to 1e-3 in α (σ = 1, ω = 0.02: the uninformative
point's factor crosses at α ≈ 0.499 on this rule, ≈ 0.513 at nodes 8; docs/notes/2026-12-03-phase-boundaries.md)."""


def _validate(params: ModelParams, alpha: float, branch: str, nodes: int, rule: str) -> None:
    if not isinstance(params, ModelParams):
        raise ParameterError("params", "a ModelParams", type(params).__name__)
    if params.L != 2 or params.r != 1 or params.r_star != 1:
        raise ParameterError("params", "L = 2, r = 1, r_star = 1 (the solvable case of MODEL.md §6)",
                             (params.L, params.r, params.r_star))
    if not has_paper_encodings(params):
        raise ParameterError("P", "(1, -1)ᵀ or (-1, 1)ᵀ for the L = 2 solver of MODEL.md §6 (it hard-codes the "
                             "paper's encodings; another P needs the QMC engine, integrator='qmc')",
                             [list(row) for row in params.P])
    check_range("alpha", alpha, lo=0.0, lo_open=True)
    if branch not in BRANCHES:
        raise ParameterError("branch", f"one of {', '.join(BRANCHES)}", branch)
    if rule not in RULES:
        raise ParameterError("rule", f"one of {', '.join(RULES)}", rule)
    check_int("nodes", nodes, 2)
    if nodes > 40:
        raise ParameterError("nodes", "an integer in [2, 40] (resolution of the integration rule)", nodes)
    if rule == "split" and nodes % 2:
        raise ParameterError("nodes", "even for the split rule (an odd order puts nodes on the tokens' mirror "
                             "plane, where the prox has exact ties)", nodes)


def make_rule(nodes: int, rule: str = "split"):
    """The integration rule of a given resolution: :class:`SplitRule` (Gauss–Hermite order ``nodes`` in
    ξ_v, y_v; ``4·nodes`` panels in y_u) or :class:`ProductRule` (``nodes`` per dimension)."""
    return SplitRule.of(nodes) if rule == "split" else ProductRule(nodes)


class _Map:
    """The fixed-point map x = (q, m, V, θ) -> prior(channel(x)) of MODEL.md §6, hats pinned to the branch.

    ``fast``: after the first evaluation the prox is continued from the previous evaluation's minimisers only
    (``channel(global_search=False)``); ``last_global`` says whether the last evaluation ran the full global
    search (the first one always does). ``_iterate`` confirms a converged fast evaluation with a global one.
    """

    def __init__(self, params, alpha, branch, rule, fast: bool = False):
        self.params, self.alpha, self.pins, self.rule = params, alpha, _PINS[branch], rule
        self.branch = branch
        self.fast = fast
        self.warm = None
        self.evals = 0
        self.global_evals = 0
        self.last_global = True

    def hats(self, x, global_search: bool | None = None):
        q, m, V, th = x
        full = (not self.fast) if global_search is None else global_search
        full = full or self.warm is None
        ch = channel(self.params, self.alpha, q, m, V, th, self.rule, warm=self.warm, global_search=full)
        self.warm = ch.h
        self.evals += 1
        self.global_evals += int(full)
        self.last_global = full
        h = np.array([ch.q_hat, ch.m_hat, ch.V_hat, ch.theta_hat])
        h[np.array(self.pins)] = 0.0
        return h, ch

    def __call__(self, x, global_search: bool | None = None):
        h, ch = self.hats(x, global_search)
        return np.array(prior(self.params, *h)), h, ch


def _rel(a, b, floor=_FLOOR):
    return float(np.max(np.abs(a - b) / (np.maximum(np.abs(a), np.abs(b)) + floor)))


def _floors(params: ModelParams, x: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scales below which a change of an order parameter counts as absolute, not relative: m and θ against
    1e-3·σ√q (both are bounded by that scale; on a collapsing branch they shrink to round-off, whose relative
    change is meaningless), m̂ and θ̂ against 1e-3·√q̂, V̂ (which may cross zero) against 1e-3·(λ/σ² + 1e-6)."""
    s2 = params.sigma ** 2
    xo = 1e-3 * params.sigma * math.sqrt(max(abs(x[0]), 0.0))
    ho = 1e-3 * math.sqrt(max(abs(h[0]), 0.0))
    return (np.array([_FLOOR, _FLOOR + xo, _FLOOR, _FLOOR + xo]),
            np.array([_FLOOR, _FLOOR + ho, 1e-3 * (params.lam / s2 + 1e-6), _FLOOR + ho]))


def _teacher_diagonal(params: ModelParams, order: int = 24) -> float:
    """E[T_11 + T_22]/2 of the teacher attention (MODEL.md §1, L = 2): the mean weight a token gives itself.
    Gauss–Hermite in the two teacher pre-activations h*_l ~ N(0, σ²)."""
    t, w = np.polynomial.hermite_e.hermegauss(order)
    w = w / w.sum()
    h1, h2 = np.meshgrid(params.sigma * t, params.sigma * t, indexing="ij")
    self_weight = 1.0 / (1.0 + np.exp(np.clip(h1 * h2 - h1 * h1, -700, 700)))  # softmax(h* h*ᵀ)_11
    semantic = float(np.einsum("i,j,ij->", w, w, self_weight))
    A = np.asarray(params.A, float)
    return (1.0 - params.omega) * semantic + params.omega * 0.5 * float(A[0, 0] + A[1, 1])


def positional_q_factor(omega: float) -> float:
    """q / (σ² m²) of the positional start: ``1.3 + 1.7 ((1 − ω)/0.7)²``. Measured on the positional fixed point
    (σ = 0.5, λ = 0.01, α = 2; docs/notes/2026-12-05-theory-general.md, "Edges of ω"): 3.06, 1.78, 1.43, 1.35, 1.32, 1.32 at
    ω = 0.3, 0.5, 0.7, 0.8, 0.9, 1 (this gives 3.0, 2.17, 1.61, 1.44, 1.33, 1.3); the part off the positional
    direction fits the teacher's semantic share (1 − ω) and, at ω → 1, the noise only."""
    return 1.3 + 1.7 * ((1.0 - float(omega)) / 0.7) ** 2


def start_state(params: ModelParams, alpha: float, branch: str, scale: float = 1.0) -> np.ndarray:
    """A starting point (q, m, V, θ) derived from the model (MODEL.md §6), not tuned to one σ.

    * semantic: the student aligned with the teacher, Q = c·Q* plus 10 % orthogonal weight, c = 0.7·``scale``:
      θ = c ρ, q = 1.1 c² ρ with ρ = σ²;
    * positional: Q along the positional direction with the attention a purely positional student needs to
      match the teacher's mean self-weight t = E[T_ll] (S_11 = sigmoid(2 m²) = t gives m² = logit(t)/2; the
      token part of the logits takes about half of it, so m² = logit(t)/4, at least 0.01), times ``scale``;
      q = f(ω) σ² m² with the part off the positional direction (f − 1) growing with the teacher's semantic
      share: :func:`positional_q_factor` (f = 3 at ω = 0.3; 1.3 as ω → 1, where q = 3 σ² m² was 2× off and
      the cold start wandered);
    * uninformative / free: q = 0.3 σ² (free: with both overlaps at half their pure values);
    * V from the prior side, V = σ²/(λ + σ² V̂), with V̂ ≈ k α σ² q (the curvature of the loss
      ``(σ²/2)‖T − S‖²`` in h is ~σ² q per token): k = 0.6 semantic (0.5–0.7 measured at σ ∈ {0.5, 0.7},
      λ ∈ {0.001, 0.01}), k = 1.9 positional (1.88, 1.92 measured at α = 2, 1; σ = 0.5, ω = 0.3) with q there
      taken as 3 σ² m² (what k was measured with; the smaller q of ω → 1 made V 2.5× too large at α = 5).
    ``scale`` moves the start along the branch's overlap (multi-start).
    """
    s2 = params.sigma ** 2
    c = 0.7 * scale
    t = min(max(_teacher_diagonal(params), 0.5 + 1e-6), 1.0 - 1e-6)
    m_pos = scale * math.sqrt(max(0.25 * math.log(t / (1.0 - t)), 0.01))
    if branch == "semantic":
        q, m, th = 1.1 * c * c * s2, 0.0, c * s2
    elif branch == "positional":
        q, m, th = positional_q_factor(params.omega) * s2 * m_pos ** 2, m_pos, 0.0
    elif branch == "free":
        q, m, th = 0.5 * (1.1 * c * c * s2 + 3.0 * s2 * m_pos ** 2), 0.5 * m_pos, 0.5 * c * s2
    else:
        q, m, th = 0.3 * s2, 0.0, 0.0
    k = 1.9 if branch == "positional" else 0.6
    q_k = 3.0 * s2 * m_pos ** 2 if branch == "positional" else q    # the q that k = 1.9 was measured with
    V = s2 / (params.lam + s2 * k * float(alpha) * s2 * q_k)
    return np.array([q, m, V, th], dtype=float)


def _start(branch: str, init, params: ModelParams, alpha: float) -> np.ndarray:
    pins = np.array(_PINS[branch])
    x = (np.array([init.q, init.m, init.V, init.theta], dtype=float) if init is not None
         else start_state(params, alpha, branch))
    x[pins] = 0.0
    if branch in ("semantic", "free") and x[3] <= 0:
        x[3] = 0.1 * math.sqrt(max(x[0], 1e-6))
    if branch in ("positional", "free") and x[1] == 0:
        x[1] = 0.1
    return x


_OVERLAP = {"positional": 1, "semantic": 3}


class _CollapseSnap:
    """Collapse of a pinned branch onto the uninformative point, decided once per stage (MODEL.md §7).

    Where the iterate's overlap x_p (m positional, θ semantic) is below ``COLLAPSE_TOL·σ√q`` (:func:`.state.overlap_vanished`) (or an Anderson
    candidate puts it there), the growth factor of x_p at x_p = 0 is evaluated once (one unpinned map
    evaluation, :func:`_growth`); if it is below +1, x_p = 0 attracts and x_p is set to exactly 0 from then on
    (the map keeps it 0 by the exact symmetry, MODEL.md §8), so the point converges onto the uninformative
    point in (q, V) instead of crawling there: the relative change of x_p, x̂_p at x_p ~ 1e-7 is round-off
    (ω = 0.9, α = 2 semantic; ω = 0, α = 2 positional) and a growth factor near 1 decays x_p by ~1 % a step,
    while the Anderson step that goes to x_p ≈ 0 was refused as a jump (ω = 0.01, α = 0.5 semantic,
    growth 0.98; docs/notes/2026-12-05-theory-general.md, "Collapsing pinned branches"). Where the factor is ≥ 1 (or unknown)
    nothing changes."""

    def __init__(self, F: _Map):
        self.F, self.p = F, _OVERLAP.get(F.branch)
        self.ok: bool | None = None        # x_p = 0 attracts (evaluated at the first need)

    def _small(self, x: np.ndarray) -> bool:
        return (self.p is not None and not math.isnan(float(x[self.p]))
                and overlap_vanished(float(x[self.p]), float(x[0]), self.F.params.sigma) and x[0] > 0)

    def _attracts(self, x: np.ndarray) -> bool:
        if self.ok is None:
            xz = x.copy()
            xz[self.p] = 0.0
            saved, self.F.pins = self.F.pins, (False, False, False, False)
            try:
                g = _growth(self.F, xz, self.p, STABILITY_EPS * math.sqrt(max(float(x[0]), 1e-12)))
            finally:
                self.F.pins = saved
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


def _iterate(F: _Map, x: np.ndarray, rtol: float, max_steps: int, damping: float, anderson: int,
             pairs: list | None = None):
    """Damped iteration with Anderson mixing until the undamped residual is below ``rtol``.

    Anderson (type II) on the residual ``f(x) = F(x) − x`` from the last ``anderson`` secant pairs
    ``(Δx, Δf)``. ``pairs``: secant pairs of a previous stage (the same map on a coarser rule, whose Jacobian
    is nearly the same); new pairs are formed only between iterates of this stage. Extended in place.
    Next to an onset from q = 0 (the residual crawls while q is small: :func:`.onset_newton.crawling`) the
    stage switches to Newton steps in √q (:func:`.onset_newton.newton_candidate`, 1 + #free evaluations each;
    the damped/Anderson step where a Newton step is not usable); convergence is tested as before.
    Returns ``(x, h, ch, converged, status, residual, steps)`` where ``h, ch`` are the hats at ``x``.
    """
    pins = np.array(F.pins)
    snap = _CollapseSnap(F)
    history: list[float] = []
    to_zero = None          # Newton mode: whether a step may fall to q = 0 (None: not in Newton mode)
    pairs = [] if pairs is None else pairs
    last = None
    h_prev = None
    residual, status, converged = math.inf, "max_steps reached", False
    h = ch = None
    it = 0
    missed = 0
    try:
        for it in range(1, max_steps + 1):
            fx, h, ch = F(x)
            if not np.all(np.isfinite(fx)):
                status = "non-finite map value"
                break
            fl_x, fl_h = _floors(F.params, x, h)
            residual = max(_rel(fx, x, fl_x), _rel(h, h_prev, fl_h) if h_prev is not None else 1.0)
            if residual < rtol and not F.last_global:
                # a fast (warm-started, not certified global) evaluation converged: the same x through the map
                # with the full global search decides; its values are the ones returned or iterated on
                fx, h, ch = F(x, global_search=True)
                if not np.all(np.isfinite(fx)):
                    status = "non-finite map value"
                    break
                fl_x, fl_h = _floors(F.params, x, h)
                residual = max(_rel(fx, x, fl_x), _rel(h, h_prev, fl_h) if h_prev is not None else 1.0)
                if residual >= rtol:
                    missed += 1
                    F.fast = F.fast and missed < 2   # the warm starts missed a basin twice: global from now on
            h_prev = h
            if residual < rtol:
                converged, status = True, "converged"
                break
            f = fx - x
            if last is not None:
                pairs.append((x - last[0], f - last[1]))
                del pairs[:-anderson]
            last = (x.copy(), f)
            x_new = x + damping * f
            history.append(residual)
            if to_zero is None and crawling(history, float(x[0]), F.params.sigma):
                to_zero = zero_attracts(F.params, F.alpha, F.branch)
            cand = None if to_zero is None else newton_candidate(F, x, fx, ~pins, to_zero)
            if cand is not None:
                x_new = cand
            elif anderson > 0 and pairs:
                dX = np.array([p[0] for p in pairs]).T
                dF = np.array([p[1] for p in pairs]).T
                try:
                    gam, *_ = np.linalg.lstsq(dF[~pins], f[~pins], rcond=None)
                    cand = x + damping * f - (dX + damping * dF) @ gam
                    cand[pins] = 0.0
                    if (cand[0] > 0 and cand[2] > 0 and np.all(np.isfinite(cand))
                            and _rel(snap.guarded(cand, x), x) < 0.5):
                        x_new = cand
                except np.linalg.LinAlgError:
                    pass
            x_new[pins] = 0.0
            snap.apply(x_new)
            if x_new[0] < ZERO_Q * F.params.sigma ** 2:
                x_new[[0, 1, 3]] = 0.0      # round-off around q = 0: the q = 0 point itself (zero_point.py)
            x = x_new
    except FloatingPointError as exc:
        status, h, ch = f"map failed: {exc}", None, None
    if not converged and status == "max_steps reached":
        status = f"not converged after {max_steps} steps (residual {residual:.2e} > rtol {rtol:.0e})"
    return x, h, ch, converged, status, residual, it


DEFAULT_DAMPING = 0.6
"""Weight of the new map value in :func:`solve_point`'s damped step (Anderson mixing on top)."""
COLD_DAMPING = {"positional": 0.3}
"""Damping of :func:`solve_point`'s cold start (no ``init``) on these branches; where it does not converge or
collapses, the point is solved again at ``DEFAULT_DAMPING`` (a converged point whose overlap did not vanish is
preferred). The positional map has a stiff oscillating mode: the Jacobian's eigenvalue at the fixed point is
−6.1 at ω = 0.9, α = 2 and −8.6 at ω = 1, α = 5 (in the (q, m) plane), so a damped step is stable only below
2/(1 − μ) ≈ 0.2–0.3; at 0.6 the cold start wandered (ω = 0.98, α = 2: m ≈ −1.2 after 300 steps), failed (D ≤ 0)
or fell onto m = 0 (ω = 1, α = 5) before Anderson had learnt the mode; at 0.3 those converge in 9–16 steps,
and at ω = 0.3 in as many steps as at 0.6. Not for warm starts: collapses are ~2× slower at 0.3 (λ = 0.5: 79
against 34 steps to q = 0, beyond a continuation's 60). docs/notes/2026-12-05-theory-general.md, "Edges of ω"."""


def solve_point(params: ModelParams, alpha: float, branch: str = "semantic", *, nodes: int | None = None,
                rule: str = "split", rtol: float = 1e-5, max_steps: int = 300,
                init: "FixedPointSolution | None" = None, stability: bool = True, damping: float | None = None,
                anderson: int = 4, coarse: bool = True, fast: bool = True,
                stability_nodes: int | None = None, continuation: bool = False) -> FixedPointSolution:
    """Solve the fixed point of MODEL.md §6 on one branch at sample complexity ``alpha``
    (:func:`_solve_point`, whose docstring says how). ``continuation`` (used by ``theory point`` and
    ``api.solve``): where a cold start (no ``init``) at α > ``LADDER_FROM`` does not converge — the model's
    start is fitted at α ≤ 2 and is far off at α = 10 (map failed: D ≤ 0; issue 11 audit) — the point is solved
    at ``LADDER_FROM`` and followed up in α (:func:`_ladder`: each step warm-started from the last); the
    solution's ``start`` says so. Where it cannot get there, the cold start's failure is returned, its status
    saying where the continuation stopped. A cold start (no ``init``, ``damping`` unset) on a branch of
    ``COLD_DAMPING`` runs at that damping; where it does not converge or collapses it is solved once more at
    ``DEFAULT_DAMPING``, kept where it converged and either the first did not or its overlap did not vanish
    (``start`` says so)."""
    kw = dict(nodes=nodes, rule=rule, rtol=rtol, max_steps=max_steps, damping=damping, anderson=anderson,
              coarse=coarse, fast=fast)
    cold = init is None and damping is None and branch in COLD_DAMPING
    sol = _solve_point(params, alpha, branch, init=init, stability=stability, stability_nodes=stability_nodes,
                       **({**kw, "damping": COLD_DAMPING[branch]} if cold else kw))
    if cold and (not sol.converged or _collapsed(sol)):
        again = _solve_point(params, alpha, branch, stability=stability, stability_nodes=stability_nodes, **kw)
        if again.converged and (not sol.converged or not _collapsed(again)):
            why = "did not converge" if not sol.converged else "collapsed"
            sol = replace(again, start=f"model, damping {DEFAULT_DAMPING:g} "
                                       f"(at {COLD_DAMPING[branch]:g} it {why})")
    if sol.converged or not continuation or init is not None or not float(alpha) > LADDER_FROM:
        return sol
    return _ladder(params, float(alpha), branch, sol, stability, stability_nodes, kw)


def _collapsed(sol: FixedPointSolution) -> bool:
    """The pinned branch's defining overlap vanished (:func:`.state.overlap_vanished`; q = 0 included)."""
    value = {"positional": sol.m, "semantic": sol.theta}.get(sol.branch)
    return value is not None and overlap_vanished(value, sol.q, sol.params.sigma)


def _ladder(params, alpha, branch, cold, stability, stability_nodes, kw) -> FixedPointSolution:
    """:func:`solve_point`'s ``continuation``: from ``LADDER_FROM`` up to ``alpha`` on the schedule of
    :class:`.ladder.Ladder` (steps of ratio ≤ 1.5, square-rooted where a step fails, down to 1.02); the cold
    start's failure ``cold`` (its status saying where the continuation stopped) if it cannot get there."""
    prev = _solve_point(params, LADDER_FROM, branch, stability=False, **kw)
    lad = Ladder(alpha, started=prev.converged)
    while lad.climbing:
        nxt = lad.next_value()
        sol = _solve_point(params, nxt, branch, init=prev, stability=stability and nxt == alpha,
                           stability_nodes=stability_nodes, **kw)
        lad.record(nxt, sol.converged)
        prev = sol if sol.converged else prev
    if lad.reached:
        return replace(prev, start=lad.start_note())
    return replace(cold, status=f"{cold.status} ({lad.stop_note()})")


def _solve_point(params: ModelParams, alpha: float, branch: str = "semantic", *, nodes: int | None = None,
                 rule: str = "split", rtol: float = 1e-5, max_steps: int = 300,
                 init: "FixedPointSolution | None" = None, stability: bool = True, damping: float | None = None,
                 anderson: int = 4, coarse: bool = True, fast: bool = True,
                 stability_nodes: int | None = None) -> FixedPointSolution:
    """Solve the fixed point of MODEL.md §6 on one branch at sample complexity ``alpha`` from one start.

    ``rule="split"`` (default) integrates along lines split at the basin switches
    (:mod:`.switching`, outer order ``nodes``); ``"product"`` is the plain Gauss–Hermite rule.
    With ``coarse`` (and the split rule) the point is first converged on the coarse rule (outer order
    ``COARSE_NODES``, to ``COARSE_RTOL``) and then polished on the requested one; the Anderson secant pairs
    of the coarse stage are kept for the fine one (the two maps have nearly the same Jacobian). (Skipping the
    coarse stage in a continuation, with secant pairs carried over from the neighbouring α, was measured
    slower: 61.7 s against 39.8 s for a 20-point positional curve.)
    Convergence: the relative change of the UNDAMPED map over all eight order parameters,
    ``max(|F(x) - x| / |x|, |x̂(x_k) - x̂(x_{k-1})| / |x̂|) < rtol`` (with floors, see ``_floors``). The split
    rule's map is piecewise smooth with a noise floor of ~3e-7 (sub-intervals whose switch flag toggles; at
    times ~1e-5 on the coarse rule), so ``rtol`` much below 1e-6 is not reachable; the default 1e-5 matches
    the integration error itself (~1e-5, docs/theory.md).
    Iteration: damped (``damping`` = weight of the new map value; None: ``DEFAULT_DAMPING``) with
    Anderson mixing of depth ``anderson`` (0 switches it off), guarded: non-positive q or V fall back to the
    damped step.
    An iterate whose q falls below ``ZERO_Q·σ²`` (:mod:`.zero_point`) is put on the q = 0 point itself
    (q = m = θ = 0; the overlaps there are round-off, and V̂ is in derivative form, :data:`.channel
    .V_HAT_Q_FLOOR`); a solve converged there is reported as that point (:func:`_zero_solution`).
    Never returns an unconverged point silently: ``converged=False`` and ``status`` says why.
    ``fast`` (default): every map evaluation after the first continues the prox from the previous
    evaluation's minimisers without the multi-start; when such an evaluation passes the convergence test, the
    same x is evaluated again with the full global search, and only that evaluation can end the solve (its
    hats are the ones returned), so a basin the warm starts missed cannot reach a result (docs/notes/benchmarks-log.md,
    "Faster split-rule map"). ``fast=False``: the full global search at every evaluation.
    ``nodes`` None (default, split rule): order ``DEFAULT_NODES``, raised after convergence to
    :func:`nodes_for_scale` of the converged q and polished there (warm, the secant pairs kept) until the order
    fits the scale; the order used is the solution's ``nodes``. An explicit ``nodes`` is used as given.
    ``stability_nodes``: outer order of the rule the growth factor is evaluated on (MODEL.md §7); default
    ``min(nodes, STABILITY_NODES)`` (cheap, ~1e-2 absolute); pass ``nodes`` where the factor's crossing of +1
    is to be located (it is recorded on the solution as ``stability_nodes``).
    """
    auto = nodes is None and rule == "split"
    nodes = DEFAULT_NODES if nodes is None else nodes
    _validate(params, alpha, branch, nodes, rule)
    check_range("rtol", rtol, lo=0.0, lo_open=True)
    max_steps = check_int("max_steps", max_steps, 1)
    damping = DEFAULT_DAMPING if damping is None else damping
    check_range("damping", damping, lo=0.0, hi=1.0, lo_open=True)
    stability_nodes = (min(nodes, STABILITY_NODES) if stability_nodes is None
                       else check_int("stability_nodes", stability_nodes, 2))
    alpha = float(alpha)
    stages = [(make_rule(nodes, rule), rtol)]
    if coarse and rule == "split" and nodes > COARSE_NODES:
        stages.insert(0, (make_rule(COARSE_NODES, rule), max(rtol, COARSE_RTOL)))
    x = _start(branch, init, params, alpha)
    steps = 0
    pairs: list = []
    for R, tol in stages:
        F = _Map(params, alpha, branch, R, fast=fast)
        x, h, ch, converged, status, residual, it = _iterate(F, x, tol, max_steps, damping, anderson, pairs)
        steps += it
        if ch is None:
            break
    while auto and ch is not None and converged and nodes_for_scale(float(x[0])) > nodes:
        nodes = nodes_for_scale(float(x[0]))     # the student's scale needs a finer rule: polish on it
        F = _Map(params, alpha, branch, make_rule(nodes, rule), fast=fast)
        x, h, ch, converged, status, residual, it = _iterate(F, x, rtol, max_steps, damping, anderson, pairs)
        steps += it
    if ch is None:
        nan = float("nan")
        return FixedPointSolution(alpha, branch, params, *map(float, x), nan, nan, nan, nan, nan, nan, False,
                                  steps, float(residual), status, None, None, nodes, rule, bool(fast))
    if converged and x[0] < ZERO_Q * params.sigma ** 2:
        return _zero_solution(params, alpha, branch, float(x[2]), make_rule(nodes, rule), nodes, steps, rtol,
                              bool(fast))
    q, m, V, th = (float(v) for v in x)
    qh, mh, Vh, thh = (float(v) for v in h)
    et = -free_energy(params, alpha, q, m, V, th, qh, mh, Vh, thh, ch.EM)
    eg = _eps_g(params, q, m, th)
    stab = stable = stab_nodes = None
    if stability and branch != "free" and np.isfinite(x).all():
        stab = _stability(_Map(params, alpha, branch, make_rule(stability_nodes, rule)), x, branch)
        stable, stab_nodes = bool(stab <= 1.0), stability_nodes
    return FixedPointSolution(alpha, branch, params, q, m, V, th, qh, mh, Vh, thh, eg, et, converged, steps,
                              float(residual), status, stab, stable, nodes, rule, bool(fast), stab_nodes)


def _zero_solution(params: ModelParams, alpha: float, branch: str, V: float, R, nodes: int, steps: int,
                   rtol: float, fast: bool) -> FixedPointSolution:
    """A solve that converged onto q ≈ 0 (below :data:`.zero_point.ZERO_Q`·σ², round-off around 0), reported as
    the q = 0 point (:mod:`.zero_point`): q = m = θ = 0 exactly, V polished there (:func:`_polish_zero_V`) and
    checked by one more map evaluation (full global search on ``R``), which must give back q̂ = 0 (ĥ = 0 the
    global prox minimiser: q' below the same floor) and V (to ``rtol``) — else ``converged=False``, saying so.
    ``stability`` is the largest growth factor of the student's norm at q = 0 (closed form,
    :func:`.zero_point.zero_point`; NaN where that has no admissible V); the point is the uninformative one, so a
    semantic or positional solve is ``collapsed`` (:func:`attnphase.phase.continuation.point_state`)."""
    rule = "product" if isinstance(R, ProductRule) else "split"
    x0 = np.array([0.0, 0.0, V, 0.0])
    try:
        F = _Map(params, alpha, branch, R)
        V, polish = _polish_zero_V(F, V)
        x0[2] = V
        steps += polish
        fx, h, ch = F(x0)
    except FloatingPointError as exc:
        nan = float("nan")
        return FixedPointSolution(alpha, branch, params, *map(float, x0), nan, nan, nan, nan, nan, nan, False,
                                  steps + 1, nan, f"map failed at q = 0: {exc}", None, None, nodes, rule, fast)
    residual = abs(fx[2] - V) / V
    ok = bool(fx[0] < ZERO_Q * params.sigma ** 2 and residual < rtol)
    status = ("converged" if ok else
              f"not a fixed point at q = 0: q' = {fx[0]:.3g}, relative change of V {residual:.2g} (the iteration "
              "fell to q ≈ 0, where ĥ = 0 is not the global prox minimiser or V moved)")
    qh, _, Vh, _ = (float(v) for v in h)
    et = -free_energy(params, alpha, 0.0, 0.0, V, 0.0, qh, 0.0, Vh, 0.0, ch.EM)
    eg = _eps_g(params, 0.0, 0.0, 0.0)
    growth = largest_growth(params, alpha)
    return FixedPointSolution(alpha, branch, params, 0.0, 0.0, V, 0.0, qh, 0.0, Vh, 0.0, eg, et, ok, steps + 1,
                              float(residual), status, growth, bool(growth <= 1.0), nodes, rule, fast)


def _polish_zero_V(F: _Map, V: float, max_evals: int = 8) -> tuple[float, int]:
    """At q = m = θ = 0 only V moves: secant steps on ``V ↦ F(0, 0, V, 0)_V − V`` from the iteration's V (which
    the convergence test leaves ~rtol off: 3e-6 at λ = 0.5, α = 2 after a Newton collapse) to ~1e-12. Returns
    the polished V and the number of map evaluations."""
    def r(v):
        return float(F(np.array([0.0, 0.0, v, 0.0]))[0][2]) - v

    a, ra = V, r(V)
    b, n = V + ra, 1
    while n < max_evals:
        rb = r(b)
        n += 1
        if abs(rb) <= 1e-12 * abs(b) or rb == ra or not b > 0:
            break
        a, b, ra = b, b - rb * (b - a) / (rb - ra), rb
    return (b, n) if b > 0 and math.isfinite(b) else (V, n)


STABILITY_EPS = 1e-2
"""Relative size of the finite difference of :func:`_stability`. The map is odd in the pinned overlap, so the
one-sided difference is off by O(eps²) only, while the rule's noise floor (~3e-7, MODEL.md §7) enters as
noise/(eps·√q): at 1e-4 that noise made the factor scatter by ~0.03 with spikes (ω = 0.377 near the semantic
end: 0.84 against 1.07–1.11 at α = 0.97, +0.02 against −0.20 at α = 1.2); 1e-2 and 3e-2 agree to ~0.03."""


def _stability(F: _Map, x: np.ndarray, branch: str, eps: float = STABILITY_EPS) -> float:
    """Growth factor of the pinned direction under the full (unpinned) map, linearised at the fixed point.

    By the exact symmetries the pinned direction decouples at linear order, so the factor is
    ``∂x'_p / ∂x_p`` (x_p = m on the semantic, θ on the positional branch; the max of both for
    uninformative), estimated by a one-sided finite difference of size ``eps·√q`` (the map is odd in x_p,
    so the difference is exact to O(eps²); see :data:`STABILITY_EPS` for the choice of eps).
    """
    idx = {"semantic": [1], "positional": [3], "uninformative": [1, 3]}[branch]
    saved = F.pins
    F.pins = (False, False, False, False)
    try:
        out = [_growth(F, x, i, eps * math.sqrt(max(x[0], 1e-12))) for i in idx]
    finally:
        F.pins = saved
    return float("nan") if any(math.isnan(v) for v in out) else max(out)


def _growth(F, x: np.ndarray, i: int, d: float, shrink: tuple[float, ...] = (1.0, 0.1, 0.01)) -> float:
    """``F(x + d·s·e_i)_i / (d·s)`` at the first ``s`` of ``shrink`` whose perturbed state the map accepts.
    Where it does not (D = λ + σ²V̂ ≤ 0 in the prior: σ = 0.3, ω = 0.02 near the positional branch's beginning)
    the step is divided by 10, twice; if it still fails the factor is NaN — unknown, never a number: the
    solution's ``stable`` is then False, and the continuation labels the point ``stability unknown``
    (:class:`attnphase.phase.PointState`; not valid, not a saddle). It used to raise out of the whole
    transition."""
    for s in shrink:
        xp = x.copy()
        xp[i] += d * s
        try:
            fx, _, _ = F(xp)
        except FloatingPointError:
            continue
        return float(fx[i] / (d * s))
    return float("nan")


_COLUMNS = ["alpha", "omega", "sigma", "lam", "branch", "q", "m", "V", "theta", "q_hat", "m_hat", "V_hat",
            "theta_hat", "eps_g", "e_t", "converged", "iterations", "residual", "status", "stability",
            "stable", "nodes", "rule"]


def curve_table(solutions: Sequence[FixedPointSolution]):
    """Tidy :class:`pandas.DataFrame`, one row per point."""
    import pandas as pd
    rows = []
    for s in solutions:
        d = {c: getattr(s, c) for c in _COLUMNS if hasattr(s, c)}
        d.update(omega=s.params.omega, sigma=s.params.sigma, lam=s.params.lam)
        rows.append(d)
    return pd.DataFrame(rows, columns=_COLUMNS)
