"""The split rule's solve of MODEL.md §6 (L = 2, r = 1) on the one fixed-point loop: stages (a coarse rule, then
the requested one, then the order the student's scale needs), the model's starts, the q = 0 point, the growth
factor of each pinned branch against its pinned direction, and the ladder in α of a cold start at large α.
The map and its iteration are :mod:`.split_integrator`; every solve returns one :class:`~.solution.Solution`."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np

from ..errors import ParameterError, check_int, check_range
from ..model import ModelParams
from .ladder import LADDER_FROM, Ladder, run_ladders
from .observables import eps_g as _eps_g, free_energy
from .routing import has_paper_encodings
from .solution import Solution, scalar_state, solution_table
from .split_integrator import (IDX, M, Q, STABILITY_EPS, THETA, V, SplitMap, iterate_split, make_rule,
                               pin_mask, stability as pinned_stability, to_hats, to_state, to_vector)
from .state import OrderParams, overlap_vanished
from .status import Status
from .zero_point import ZERO_Q, largest_growth

__all__ = ["BRANCHES", "DEFAULT_NODES", "SCALE_NODES", "BEYOND_SCALE_NODES", "RULES", "COARSE_NODES", "COARSE_RTOL",
           "STABILITY_NODES", "STABILITY_EPS", "DEFAULT_DAMPING", "COLD_DAMPING", "nodes_for_scale",
           "resolution_note", "validate_point", "make_rule", "positional_q_factor", "start_state", "solve_point",
           "curve_table"]

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


PRODUCT_MIN_ORDER = 6
"""Lowest order of the plain product rule given without a resolution note: at α = 2, ω = 0.3 (semantic) its θ
is −0.02 % off the split rule at order 6, +0.3 % at 4, −6 % at 3, +7 % at 2 (measured 2026-12-06)."""


def resolution_note(q: float, nodes: int, rule: str = "split") -> str | None:
    """A one-line note where the split rule at order ``nodes`` is used beyond the student norm it was measured
    accurate at (:data:`SCALE_NODES`), or the product rule below :data:`PRODUCT_MIN_ORDER`; None otherwise."""
    if rule == "product" and nodes < PRODUCT_MIN_ORDER:
        return (f"the plain product rule at order {nodes} integrates across the prox's basin switches: θ, q, ε_g "
                f"can be several % off (α = 2, semantic: θ +7 % at order 2, −6 % at 3, +0.3 % at 4); use order ≥ "
                f"{PRODUCT_MIN_ORDER} or the split rule (default)")
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


def validate_point(params: ModelParams, alpha: float, branch: str, nodes: int, rule: str) -> None:
    """The checks of :func:`solve_point` (supported L, r, r*, P, α, branch, rule, nodes), without solving."""
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


def start_state(params: ModelParams, alpha: float, branch: str, scale: float = 1.0) -> OrderParams:
    """A starting state derived from the model (MODEL.md §6), not tuned to one σ: an :class:`~.state.OrderParams`
    of 1 × 1 blocks (q, m, θ, V; signs kept).

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
    return scalar_state(q, m, V, th)


