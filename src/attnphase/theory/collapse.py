"""The one home of the collapse rules: when has a pinned branch's defining overlap vanished, i.e. the branch
collapsed onto the uninformative point (MODEL.md §6 "Branches", §8)? :func:`overlap_vanished` on a point's scalar
overlap (the threshold ``COLLAPSE_TOL·σ√q``; its home is :mod:`.state`, beside the state it reads); for the QMC engine, whose overlaps carry integration noise, the
evidence-based forms of the same question: :func:`collapse_record` (a failed iterate that fell to ~0),
:func:`response_record` (a not-significant overlap that is the noise image of a stable 0) and
:func:`zero_q_record` (the q = 0 point).

A failed solve on a pinned branch whose defining overlap vanished: the branch collapsed.

Where a pinned branch has no fixed point (semantic at σ = 0.3 or λ = 0.1, ω = 0.3, α = 2; positional at
σ = 0.7), the pinned iteration falls onto the uninformative point — θ (resp. M), and on the semantic branch q
too, shrink to ~0 — and there it either converges to an integration artefact (``not_significant``) or steps out
of the valid set (D = λ + σ²V̂ loses positive definiteness once q → 0) or oscillates around 0 (the point is
unstable against the overlap). The last two were reported ``invalid_state`` / ``max_steps``, which reads like a
numerical failure at a point that exists. (The first is ``collapsed`` too where the artefact is explained by the
QMC noise around a stable Z = 0: :func:`response_record`; else ``not_significant``.) :func:`collapse_record`
tells the failures apart: the overlap,
averaged over the scrambles' last iterates (norms, so that scrambles with opposite signs do not cancel), below
``COLLAPSE_FRACTION`` of the model start's (:func:`starts.model_start`, the branch's expected scale).
Measured (docs/notes/2026-12-05-theory-general.md, "Starts away from σ = 0.5, λ = 0.01"): collapsed failures end at 0–3.9 %
of the start's overlap, failures on existing branches at ≥ 45 %.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from ..model import ModelParams
from .growth import STABILITY_EPS, STABLE_K, Stability, block_slice, step, verdict
from .qmc_map import free_map
from .significance import DEFINING
from .starts import model_start
from .state import COLLAPSE_TOL, overlap_vanished, unflatten
from .zero_point import ZERO_Q, zero_point

__all__ = ["COLLAPSE_TOL", "overlap_vanished", "collapse_record", "response_record", "zero_q_record",
           "noise_response", "COLLAPSE_FRACTION", "RESPONSE_TOL"]

COLLAPSE_FRACTION = 0.05
"""A failed pinned iterate whose defining overlap is below this fraction of the model start's collapsed."""
_DEFINING = {"positional": "M", "semantic": "theta"}
RESPONSE_TOL = 1.0
""":func:`response_record`: a scramble's converged overlap Z_s is the linear response of Z = 0 to its QMC noise
where ``‖Z_s − Z_pred,s‖ ≤ RESPONSE_TOL × rms_s ‖Z_pred,s‖`` (the prediction's error is set by the point set's
noise as a whole, not by one scramble's response, which can be small by chance). Measured: r = 1, r* = 2 semantic
α = 1, max over the scrambles 0.33 (4096 × 4) and 0.55 (1024 × 4); the positional ω = 0.1, α = 2 artefact
(1024 × 4) 2.1 (one scramble at m = −0.038 where its noise pushes +; docs/notes/2026-12-05-theory-general.md, "A firmer
`collapsed`")."""


def collapse_record(params: ModelParams, alpha: float, branch: str, xs: np.ndarray) -> dict | None:
    """``xs``: the scrambles' last iterates (S, n) of a point whose solve failed. Returns a record (overlap,
    value, the start's value, fraction, reason) when the branch's defining overlap collapsed, else None (also
    for branches without one: free, uninformative). A converged point whose overlap is not significant is
    judged by :func:`response_record` instead (was: every scramble below ``COLLAPSE_FRACTION`` of the start's,
    a borderline verdict at r = 1, r* = 2, α = 1, 4096 × 4: 4.7 %)."""
    name = _DEFINING.get(branch)
    if name is None:
        return None
    xs = np.asarray(xs, float)
    xs = xs[np.all(np.isfinite(xs), axis=1)]
    if xs.shape[0] == 0:
        return None
    norms = _norms(xs, params, name)
    value = float(np.mean(norms))
    ref = _start_value(params, alpha, branch, name)
    if not ref > 0 or value >= COLLAPSE_FRACTION * ref:
        return None
    overlap = _overlap(name)
    return {"overlap": overlap, "value": value, "max": float(np.max(norms)), "start_value": ref,
            "fraction": value / ref, "limit": COLLAPSE_FRACTION, "significant": False,
            "reason": (f"collapsed: |{overlap}| fell to {value:.2g} ({value / ref:.1%} of the start's {ref:.3g}) "
                       "before the iteration failed; the pinned branch has no fixed point here")}


