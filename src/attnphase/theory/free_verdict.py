"""A verdict for the free (unpinned) branch: does the free iteration sit on a pinned branch's fixed point?
(MODEL.md §7, §8; issue 11, helper hB.)

The pinned subspaces M = 0 (semantic) and θ = 0 (positional) are invariant under the full map of MODEL.md §8,
so a pinned fixed point is also a fixed point of the free (unpinned) map, and it attracts the free iteration
in its pinned direction where its growth factor there is below +1 (MODEL.md §7;
:mod:`.stability_general`). The DISCRETISED free map does not keep the subspace: a QMC point set is not
symmetric under the reflection that pins it, so each scramble's map pushes a small overlap of its own
(an integration artefact), and where the map is rough (jumps of the prox's basin) the iteration wanders
around the pinned point without converging. The solve then ends ``max_steps`` although the point is known
(measured: L = 2, r = 2, r* = 1, ω = 0.3, σ = 0.7, λ = 0.01, α = 1; docs/notes/2026-12-05-theory-general.md, "Rank 2 at
σ = 0.7" and "Free branch verdict").

:func:`decide` is the rule, on per-scramble numbers only (the candidate pinned branch: the one whose pinned
overlap Z — M for semantic, θ for positional — the free iterate has least of, in units of the stability step
δ_s = ``STABILITY_EPS``·√(tr q_s / r), the scale at which the pinned point's growth factor is measured). The
free point ``ON_PINNED`` needs every one of:

1. *reach*: every scramble's ‖Z_s‖ ≤ ``REACH``·δ_s (where the pinned point's linearisation speaks);
2. the pinned branch, solved at the same α on the same QMC points, CONVERGED;
3. and STABLE against its pinned direction (growth below +1 by more than ``STABLE_K`` s.e.);
4. *near*: per scramble, tr q, the other overlap's norm and tr V of the free iterate within ``NEAR_RTOL``
   (relative) of the pinned point's on the same scramble;
5. *unresolved overlap* — any one of: (a) it shrinks with the QMC size (mean over scrambles below
   ``RESOLUTION_SHRINK`` of its value at the coarse stage's points), (b) the scrambles do not resolve it
   (t = mean/s.e. of the per-scramble norms below k, or their relative spread above ``SPREAD_LIMIT``, the rules
   of ``significance.overlap_significance``), (c) every scramble's ‖Z_s‖ within ``ARTEFACT_K`` × that scramble's
   own artefact at the pinned point: the free map's pinned-block output at the pinned state, ‖F_Z(x_pin,s)‖,
   divided by 1 − growth (the offset of the scramble's fixed point in linear response).

Otherwise the status stays (``max_steps``, or ``converged`` for a converged free point) with the evidence in
the record. A converged free point is examined only when it passes 1 (its overlap is within reach of the
pinned subspace); an ``ON_PINNED`` point is never a result: its values are NaN, the free iterate in ``last``,
the pinned point's values (which are a converged result of the pinned branch) in the record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from .batch import solve_core
from .general_solution import GeneralSolution
from .growth import STABILITY_EPS, block_slice, step
from .qmc_map import free_map_at
from .significance import RESOLUTION_SHRINK, SPREAD_LIMIT
from .stability_general import with_stability
from .state import OrderParams, invariants, unflatten
from .status import Status


REACH = 2.0
"""Largest pinned overlap of the free iterate, per scramble, in units of the stability step δ_s
(``stability_general.STABILITY_EPS``·√(tr q_s / r)), for which the pinned point's growth factor speaks (it is a
central difference over ±δ). Measured (σ = 0.7, α = 1, 2; docs/notes/2026-12-05-theory-general.md "Free branch verdict"): the
wandering artefact of α = 1 reaches ≤ 0.16·√(tr q / r) = 1.6 δ, the α = 2 mixed point sits at 2.9–3.4 δ."""
NEAR_RTOL = 0.05
"""Largest relative distance, per scramble, of tr q, the other overlap and tr V between the free iterate and
the pinned point on the same scramble (measured at σ = 0.7, α = 1: ≤ 1 %)."""
ARTEFACT_K = 3.0
"""A free overlap within this factor of the scramble's linear-response artefact at the pinned point is that
artefact (rule 5c)."""
CANDIDATES = {"semantic": "M", "positional": "theta"}
"""Pinned branch → the block it pins (and that the free iterate must have little of)."""
_OTHER = {"semantic": ("q", "theta", "V"), "positional": ("q", "m", "V")}


@dataclass(frozen=True)
class Evidence:
    """Per-scramble numbers of one free point against one pinned branch (arrays of length S, scramble s on
    the same QMC points in both solves).

    ``z``: ‖Z_s‖ of the free iterate (Z the block the branch pins); ``delta``: the stability step δ_s;
    ``distance``: max relative distance of the other invariants to the pinned point's (NaN where the pinned
    point did not converge); ``pinned_status``; ``growth`` ± ``growth_err`` and ``stability`` (the verdict
    string of :class:`stability_general.Stability`); ``artefact``: ‖F_Z(x_pin,s)‖/(1 − growth) (None: not
    evaluated); ``z_coarse``: ‖Z_s‖ at the coarse stage's points (None: no coarse stage)."""

    branch: str
    z: np.ndarray
    delta: np.ndarray
    pinned_status: Status
    distance: np.ndarray | None = None
    growth: float = float("nan")
    growth_err: float = float("nan")
    stability: str = "unknown"
    artefact: np.ndarray | None = None
    z_coarse: np.ndarray | None = None


