"""Generic batched fixed-point iteration ``x = F(x)``: damping + Anderson mixing, per-point status, converged
points frozen (issue 11). The map acts on a batch ``X (B, n)`` at once (a jit-compiled, vmapped function), so
all points iterate in lockstep; the convergence test uses the residual of the UNDAMPED map."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ParameterError, check_int, check_range
from .status import Status


RATE_WINDOW = 3
"""Steps over which the contraction rate of a converging iterate is estimated (:func:`remaining_distance`)."""
CHEAP_JUMP = 10.0
"""A full evaluation whose residual exceeds the cheap one just before by this factor sends the row to the full
tier for good (two-tier maps, :func:`iterate`)."""
OSCILLATION_COS = -0.5
"""Two successive undamped steps ``f = F(x) − x`` with cosine below this, while the residual grows, are an
oscillating mode the damping amplifies (an eigenvalue of the map's Jacobian below ``1 − 2/damping``):
:func:`iterate` with ``backtrack`` halves that row's damping once this was seen ``OSCILLATION_RUN``
evaluations in a row."""
OSCILLATION_RUN = 1
"""Evaluations in a row with the oscillation before the damping is halved. 1: more halvings than needed in
runs that converge anyway (6–7 at the r = 2 positional point at 4096 × 4), but 2 was too late there: at 512 × 4
the positional α = 2 point then let one scramble's oscillation flip the sign of M (its own fixed point −M, a
gauge copy), and the point was ``not_significant`` (docs/notes/2026-12-05-theory-general.md, "Rank-2 defaults")."""


STALL_WINDOW = 15
"""With ``backtrack`` and ``groups`` (:func:`iterate`): a row whose lowest residual over the last STALL_WINDOW
evaluations is not below half its lowest over the STALL_WINDOW before, while another row of its group has
converged, has stalled (a cycle, or a crawl at a halved damping; measured on r = 2 free points: rows stuck at
residuals 1e-4–4e-2 for 70–170 evaluations while the other scrambles of the point converged in 15–30) and ends
``MAX_STEPS`` at once; the engine restarts it from the converged rows of its group
(``restarts.restart_failed``). A group none of whose rows converged keeps iterating as before."""
JUMP_RTOL = 2e-2
"""Default bound (``iterate(jump_rtol=…)``, used by the engine) on the undamped residual of a row accepted at a
jump of its map: a QMC map is piecewise smooth, and where a sample's prox minimiser switches basin it jumps.
Measured near the end of the positional branch at ω = 0.1, α = 1.2 (line scan of the M component of one
scramble's full map along m, ±0.01 around its fixed point): 28 jumps up to 2.4e-3 (1.7 % of m) at 4096 points,
56 up to 1.2e-3 at 16384 (docs/notes/2026-12-05-theory-general.md, "Near the positional fold (ω = 0.1)")."""
FULL_TIER = "full_tier"
"""Optional key of a two-tier map's auxiliary output (:func:`iterate`, ``full_every``): per active row, whether
its evaluation actually used the full tier (a map may send cheap rows through the full one when that costs
nothing, e.g. padding); ``Run.full_calls`` counts those. Without it, the rows asked for are counted."""


def remaining_distance(recent: np.ndarray) -> np.ndarray:
    """Estimated distance still to go, ``res ρ/(1 − ρ)``, per row of residual histories ``recent`` (B, w+1)
    (newest last; NaN where not yet filled), with ``ρ = (res_new / res_old)^{1/w}`` clipped to [0, 1 − 1e-12]; 0
    while the history is shorter (a point that converges within ``w`` steps contracts fast)."""
    old, new = recent[:, 0], recent[:, -1]
    w = recent.shape[1] - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.clip((new / old) ** (1.0 / w), 0.0, 1.0 - 1e-12)
    out = new * rho / (1.0 - rho)
    return np.where(np.isfinite(old) & (old > 0), out, 0.0)


@dataclass
class Run:
    """Outcome per point: the last evaluated iterate ``x``, the map's auxiliary output at ``x``, the status,
    the number of map evaluations it took and the last residual."""

    x: np.ndarray
    aux: dict
    status: np.ndarray          # object array of Status
    iterations: np.ndarray
    residual: np.ndarray
    history: tuple = ((), ())   # the Anderson secant pairs (dX, dF) per point, to continue on a similar map
    full_calls: np.ndarray | int = 0   # per point: evaluations of the full tier of a two-tier map (``full_every``)
    damping: np.ndarray | None = None  # per point: the damping in use at the end (``backtrack`` may lower it)
    halvings: np.ndarray | None = None  # per point: how often ``backtrack`` halved it
    restarted: np.ndarray | None = None  # per point: restarted after a failure (set by the engine's safeguard)
    at_jump: np.ndarray | None = None   # per point: converged at a jump of the map (``jump_rtol``), not a zero


def _stalled(window: np.ndarray, active: np.ndarray, groups: np.ndarray, status: np.ndarray) -> np.ndarray:
    """Rows that stalled (:data:`STALL_WINDOW`): active, a converged row in their group, and the lowest residual
    of the second half of ``window`` (B, 2 STALL_WINDOW) not below half the lowest of its first half."""
    w = window.shape[1] // 2
    with warnings.catch_warnings():          # (an all-NaN window half: a row that was not active then)
        warnings.simplefilter("ignore", RuntimeWarning)
        old, new = np.nanmin(window[:, :w], axis=1), np.nanmin(window[:, w:], axis=1)
    done = np.array([st is Status.CONVERGED for st in status])
    sibling = np.isin(groups, groups[done])
    return active & sibling & np.isfinite(old) & ~(new < 0.5 * old)


def _halve(damp: np.ndarray, halvings: np.ndarray, rows: np.ndarray) -> None:
    """The safeguard's one action (:func:`iterate`, ``backtrack``), for both of its triggers (an invalid
    evaluation, an oscillating mode): halve the damping of ``rows`` (a boolean mask) and count it."""
    damp[rows] *= 0.5
    halvings[rows] += 1


def iterate(F: Callable, x0: np.ndarray, residual: Callable, *, rtol: float = 1e-5, max_steps: int = 200,
            damping: float = 0.6, anderson: int = 5, admissible: Callable | None = None,
            history: tuple | None = None, compact: bool = False, full_every: int = 0,
            certify: bool = True, backtrack: int = 0, groups: np.ndarray | None = None,
            jump_rtol: float = 0.0, newton: Callable | None = None, aux_residual: Callable | None = None,
            certify_same: bool = False, miss_limit: int = 1, step_guard: Callable | None = None,
            free: np.ndarray | None = None, project: Callable | None = None, creep: bool = True) -> Run:
    """Iterate ``F`` on a batch from ``x0 (B, n)`` until ``residual(x, F(x)) < rtol`` for every point.

    ``F(X) -> (FX, ok, aux)``: map values, a validity flag per point (False: ``INVALID_STATE``) and a dict of
    per-point arrays kept for each point at its last evaluation. ``residual(X, FX) -> (B,)``.
    Step: ``x + damping·f`` (f = F(x) − x; ``damping`` one number or one per row), replaced by the Anderson
    (type II) extrapolation over the last ``anderson`` secant pairs when ``admissible(x, row)`` (the candidate
    and its row index in ``x0``) accepts it. Frozen points no longer move; they are evaluated
    with the batch (static shapes) unless ``compact``: then ``F(X_active, idx)`` gets only the rows still
    active and their indices ``idx`` (the map may pad them to bucketed sizes). ``history``: the
    ``Run.history`` of a previous run on a map with nearly the same Jacobian (e.g. the same map on fewer
    integration points); its secant pairs seed Anderson.

    ``full_every > 0`` (needs ``compact``): ``F(X_active, idx, full)`` is a two-tier map, ``full`` a boolean
    per active row; its cheap tier (``full=False``, e.g. warm-started inner solves) may differ from the full
    one where the cheap one is wrong. Per row, an evaluation is full the first time, after ``full_every − 1``
    cheap ones in a row, and for certification: a row whose cheap residual is below ``rtol`` is evaluated
    fully at its next iterate and is CONVERGED only if the full residual is below ``rtol`` there
    (``certify=False``: a cheap residual suffices, for a stage whose result is only a starting point); a row
    whose certification fails, or whose full residual jumps ``CHEAP_JUMP`` × above the cheap one before it,
    takes the full tier from then on (so it converges wherever the full map does,
    however wrong the cheap one is). The schedule is per row, so a row in a batch follows the same path as alone.
    ``Run.full_calls`` counts the full evaluations per row (the map's ``FULL_TIER`` output where it gives one).

    A residual below ``rtol`` is not enough where the iterate creeps: with the contraction ``ρ`` estimated
    from the last ``RATE_WINDOW + 1`` residuals, the distance still to go is ``≈ res ρ/(1 − ρ)`` (geometric
    tail), and a point converges only once that is below ``rtol`` too (a relative change of 1e-6 per step
    that goes on for ever is not a fixed point; seen: the collapsing positional branch at ω = 0.1).

    ``backtrack > 0``: a safeguard, per row, at most ``backtrack`` times: (i) an evaluation that is invalid or
    non-finite does not end the row: it returns to its last valid iterate, its damping is halved and its
    Anderson pairs dropped; (ii) an oscillating mode (the residual grew while two successive undamped steps
    point against each other, cosine < ``OSCILLATION_COS``, at ``OSCILLATION_RUN`` evaluations in a row)
    halves the damping too. Only once the budget is
    spent is a row ``INVALID_STATE`` / ``DIVERGED``; ``Run.damping`` and ``Run.halvings`` say what was used;
    (iii) with ``groups`` (one label per row, e.g. the point a scramble belongs to), a row that stalls
    (``STALL_WINDOW``) while a row of its group has converged ends ``MAX_STEPS`` at once instead of crawling on
    to ``max_steps`` (the caller can restart it from its group's converged rows).
    0: no safeguard (the first invalid evaluation ends the row).

    ``jump_rtol > 0``: a row also converges AT A JUMP of a piecewise-smooth map (a QMC map jumps where a
    sample's minimiser switches basin, and its fixed point may sit on such a jump: ``F(x) − x`` changes
    direction there without passing through 0, and the row would hover until ``max_steps``). Accepted when,
    on two successive full evaluations, the iterate moved by less than ``rtol`` (``residual(x_prev, x)``), the
    two undamped steps point against each other (cosine < ``OSCILLATION_COS``) and the residual is at most
    ``jump_rtol``: then a fixed point of the map in the set-valued sense (the jump straddles ``x = F(x)``)
    lies within ``rtol`` of ``x``. ``Run.at_jump`` marks these rows; their ``residual`` is the jump's
    (> ``rtol``). 0: off (a fixed point needs ``residual < rtol``).

    ``newton``: ``newton(X, FX, rows, residuals) -> (B, n)`` may replace the next iterate of the ``rows`` (a
    mask: active, evaluated validly) by its own candidate (NaN rows, or one ``admissible`` refuses: keep the
    damped/Anderson step); it is called before the Anderson step, which is skipped for the rows it replaces;
    ``residuals`` (B, it) is each row's residual history (NaN where it was not iterated). The engine's Newton
    steps in √q next to a q = 0 onset (``onset_hook.onset_hook``, :mod:`.onset_newton`).

    Options the split rule's solve uses (:mod:`.split_integrator`, MODEL.md §6; each off by default):
    ``aux_residual(aux, aux_prev) -> (B,)``: a second residual from the map's auxiliary output at this and the
    previous evaluation of each row (the split rule's relative change of the hats), combined by max (1 at a
    row's first evaluation, so no row converges on it); ``certify_same`` (two-tier maps): a row whose cheap
    residual is below ``rtol`` is evaluated on the full tier AT THE SAME iterate, in the same step, and only
    that evaluation can converge it (its values are the ones kept and stepped from); after ``miss_limit``
    failed certifications the row takes the full tier for good; ``step_guard(cand, x, row) -> bool``: decides
    whether an Anderson candidate is accepted (default: relative step norm < 0.5); ``free`` (n,): the
    components Anderson's least squares uses (pinned ones are 0 anyway); ``project(X, rows) -> X``: applied to
    the new iterates of the active rows after every step (pins, a collapse snap, the q = 0 point);
    ``creep=False``: no test of the distance still to go (a residual below ``rtol`` converges).
    """
    check_range("rtol", rtol, lo=0.0, lo_open=True)
    max_steps = check_int("max_steps", max_steps, 1)
    for beta in np.atleast_1d(damping):
        check_range("damping", float(beta), lo=0.0, hi=1.0, lo_open=True)
    anderson = check_int("anderson", anderson, 0)
    backtrack = check_int("backtrack", backtrack, 0)
    full_every = check_int("full_every", full_every, 0)
    jump_rtol = check_range("jump_rtol", jump_rtol, lo=0.0)
    if full_every and not compact:
        raise ParameterError("full_every", "0 unless compact=True (the two-tier map takes the active rows)",
                             full_every)
    X = np.array(x0, dtype=np.float64)
    B, n = X.shape
    miss_limit = check_int("miss_limit", miss_limit, 1)
    aux_prev: dict = {}
    seen = np.zeros(B, bool)             # rows evaluated before (``aux_residual``)
    misses = np.zeros(B, int)            # failed same-iterate certifications per row (``certify_same``)
    status = np.empty(B, dtype=object)
    status[:] = [Status.MAX_STEPS] * B          # (np.full would turn the str-enum into plain str)
    iters = np.zeros(B, int)
    res = np.full(B, np.inf)
    active = np.ones(B, bool)
    aux: dict = {}
    dX, dF = [[] for _ in range(B)], [[] for _ in range(B)]
    if history is not None and len(history[0]) == B:
        dX, dF = [list(v) for v in history[0]], [list(v) for v in history[1]]
    last_x = last_f = None
    want_full = np.ones(B, bool)         # the first evaluation of every row is full (two-tier map only)
    cheap_run = np.zeros(B, int)         # cheap evaluations in a row, per row
    full_only = np.zeros(B, bool)        # rows whose certification failed once: full tier from then on
    cert_req = np.zeros(B, bool)         # rows converged on the cheap tier: the next evaluation certifies
    certifying = np.zeros(B, bool)
    full_calls = np.zeros(B, int)
    recent = np.full((B, RATE_WINDOW + 1), np.nan)   # last residuals per row, newest last
    damp = np.array(np.broadcast_to(np.asarray(damping, dtype=np.float64), (B,)))   # per row (``backtrack``)
    halvings = np.zeros(B, int)
    good_x, good_f = np.full((B, n), np.nan), np.full((B, n), np.nan)   # last valid iterate and its step
    osc_run = np.zeros(B, int)           # evaluations in a row that showed the oscillation
    res_log = np.full((B, max_steps), np.nan)   # (iii) every residual of each row
    at_jump = np.zeros(B, bool)          # rows converged at a jump of the map (``jump_rtol``)
    prev_ok = np.zeros(B, bool)          # the row's previous evaluation was valid and full
    for it in range(1, max_steps + 1):
        idx = np.nonzero(active)[0]
        full = np.ones(B, bool)
        if full_every:
            first = want_full.copy()
            full = want_full | cert_req | full_only | (cheap_run >= full_every - 1)
            FXa, oka, out = F(X[idx], idx, full[idx])
            FX, ok = X.copy(), np.ones(B, bool)
            FX[idx], ok[idx] = np.asarray(FXa), np.asarray(oka)
            cheap_run[idx] = np.where(full[idx], 0, cheap_run[idx] + 1)
            out = dict(out)
            full_calls[idx] += np.asarray(out.pop(FULL_TIER, full[idx]), bool)
            certifying[idx] = cert_req[idx]
            want_full[idx] = cert_req[idx] = False
        elif compact:
            FXa, oka, out = F(X[idx], idx)
            FX, ok = X.copy(), np.ones(B, bool)
            FX[idx], ok[idx] = np.asarray(FXa), np.asarray(oka)
        else:
            FX, ok, out = F(X)
            FX, ok = np.asarray(FX), np.asarray(ok)
        if aux_residual is not None:
            aux_prev = {k: v.copy() for k, v in aux.items()}
        _store(aux, out, idx, B, compact)
        finite = np.all(np.isfinite(FX), axis=1)
        r_now = _residual(residual, aux_residual, X, FX, finite, aux, aux_prev, seen)
        if certify_same and full_every:  # a cheap residual below rtol: the full tier at the same iterate decides
            need = np.zeros(B, bool)
            need[idx] = ~full[idx]
            need &= ok & finite & (r_now < rtol)
            if need.any():
                ci = np.nonzero(need)[0]
                FXc, okc, outc = F(X[ci], ci, np.ones(len(ci), bool))
                FX[ci], ok[ci] = np.asarray(FXc), np.asarray(okc)
                outc = dict(outc)
                full_calls[ci] += np.asarray(outc.pop(FULL_TIER, np.ones(len(ci), bool)), bool)
                _store(aux, outc, ci, B, True)
                full[ci] = True
                finite = np.all(np.isfinite(FX), axis=1)
                r_now = _residual(residual, aux_residual, X, FX, finite, aux, aux_prev, seen)
                missed = need & ~(r_now < rtol)
                misses[missed] += 1
                full_only |= misses >= miss_limit
        seen[idx] = True
        prev_res = res.copy()
        res = np.where(active, r_now, res)
        recent[idx] = np.concatenate([recent[idx, 1:], r_now[idx, None]], axis=1)
        iters = np.where(active, it, iters)
        bad = active & ~(ok & finite)
        f = FX - X
        retry = np.zeros(B, bool)
        if backtrack:
            # (i) an invalid evaluation: back to the last valid iterate with half the damping
            retry = bad & (halvings < backtrack) & np.all(np.isfinite(good_x), axis=1)
            # (ii) an oscillating mode the damping amplifies: halve it
            if last_f is not None:
                osc_now = active & ~bad & (r_now > prev_res) & (_step_cosine(f, last_f) < OSCILLATION_COS)
                osc_run = np.where(osc_now, osc_run + 1, np.where(active, 0, osc_run))
                osc = (osc_run >= OSCILLATION_RUN) & (halvings < backtrack)
                _halve(damp, halvings, osc)
                osc_run[osc] = 0
            ok_rows = active & ~bad
            good_x[ok_rows], good_f[ok_rows] = X[ok_rows], f[ok_rows]
            res[retry], recent[retry] = prev_res[retry], np.nan
            bad &= ~retry
        status[bad & ~finite] = Status.DIVERGED
        status[bad & finite] = Status.INVALID_STATE
        active &= ~bad
        conv = active & ~retry & (res < rtol)
        if creep:
            conv &= remaining_distance(recent) < rtol
        if jump_rtol:
            now_ok = active & ~retry & full       # ``active`` already excludes this evaluation's bad rows
            jumped = now_ok & prev_ok & ~conv & _at_jump(X, f, last_x, last_f, residual, rtol, jump_rtol, r_now)
            at_jump |= jumped
            conv |= jumped
            prev_ok = np.where(active, now_ok, prev_ok)
        if full_every and certify_same:
            conv &= full
        elif full_every and certify:
            cert_req |= conv & ~full         # converged on the cheap map: certify on the full one
            # the cheap map misled the row (a failed certification, or a full residual far above the cheap
            # one just before): no more cheap calls for it
            jump = full & ~first & (r_now > CHEAP_JUMP * prev_res)
            full_only |= active & ~conv & ((certifying & full) | jump)
            conv &= full
        status[conv] = Status.CONVERGED
        active &= ~conv
        res_log[active & ~retry, it - 1] = res[active & ~retry]
        if backtrack and groups is not None and it >= 2 * STALL_WINDOW:   # (iii) a stalled row stops now
            active &= ~_stalled(res_log[:, it - 2 * STALL_WINDOW:it], active, groups, status)
        if not active.any():
            break
        _halve(damp, halvings, retry)        # the rejected iterate is replaced: step again from the valid one
        X[retry], f[retry] = good_x[retry], good_f[retry]
        for b in np.nonzero(retry)[0]:
            dX[b], dF[b] = [], []            # (the next secant pair is taken from the valid iterate)
        X_new = X + damp[:, None] * f
        by_newton = np.zeros(B, bool)       # rows whose next iterate is the Newton hook's (no Anderson step)
        if newton is not None:
            cand_n = newton(X, FX, active & ~retry, res_log[:, :it])
            use = active & ~retry & np.all(np.isfinite(cand_n), axis=1)
            for b in np.nonzero(use)[0]:
                if admissible is None or admissible(cand_n[b], b):
                    X_new[b], by_newton[b] = cand_n[b], True
        if anderson:
            for b in np.nonzero(active)[0]:
                if last_x is not None:
                    dX[b].append(X[b] - last_x[b])
                    dF[b].append(f[b] - last_f[b])
                    del dX[b][:-anderson], dF[b][:-anderson]
                if not dX[b] or by_newton[b]:
                    continue
                beta = damp[b]
                Fm, Xm = np.array(dF[b]).T, np.array(dX[b]).T
                if free is None:
                    gam, *_ = np.linalg.lstsq(Fm, f[b], rcond=None)
                else:
                    gam, *_ = np.linalg.lstsq(Fm[free], f[b][free], rcond=None)
                cand = X[b] + beta * f[b] - (Xm + beta * Fm) @ gam
                if step_guard is None:
                    small = np.linalg.norm(cand - X[b]) / (np.linalg.norm(X[b]) + 1e-300) < 0.5
                else:
                    small = bool(np.all(np.isfinite(cand))) and step_guard(cand, X[b], b)
                if np.all(np.isfinite(cand)) and small and (admissible is None or admissible(cand, b)):
                    X_new[b] = cand
        last_x, last_f = X.copy(), f
        X = np.where(active[:, None], X_new, X)
        if project is not None and active.any():
            rows = np.nonzero(active)[0]
            X[rows] = project(X[rows], rows)
    return Run(X, aux, status, iters, res, (dX, dF), full_calls, damp, halvings, at_jump=at_jump)


def _store(aux: dict, out: dict, idx: np.ndarray, B: int, compact: bool) -> None:
    """Keep the map's auxiliary output ``out`` of the rows ``idx`` as each row's last (``Run.aux``)."""
    for k, v in out.items():
        v = np.asarray(v)
        if k not in aux:
            aux[k] = np.zeros((B,) + v.shape[1:], v.dtype)
        aux[k][idx] = v if compact else v[idx]


def _residual(residual: Callable, aux_residual: Callable | None, X: np.ndarray, FX: np.ndarray,
              finite: np.ndarray, aux: dict, aux_prev: dict, seen: np.ndarray) -> np.ndarray:
    """Per row: ``residual(X, FX)``, with ``aux_residual`` the max of it and the auxiliary output's change
    (1 where a row has no previous evaluation); inf where ``FX`` is not finite."""
    r = residual(X, np.where(finite[:, None], FX, X))
    if aux_residual is not None:
        r_aux = aux_residual(aux, aux_prev) if aux_prev else np.ones(len(X))
        r = np.maximum(r, np.where(seen, r_aux, 1.0))
    return np.where(finite, r, np.inf)


def _at_jump(X: np.ndarray, f: np.ndarray, last_x: np.ndarray | None, last_f: np.ndarray | None,
             residual: Callable, rtol: float, jump_rtol: float, res: np.ndarray) -> np.ndarray:
    """Rows whose iterate sits on a jump of the map (:func:`iterate`, ``jump_rtol``): moved by less than
    ``rtol`` since the previous evaluation (``last_x``), undamped steps ``f`` and ``last_f`` against each other
    (cosine < ``OSCILLATION_COS``), residual ``res`` at most ``jump_rtol``. A continuous map cannot do this:
    its step would barely change over a move that small."""
    if last_x is None:
        return np.zeros(len(X), bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        moved = residual(last_x, X)
    return (moved < rtol) & (_step_cosine(f, last_f) < OSCILLATION_COS) & (res <= jump_rtol)


def _step_cosine(f: np.ndarray, last_f: np.ndarray) -> np.ndarray:
    """Per row, the cosine between this evaluation's undamped step ``f`` and the previous one ``last_f``
    (NaN for a zero step): below ``OSCILLATION_COS`` the two point against each other."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.sum(f * last_f, axis=1) / (np.linalg.norm(f, axis=1) * np.linalg.norm(last_f, axis=1))