def _overlap(name: str) -> str:
    return "m" if name == "M" else "theta"


def _norms(xs: np.ndarray, params: ModelParams, name: str) -> np.ndarray:
    Z = np.asarray(getattr(unflatten(xs, params.r, params.k, params.r_star), name))
    return np.linalg.norm(Z.reshape(Z.shape[0], -1), axis=1)


def _start_value(params: ModelParams, alpha: float, branch: str, name: str) -> float:
    return float(np.linalg.norm(np.asarray(getattr(model_start(params, branch, alpha), name))))


def noise_response(params: ModelParams, alpha: float, branch: str, xs: np.ndarray, cfg,
                   eps: float = STABILITY_EPS) -> dict:
    """The linearisation of the branch's map at Z = 0 (MODEL.md §7, §8), per scramble s and on its own QMC
    points: ``x0_s`` = the scramble's state ``xs[s]`` with the defining overlap Z set to 0 (the uninformative
    point up to O(Z²)); ``ε_s = F_Z(x0_s)`` (on a QMC set without the reflection symmetry the odd sector's
    output at Z = 0 is noise, 0 for N → ∞); ``J_s`` the central difference of F_Z at x0_s (step
    ``eps·√(tr q / r)``, :func:`stability_general.step`); the map's own fixed point near 0 is then
    ``Z_pred_s = (I − J_s)⁻¹ ε_s``. Only Z's entries that the pinned iteration moves enter (those non-zero in
    some scramble: the teacher pin's columns at r < r*, the reflection ansatz's rows and the student gauge's
    zeros stay 0). The free map (:func:`stability_general.free_map`, global prox), one call for every row.
    Returns per-scramble ``growth`` (leading real eigenvalue of J_s), ``predicted`` (‖Z_pred_s‖), ``actual``
    (‖Z_s‖), ``miss`` (‖Z_s − Z_pred_s‖ / rms over the scrambles of ‖Z_pred_s‖), ``ratio`` (actual /
    predicted), ``cosine`` (⟨Z_s, Z_pred_s⟩ / norms), ``noise`` (‖ε_s‖), and ``valid`` (the map accepted every
    row)."""
    name = _DEFINING[branch]
    r, k, rs = params.r, params.k, params.r_star
    xs = np.asarray(xs, float)
    S = xs.shape[0]
    sl = block_slice(name, r, k, rs)
    Z = xs[:, sl]
    free = np.nonzero(np.any(Z != 0.0, axis=0))[0]
    na = len(free)
    if na == 0:                          # Z exactly 0 on every scramble: nothing to linearise along
        nan = np.full(S, np.nan)
        return {"growth": nan, "predicted": nan, "actual": np.zeros(S), "miss": nan, "ratio": nan,
                "cosine": nan, "noise": nan, "valid": False, "entries": 0, "eps": eps}
    x0 = xs.copy()
    x0[:, sl] = 0.0
    delta = step(xs, r, eps)
    rows = [x0]
    for j in free:
        for sign in (1.0, -1.0):
            xp = x0.copy()
            xp[:, sl.start + j] += sign * delta
            rows.append(xp)
    X = np.concatenate(rows)                                        # ((1 + 2 na) S, n), block-major
    knobs = np.tile([alpha, params.omega, params.sigma, params.lam], (len(X), 1))
    with jax.enable_x64(True):
        F, ok, _ = free_map(knobs, X, np.tile(np.arange(S), 1 + 2 * na), params, cfg)
    Fz = F[:, sl][:, free].reshape(1 + 2 * na, S, na)
    eps_s = Fz[0]                                                   # (S, na)
    J = np.stack([(Fz[1 + 2 * j] - Fz[2 + 2 * j]) / (2.0 * delta[:, None]) for j in range(na)], axis=2)
    fin = np.all(np.isfinite(J), axis=(1, 2)) & np.all(np.isfinite(eps_s), axis=1)
    J0 = np.where(fin[:, None, None], J, 0.0)
    growth = np.where(fin, np.linalg.eigvals(J0).real.max(axis=1), np.nan)
    pred = np.full((S, na), np.nan)
    for s in np.nonzero(fin)[0]:
        try:
            pred[s] = np.linalg.solve(np.eye(na) - J0[s], eps_s[s])
        except np.linalg.LinAlgError:
            pass
    zf = Z[:, free]
    pn, an = np.linalg.norm(pred, axis=1), np.linalg.norm(zf, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = an / pn
        cosine = np.sum(zf * pred, axis=1) / (an * pn)
        miss = np.linalg.norm(zf - pred, axis=1) / np.sqrt(np.mean(pn ** 2))
    return {"growth": growth, "predicted": pn, "actual": an, "miss": miss, "ratio": ratio, "cosine": cosine,
            "noise": np.linalg.norm(eps_s, axis=1), "valid": bool(np.all(ok)) and bool(np.all(fin)),
            "entries": int(na), "eps": eps}


def response_record(params: ModelParams, alpha: float, branch: str, xs: np.ndarray, cfg) -> dict | None:
    """Is a converged point whose defining overlap Z is not significant (``significance.overlap_significance``) a
    collapse onto the uninformative point? ``xs``: its per-scramble fixed points (S, n), each in its own map's
    gauge (the iteration's raw states: their QMC noise is the one that made them). Collapsed where (i) Z = 0 is
    a stable fixed point of the map — the growth factor of Z at Z = 0 (:func:`noise_response`, mean over the
    scrambles) below +1 by more than ``STABLE_K`` standard errors (:func:`stability_general.verdict`) — and
    (ii) EVERY scramble's Z is the linear response of that stable point to the scramble's own QMC noise,
    ``Z_pred,s = (I − J_s)⁻¹ ε_s``, to within ``RESPONSE_TOL`` × the responses' rms size. Then the N → ∞ map
    has Z = 0 there and the artefact is the noise's image. Returns the collapse record (status ``collapsed``)
    if so, else the record with ``collapsed: False`` and ``why_not`` (the point stays ``not_significant``);
    None for branches without a defining overlap.

    Replaces the rule "every scramble's |Z| below 5 % of the start's" (``COLLAPSE_FRACTION``), which rested on
    an arbitrary threshold and was borderline where it was measured (r = 1, r* = 2, α = 1, 4096 × 4: 4.7 %). The
    positional ω = 0.1, α = 2 artefact (1024 × 4) is not the response of a stable m = 0 (one scramble sits at
    m = −0.038 while its noise pushes +: miss 2.1) and stays ``not_significant`` (docs/notes/2026-12-05-theory-general.md, "A
    firmer `collapsed`")."""
    name = _DEFINING.get(branch)
    if name is None:
        return None
    xs = np.asarray(xs, float)
    if xs.shape[0] < 2 or not np.all(np.isfinite(xs)):
        return None
    resp = noise_response(params, alpha, branch, xs, cfg)
    g = resp["growth"]
    growth = float(np.mean(g))
    err = float(np.std(g, ddof=1) / math.sqrt(len(g))) if np.all(np.isfinite(g)) else math.nan
    stab, _ = verdict(growth, err, STABLE_K)
    miss = resp["miss"]
    agree = np.isfinite(miss) & (miss <= RESPONSE_TOL)
    overlap = _overlap(name)
    norms = resp["actual"]
    value = float(np.mean(norms))
    ref = _start_value(params, alpha, branch, name)
    fmt = lambda v: ", ".join(f"{a:.2g}" for a in v)  # noqa: E731
    out = {"overlap": overlap, "value": value, "max": float(np.max(norms)), "start_value": ref,
           "fraction": value / ref if ref > 0 else math.nan, "significant": False,
           "rule": "noise response of a stable Z = 0 (collapse.response_record)",
           "growth": growth, "growth_err": err, "growth_verdict": stab.value,
           "per_scramble": {k: [float(a) for a in resp[k]] for k in ("actual", "predicted", "miss", "ratio",
                                                                      "cosine", "growth", "noise")},
           "tol": RESPONSE_TOL, "k": STABLE_K, "eps": resp["eps"]}
    why_not = None
    if not resp["valid"]:
        why_not = f"the map rejected a state at {overlap} = 0 (no linearisation)"
    elif stab is not Stability.STABLE:
        why_not = f"{overlap} = 0 is not shown stable: growth {growth:.3g} ± {err:.2g} there ({stab.value})"
    elif not np.all(agree):
        bad = np.nonzero(~agree)[0].tolist()
        why_not = (f"scrambles {bad} are not the noise response of {overlap} = 0: |{overlap}| = {fmt(norms)} "
                   f"against the predicted {fmt(resp['predicted'])}, misses {fmt(miss)} of its rms size (limit "
                   f"{RESPONSE_TOL:g}; cosines {fmt(resp['cosine'])})")
    out["collapsed"] = why_not is None
    out["why_not"] = why_not
    out["reason"] = (f"collapsed: |{overlap}| = {fmt(norms)} per scramble is the response of a stable {overlap} = 0 "
                     f"(growth {growth:.3g} ± {err:.2g}) to each scramble's QMC noise (predicted "
                     f"{fmt(resp['predicted'])}): the pinned branch has fallen onto the uninformative point"
                     if why_not is None else f"not collapsed: {why_not}")
    return out


def zero_q_record(params: ModelParams, branch: str, xs: np.ndarray, alpha: float | None = None) -> dict | None:
    """A converged point at the q = 0 fixed point (the student Q = 0; MODEL.md §6, theory/zero_point.py): tr q of
    every scramble below ``ZERO_Q`` σ² (round-off around 0; genuine points have q ≳ 1e-3 σ²). Returns the record
    that :func:`collect` reports as ``Status.COLLAPSED`` on a pinned branch — in the split rule's words (a
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
    name = DEFINING.get(branch)
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