def overlap_name(branch: str) -> str:
    return "m" if CANDIDATES[branch] == "M" else "theta"


def within_reach(z: np.ndarray, delta: np.ndarray, reach: float = REACH) -> bool:
    """Rule 1: every scramble's pinned overlap within ``reach`` stability steps of the pinned subspace."""
    z, delta = np.asarray(z, float), np.asarray(delta, float)
    return bool(np.all(np.isfinite(z)) and np.all(z <= reach * delta))


def overlap_tests(ev: Evidence, k_se: float = 3.0) -> dict:
    """The three tests of rule 5 on the free iterate's pinned overlap, each result kept (for the record):
    ``shrink`` (mean over scrambles / its coarse-stage mean; None without a coarse stage) and ``shrinks``;
    ``t``, ``spread`` (√S/t) and ``unresolved_by_scrambles``; ``artefact_ratio`` (max over scrambles of
    ‖Z_s‖ / artefact_s; None without artefact) and ``within_artefact``."""
    z = np.asarray(ev.z, float)
    S = z.size
    mean = float(z.mean())
    out: dict = {"mean": mean, "shrink": None, "shrinks": None, "artefact_ratio": None, "within_artefact": None}
    if ev.z_coarse is not None and np.all(np.isfinite(ev.z_coarse)) and float(np.mean(ev.z_coarse)) > 0:
        out["coarse_mean"] = float(np.mean(ev.z_coarse))
        out["shrink"] = mean / out["coarse_mean"]
        out["shrinks"] = bool(out["shrink"] < RESOLUTION_SHRINK)
    se = float(z.std(ddof=1) / math.sqrt(S)) if S > 1 else math.inf
    t = mean / se if se > 0 else math.inf
    out.update(t=t, spread=math.sqrt(S) / t if t > 0 else math.inf, k=k_se, spread_limit=SPREAD_LIMIT)
    out["unresolved_by_scrambles"] = bool(t < k_se or out["spread"] > SPREAD_LIMIT)
    if ev.artefact is not None and np.all(np.isfinite(ev.artefact)) and np.all(np.asarray(ev.artefact) > 0):
        out["artefact_ratio"] = float(np.max(z / np.asarray(ev.artefact, float)))
        out["within_artefact"] = bool(out["artefact_ratio"] <= ARTEFACT_K)
    return out


def unresolved(ev: Evidence, k_se: float = 3.0) -> tuple[bool, str | None]:
    """Rule 5: is the free iterate's pinned overlap an artefact (not a resolved non-zero value)? Returns the
    answer and the first test that said so (None when resolved); :func:`overlap_tests` has them all."""
    name = overlap_name(ev.branch)
    z = np.asarray(ev.z, float)
    o = overlap_tests(ev, k_se)
    if o["shrinks"]:
        return True, (f"|{name}| shrinks with the QMC size ({o['coarse_mean']:.2g} on the coarse points, "
                      f"{o['mean']:.2g} on all)")
    if o["unresolved_by_scrambles"]:
        return True, (f"the scrambles do not resolve |{name}| (per scramble {_fmt(z)}: t = {o['t']:.2g}, spread "
                      f"{o['spread']:.0%})")
    if o["within_artefact"]:
        return True, (f"|{name}| per scramble ({_fmt(z)}) is within {ARTEFACT_K:g}x the pinned point's own "
                      f"integration artefact ({_fmt(ev.artefact)})")
    return False, None