def _start(branch: str, init, params: ModelParams, alpha: float) -> np.ndarray:
    """The start vector (:mod:`.split_integrator` order) from ``init`` (a Solution, an OrderParams-like object
    with q, m, V, θ) or the model (:func:`start_state`), pinned and with a non-zero defining overlap."""
    x = np.zeros(len(IDX))
    if init is not None:
        x[[Q, M, V, THETA]] = init.q, init.m, init.V, init.theta
    else:
        x = to_vector(start_state(params, alpha, branch))
    x[pin_mask(branch)] = 0.0
    if branch in ("semantic", "free") and x[THETA] <= 0:
        x[THETA] = 0.1 * math.sqrt(max(x[Q], 1e-6))
    if branch in ("positional", "free") and x[M] == 0:
        x[M] = 0.1
    return x


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
                init=None, stability: bool = True, damping: float | None = None,
                anderson: int = 4, coarse: bool = True, fast: bool = True,
                stability_nodes: int | None = None, continuation: bool = False) -> Solution:
    """Solve the fixed point of MODEL.md §6 on one branch at sample complexity ``alpha``
    (:func:`_solve_point`, whose docstring says how). ``continuation`` (used by ``theory point`` and
    ``api.solve``): where a cold start (no ``init``) at α > ``LADDER_FROM`` does not converge — the model's
    start is fitted at α ≤ 2 and is far off at α = 10 (map failed: D ≤ 0; issue 11 audit) — the point is solved
    at ``LADDER_FROM`` and followed up in α (:func:`_ladder_start`, a start strategy: each step warm-started from the last); the
    solution's ``start`` says so. Where it cannot get there, the cold start's failure is returned, its status
    saying where the continuation stopped. A cold start (no ``init``, ``damping`` unset) on a branch of
    ``COLD_DAMPING`` runs at that damping; where it does not converge or collapses it is solved once more at
    ``DEFAULT_DAMPING``, kept where it converged and either the first did not or its overlap did not vanish
    (``start`` says so). Returns one :class:`~.solution.Solution` (integrator ``split`` or ``product``; its
    ``note`` says why a point did not converge, its provenance the start, the fast map and ``stability_nodes``)."""
    kw = dict(nodes=nodes, rule=rule, rtol=rtol, max_steps=max_steps, damping=damping, anderson=anderson,
              coarse=coarse, fast=fast)
    cold = init is None and damping is None and branch in COLD_DAMPING
    sol = _solve_point(params, alpha, branch, init=init, stability=stability, stability_nodes=stability_nodes,
                       **({**kw, "damping": COLD_DAMPING[branch]} if cold else kw))
    if cold and (not sol.converged or _collapsed(sol)):
        again = _solve_point(params, alpha, branch, stability=stability, stability_nodes=stability_nodes, **kw)
        if again.converged and (not sol.converged or not _collapsed(again)):
            why = "did not converge" if not sol.converged else "collapsed"
            sol = _with_start(again, f"model, damping {DEFAULT_DAMPING:g} (at {COLD_DAMPING[branch]:g} it {why})")
    if sol.converged or not continuation or init is not None or not float(alpha) > LADDER_FROM:
        return sol
    return _ladder_start(params, float(alpha), branch, sol, stability, stability_nodes, kw)


def _collapsed(sol: Solution) -> bool:
    """The pinned branch's defining overlap vanished (:func:`.state.overlap_vanished`; q = 0 included)."""
    value = {"positional": sol.m, "semantic": sol.theta}.get(sol.branch)
    return value is not None and overlap_vanished(value, sol.q, sol.params.sigma)


def _ladder_start(params, alpha, branch, cold, stability, stability_nodes, kw) -> Solution:
    """:func:`solve_point`'s ``continuation``: from ``LADDER_FROM`` up to ``alpha`` on the schedule of
    :class:`.ladder.Ladder` (steps of ratio ≤ 1.5, square-rooted where a step fails, down to 1.02); the cold
    start's failure ``cold`` (its status saying where the continuation stopped) if it cannot get there."""
    reached = [_solve_point(params, LADDER_FROM, branch, stability=False, **kw)]   # the last point reached
    lad = Ladder(alpha, started=reached[0].converged)

    def step(value: float, final: bool, _) -> list[tuple]:
        sol = _solve_point(params, value, branch, init=reached[0], stability=stability and final,
                           stability_nodes=stability_nodes, **kw)
        if sol.converged:
            reached[0] = sol
        return [(sol.converged, None, False)]

    run_ladders([lad], step)
    if lad.reached:
        return _with_start(reached[0], lad.start_note())
    return replace(cold, note=f"{cold.note} ({lad.stop_note()})")


def _with_start(sol: Solution, start: str) -> Solution:
    return replace(sol, provenance={**sol.provenance, "start": start})