def decide(ev: Evidence, k_se: float = 3.0) -> tuple[bool, str]:
    """The rule of the module docstring on one point's evidence: (on the pinned point?, a one-line reason)."""
    name, b = overlap_name(ev.branch), ev.branch
    z, delta = np.asarray(ev.z, float), np.asarray(ev.delta, float)
    if not within_reach(z, delta):
        return False, (f"not near the {b} point: |{name}| per scramble {_fmt(z)} exceeds {REACH:g} stability steps "
                       f"({_fmt(REACH * delta)})")
    if not ev.pinned_status.ok:
        return False, f"the {b} branch did not converge on these points ({ev.pinned_status.value})"
    if ev.stability != "stable":
        return False, (f"the {b} point is {ev.stability} against {name} (growth {ev.growth:.3g} ± "
                       f"{ev.growth_err:.2g}): it need not hold the free iteration")
    dist = np.asarray(ev.distance if ev.distance is not None else np.nan, float)
    if not np.all(np.isfinite(dist)):
        return False, f"no per-scramble distance to the {b} point (its per-scramble states are missing)"
    if not np.all(dist <= NEAR_RTOL):
        return False, (f"the free iterate differs from the {b} point by up to {np.max(dist):.1%} "
                       f"in tr q, the other overlap or tr V (limit {NEAR_RTOL:.0%})")
    art, why = unresolved(ev, k_se)
    if not art:
        return False, (f"|{name}| per scramble ({_fmt(z)}) is resolved, not an artefact of the {b} point: "
                       f"a fixed point near it?")
    return True, (f"falls onto the {b} point (converged, stable against {name}: growth {ev.growth:.2g} ± "
                  f"{ev.growth_err:.2g}); {why}")


def _fmt(v) -> str:
    return "[" + ", ".join(f"{float(a):.2g}" for a in np.asarray(v, float).ravel()) + "]"


def scramble_invariants(xs: np.ndarray, r: int, k: int, rs: int) -> dict[str, np.ndarray]:
    """tr q, ‖M‖, ‖θ‖, tr V per scramble of flattened states (S, n) (gauge invariants: no alignment needed)."""
    inv = invariants(unflatten(np.asarray(xs, float), r, k, rs))
    return {key: np.asarray(inv[key], float) for key in ("q", "m", "theta", "V")}


def candidate(xs: np.ndarray, r: int, k: int, rs: int) -> tuple[str, np.ndarray, np.ndarray]:
    """The pinned branch the free iterate is nearest to, in stability steps: (branch, ‖Z_s‖, δ_s)."""
    inv = scramble_invariants(xs, r, k, rs)
    delta = step(np.asarray(xs, float), r, STABILITY_EPS)
    best = min(CANDIDATES, key=lambda b: float(np.max(inv[overlap_name(b)] / delta)))
    return best, inv[overlap_name(best)], delta


def distance(free_xs: np.ndarray, pinned_xs: np.ndarray, branch: str, r: int, k: int, rs: int) -> np.ndarray:
    """Rule 4's per-scramble distance: the largest relative difference of the branch's other invariants."""
    a, b = scramble_invariants(free_xs, r, k, rs), scramble_invariants(pinned_xs, r, k, rs)
    return np.max(np.stack([np.abs(a[key] - b[key]) / np.maximum(np.abs(b[key]), 1e-12)
                            for key in _OTHER[branch]]), axis=0)


def artefact(pinned: "GeneralSolution") -> np.ndarray:
    """‖F_Z(x_pin,s)‖ per scramble: the free map (global prox, no pin, :func:`.qmc_map.free_map_at`) at
    the converged pinned point's per-scramble state, on that scramble's points, in the pinned block Z."""
    p = pinned.params
    xs = np.asarray(pinned.scramble_x, float)
    S = xs.shape[0]
    F, ok, _ = free_map_at([pinned] * S, xs, np.arange(S), p, pinned.qmc)
    sl = block_slice(CANDIDATES[pinned.branch], p.r, p.k, p.r_star)
    return np.where(ok, np.linalg.norm(F[:, sl], axis=1), np.nan)


def record(ev: Evidence, on: bool, reason: str, pinned: "GeneralSolution | None",
           free_status: Status | None = None) -> dict:
    """The verdict's provenance record (JSON-ready); ``free_status``: the free solve's status before it."""
    arr = lambda v: None if v is None else [float(a) for a in np.asarray(v, float).ravel()]  # noqa: E731
    out = {"verdict": Status.ON_PINNED.value if on else "kept", "on_pinned": on, "reason": reason,
           "free_status": None if free_status is None else free_status.value,
           "branch": ev.branch, "overlap": overlap_name(ev.branch),
           "per_scramble": {"overlap": arr(ev.z), "delta": arr(ev.delta), "distance": arr(ev.distance),
                            "artefact": arr(ev.artefact), "coarse_overlap": arr(ev.z_coarse)},
           "rules": {"reach": REACH, "near_rtol": NEAR_RTOL, "artefact_k": ARTEFACT_K},
           "overlap_tests": overlap_tests(ev),
           "pinned": None}
    if pinned is not None:
        vals = {key: float(v) for key, v in pinned.values.items() if np.ndim(v) == 0}
        errs = {f"{key}_err": float(v) for key, v in pinned.errors.items() if np.ndim(v) == 0}
        st = pinned.stability or {}
        out["pinned"] = {"status": pinned.status.value, "values": {**vals, **errs},
                         "iterations": pinned.iterations, "growth": st.get("growth"),
                         "growth_err": st.get("growth_err"), "stability": st.get("verdict"),
                         "qmc_points": pinned.qmc.points, "scrambles": pinned.qmc.scrambles}
    return out


def _on_pinned(sol: "GeneralSolution", rec: dict) -> "GeneralSolution":
    """The free solution reported ON_PINNED: no values (NaN), the free iterate's scramble mean in ``last``."""
    nan = lambda t: type(t)(*(np.full(np.shape(b), np.nan) for b in t))  # noqa: E731
    last = sol.last if sol.last is not None else OrderParams(*(np.asarray(b) for b in sol.x))
    return replace(sol, status=Status.ON_PINNED, x=nan(sol.x), hats=nan(sol.hats), last=last,
                   values={key: np.full(np.shape(v), np.nan) for key, v in sol.values.items()},
                   errors={key: np.full(np.shape(v), np.nan) for key, v in sol.errors.items()}, verdict=rec)


def apply(sols: Sequence["GeneralSolution"], max_steps: int = 200, k_se: float = 3.0) -> list:
    """The verdict on free-branch solutions: each MAX_STEPS point, and each CONVERGED one within reach of a
    pinned subspace, is compared with its candidate pinned branch solved at the same α, ω, σ, λ on the same
    QMC points (fixed size, ``max_steps``; one ``solve_batch`` per branch and size, with the stability of the
    pinned direction). Returns the solutions with ``verdict`` set (None where no verdict applies: converged
    out of reach, or another status) and ``ON_PINNED`` where :func:`decide` says so."""
    out = list(sols)
    todo: dict = {}
    for i, s in enumerate(sols):
        if s.branch != "free" or s.scramble_x is None or not (s.status is Status.MAX_STEPS or s.status.ok):
            continue
        p = s.params
        xs = np.asarray(s.scramble_x, float)
        if not np.all(np.isfinite(xs)):
            continue
        b, z, delta = candidate(xs, p.r, p.k, p.r_star)
        zc = None
        if s.coarse_scramble_x is not None and np.all(np.isfinite(s.coarse_scramble_x)):
            zc = scramble_invariants(s.coarse_scramble_x, p.r, p.k, p.r_star)[overlap_name(b)]
        ev = Evidence(b, z, delta, Status.MAX_STEPS, z_coarse=zc)
        if not within_reach(z, delta):
            if s.status is Status.MAX_STEPS:             # the evidence, no extra solve
                out[i] = replace(s, verdict=record(ev, False, decide(ev, k_se)[1], None, s.status))
            continue
        todo.setdefault((b, replace(s.qmc, target=0.0)), []).append((i, ev))
    for (b, cfg), items in todo.items():
        base = sols[items[0][0]].params
        pts = [sols[i] for i, _ in items]
        pinned = with_stability(solve_core(base, [s.alpha for s in pts], b, omegas=[s.params.omega for s in pts],
                                           sigmas=[s.params.sigma for s in pts], lams=[s.params.lam for s in pts],
                                           qmc_config=cfg, max_steps=max_steps))
        for (i, ev), s, pin in zip(items, pts, pinned):
            p = s.params
            ev = replace(ev, pinned_status=pin.status)
            if pin.converged:
                st = pin.stability or {}
                g, ge = float(st.get("growth", math.nan)), float(st.get("growth_err", math.nan))
                ev = replace(ev, growth=g, growth_err=ge, stability=st.get("verdict", "unknown"),
                             distance=distance(s.scramble_x, pin.scramble_x, b, p.r, p.k, p.r_star))
                if ev.stability == "stable":
                    ev = replace(ev, artefact=artefact(pin) / (1.0 - g))
            on, reason = decide(ev, k_se)
            rec = record(ev, on, reason, pin, s.status)
            out[i] = _on_pinned(s, rec) if on else replace(s, verdict=rec)
    return out