def _solve_point(params: ModelParams, alpha: float, branch: str = "semantic", *, nodes: int | None = None,
                 rule: str = "split", rtol: float = 1e-5, max_steps: int = 300,
                 init=None, stability: bool = True, damping: float | None = None,
                 anderson: int = 4, coarse: bool = True, fast: bool = True,
                 stability_nodes: int | None = None) -> Solution:
    """Solve the fixed point of MODEL.md §6 on one branch at sample complexity ``alpha`` from one start.

    ``rule="split"`` (default) integrates along lines split at the basin switches
    (:mod:`.switching`, outer order ``nodes``); ``"product"`` is the plain Gauss–Hermite rule.
    With ``coarse`` (and the split rule) the point is first converged on the coarse rule (outer order
    ``COARSE_NODES``, to ``COARSE_RTOL``) and then polished on the requested one; the Anderson secant pairs
    of the coarse stage are kept for the fine one (the two maps have nearly the same Jacobian). (Skipping the
    coarse stage in a continuation, with secant pairs carried over from the neighbouring α, was measured
    slower: 61.7 s against 39.8 s for a 20-point positional curve.)
    Convergence: the relative change of the UNDAMPED map over all eight order parameters,
    ``max(|F(x) - x| / |x|, |x̂(x_k) - x̂(x_{k-1})| / |x̂|) < rtol`` (with floors:
    :func:`.split_integrator.state_floors`, :func:`.split_integrator.hat_floors`). The split
    rule's map is piecewise smooth with a noise floor of ~3e-7 (sub-intervals whose switch flag toggles; at
    times ~1e-5 on the coarse rule), so ``rtol`` much below 1e-6 is not reachable; the default 1e-5 matches
    the integration error itself (~1e-5, docs/theory.md).
    Iteration: damped (``damping`` = weight of the new map value; None: ``DEFAULT_DAMPING``) with
    Anderson mixing of depth ``anderson`` (0 switches it off), guarded: non-positive q or V fall back to the
    damped step.
    An iterate whose q falls below ``ZERO_Q·σ²`` (:mod:`.zero_point`) is put on the q = 0 point itself
    (q = m = θ = 0; the overlaps there are round-off, and V̂ is in derivative form, :data:`.channel
    .V_HAT_Q_FLOOR`); a solve converged there is reported as that point (:func:`_zero_solution`).
    Never returns an unconverged point silently: ``converged`` is False, ``status`` says how it ended and ``note`` why.
    The iteration is the one fixed-point loop (:func:`.split_integrator.iterate_split`).
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
    validate_point(params, alpha, branch, nodes, rule)
    check_range("rtol", rtol, lo=0.0, lo_open=True)
    max_steps = check_int("max_steps", max_steps, 1)
    damping = DEFAULT_DAMPING if damping is None else damping
    check_range("damping", damping, lo=0.0, hi=1.0, lo_open=True)
    stability_nodes = (min(nodes, STABILITY_NODES) if stability_nodes is None
                       else check_int("stability_nodes", stability_nodes, 2))
    alpha = float(alpha)
    stages = [(nodes, rtol)]
    if coarse and rule == "split" and nodes > COARSE_NODES:
        stages.insert(0, (COARSE_NODES, max(rtol, COARSE_RTOL)))
    x = _start(branch, init, params, alpha)
    steps, hist = 0, None
    rec = dict(params=params, alpha=alpha, branch=branch, rule=rule, fast=bool(fast))
    while True:
        for n, tol in stages:
            F = SplitMap(params, alpha, branch, make_rule(n, rule), fast=fast)
            run = iterate_split(F, x, tol, max_steps, damping, anderson, hist)
            x, hist, steps = run.x[0].copy(), run.history, steps + int(run.iterations[0])
            status, residual = run.status[0], float(run.residual[0])
            if status in (Status.INVALID_STATE, Status.DIVERGED):
                why = f"map failed: {F.error}" if status is Status.INVALID_STATE else "non-finite map value"
                return _solution(x, None, status, why, steps, residual, nodes=nodes, **rec)
        if not (auto and status is Status.CONVERGED and nodes_for_scale(float(x[Q])) > nodes):
            break
        nodes = nodes_for_scale(float(x[Q]))     # the student's scale needs a finer rule: polish on it
        stages = [(nodes, rtol)]
    if status is Status.CONVERGED and x[Q] < ZERO_Q * params.sigma ** 2:
        return _zero_solution(params, alpha, branch, float(x[V]), nodes, rule, steps, rtol, bool(fast))
    h = run.aux["hats"][0]
    note = ("converged" if status is Status.CONVERGED else
            f"not converged after {max_steps} steps (residual {residual:.2e} > rtol {tol:.0e})")
    vals = _values(params, alpha, x, h, float(run.aux["EM"][0]))
    stab = stab_nodes = None
    if stability and branch != "free" and np.isfinite(x).all():
        stab = pinned_stability(SplitMap(params, alpha, branch, make_rule(stability_nodes, rule)), x, branch)
        stab_nodes = stability_nodes
    return _solution(x, h, status, note, steps, residual, nodes=nodes, stability=stab, stability_nodes=stab_nodes,
                     values=vals, **rec)


def _values(params: ModelParams, alpha: float, x: np.ndarray, h: np.ndarray, EM: float) -> dict:
    """The scalars of a split-rule point: the state, the hats, ε_g and e_t = −Φ (MODEL.md §6)."""
    q, m, th, V_ = (float(x[i]) for i in (Q, M, THETA, V))
    qh, mh, thh, Vh = (float(h[i]) for i in (Q, M, THETA, V))
    et = -free_energy(params, alpha, q, m, V_, th, qh, mh, Vh, thh, EM)
    return dict(q=q, m=m, V=V_, theta=th, q_hat=qh, m_hat=mh, V_hat=Vh, theta_hat=thh,
                eps_g=_eps_g(params, q, m, th), e_t=et)


def _solution(x: np.ndarray, h: np.ndarray | None, status: Status, note: str, steps: int, residual: float, *,
              params: ModelParams, alpha: float, branch: str, rule: str, fast: bool, nodes: int,
              stability: float | None = None, stability_nodes: int | None = None, values: dict | None = None,
              start: str = "given or model") -> Solution:
    """The :class:`~.solution.Solution` of a split-rule solve (values NaN where none were computed)."""
    nan = float("nan")
    vals = {k: nan for k in ("q_hat", "m_hat", "V_hat", "theta_hat", "eps_g", "e_t")}
    vals.update(q=float(x[Q]), m=float(x[M]), V=float(x[V]), theta=float(x[THETA]))
    if values is not None:
        vals.update(values)
    hats = None if h is None else to_hats(h)
    prov = dict(rule=rule, nodes=nodes, stability_nodes=stability_nodes, fast_map=fast, start=start)
    return Solution(params, float(alpha), branch, to_state(x), hats, vals, {}, status, int(steps), float(residual),
                    stability, None, rule, int(nodes), note, prov)


def _zero_solution(params: ModelParams, alpha: float, branch: str, V0: float, nodes: int, rule: str, steps: int,
                   rtol: float, fast: bool) -> Solution:
    """A solve that converged onto q ≈ 0 (below :data:`.zero_point.ZERO_Q`·σ², round-off around 0), reported as
    the q = 0 point (:mod:`.zero_point`): q = m = θ = 0 exactly, V polished there (:func:`_polish_zero_V`) and
    checked by one more map evaluation (full global search on ``R``), which must give back q̂ = 0 (ĥ = 0 the
    global prox minimiser: q' below the same floor) and V (to ``rtol``) — else ``converged=False``, saying so.
    ``stability`` is the largest growth factor of the student's norm at q = 0 (closed form,
    :func:`.zero_point.zero_point`; NaN where that has no admissible V); the point is the uninformative one, so a
    semantic or positional solve is ``collapsed`` (:func:`attnphase.phase.continuation.point_state`)."""
    rec = dict(params=params, alpha=alpha, branch=branch, rule=rule, fast=fast, nodes=nodes)
    x0 = np.zeros(len(IDX))
    try:
        F = SplitMap(params, alpha, branch, make_rule(nodes, rule))
        x0[V], polish = _polish_zero_V(F, V0)
        steps += polish
        fx, h, ch = F(x0)
    except FloatingPointError as exc:
        return _solution(x0, None, Status.INVALID_STATE, f"map failed at q = 0: {exc}", steps + 1, float("nan"),
                         **rec)
    residual = abs(fx[V] - x0[V]) / x0[V]
    ok = bool(fx[Q] < ZERO_Q * params.sigma ** 2 and residual < rtol)
    note = ("converged" if ok else
            f"not a fixed point at q = 0: q' = {fx[Q]:.3g}, relative change of V {residual:.2g} (the iteration "
            "fell to q ≈ 0, where ĥ = 0 is not the global prox minimiser or V moved)")
    h = h.copy()
    h[[M, THETA]] = 0.0
    vals = _values(params, alpha, x0, h, float(ch.EM))
    return _solution(x0, h, Status.CONVERGED if ok else Status.MAX_STEPS, note, steps + 1, float(residual),
                     stability=largest_growth(params, alpha), values=vals, **rec)


def _polish_zero_V(F: SplitMap, V0: float, max_evals: int = 8) -> tuple[float, int]:
    """At q = m = θ = 0 only V moves: secant steps on ``V ↦ F(0, 0, V, 0)_V − V`` from the iteration's V (which
    the convergence test leaves ~rtol off: 3e-6 at λ = 0.5, α = 2 after a Newton collapse) to ~1e-12. Returns
    the polished V and the number of map evaluations."""
    def r(v):
        x = np.zeros(len(IDX))
        x[V] = v
        return float(F(x)[0][V]) - v

    a, ra = V0, r(V0)
    b, n = V0 + ra, 1
    while n < max_evals:
        rb = r(b)
        n += 1
        if abs(rb) <= 1e-12 * abs(b) or rb == ra or not b > 0:
            break
        a, b, ra = b, b - rb * (b - a) / (rb - ra), rb
    return (b, n) if b > 0 and math.isfinite(b) else (V0, n)


def curve_table(solutions: Sequence[Solution]):
    """Tidy :class:`pandas.DataFrame`, one row per point (:func:`.solution.solution_table`)."""
    return solution_table(solutions)
