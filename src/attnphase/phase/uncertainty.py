"""Uncertainties of α_c and α_l from the integration error (MODEL.md §8: QMC values carry standard errors over
independent scrambles).

A line is the root of ``f(α) = a(α) − b(α)`` (α_c: e_t of the semantic point minus its competitor's; a growth
factor minus 1; α_l: ε_g of the global minimum minus ε_lin). Its standard error to first order is
``δα = √(σ_a² + σ_b²) / |f′(α)|``, with the σ's the standard errors of the two values at the nearest solved
point and ``f′`` the slope between the two solved points nearest the root. The scrambles of one α are shared
by all its points, so part of the error is common to ``a`` and ``b``: adding the variances is the conservative
choice. Integrators without a per-point error (the split rule: ~1e-5 quadrature, docs/theory.md) give None
with the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .global_min import ONSET_FACTOR


@dataclass(frozen=True)
class LineError:
    """The standard error of a located line (``value``; None with ``reason`` where it cannot be given)."""

    value: float | None
    reason: str = ""
    slope: float | None = None
    sigma: float | None = None


def _near(rows, alpha: float, col: str):
    """The two rows nearest ``alpha`` with finite ``col`` (sorted by α), or None."""
    r = rows[np.isfinite(rows[col].to_numpy(float))]
    if len(r) < 2:
        return None
    order = np.argsort(np.abs(r["alpha"].to_numpy(float) - alpha), kind="stable")[:2]
    return r.iloc[np.sort(order)]


def _slope_err(rows, alpha: float, col: str):
    near = _near(rows, alpha, col)
    if near is None:
        return None
    a, v = near["alpha"].to_numpy(float), near[col].to_numpy(float)
    err_col = f"{col}_err"
    e = near[err_col].to_numpy(float) if err_col in near else np.full(2, np.nan)
    if a[1] == a[0]:
        return None
    i = int(np.argmin(np.abs(a - alpha)))
    return (v[1] - v[0]) / (a[1] - a[0]), float(e[i])


def line_error(fps, alpha: float | None, kind_a: str, kind_b: str | None, col: str = "e_t",
               offset_err: float = 0.0) -> LineError:
    """Standard error of the root at ``alpha`` of ``col(kind_a) − col(kind_b)`` on a survey table ``fps``
    (:func:`~.stability.survey`; columns alpha, kind, ``col``, ``col_err``). ``kind_b`` None: ``col(kind_a)``
    minus a constant of error ``offset_err`` (α_l: ε_lin)."""
    if alpha is None:
        return LineError(None, "no line")
    if fps is None or len(fps) == 0 or f"{col}_err" not in fps:
        return LineError(None, "no survey table with errors")
    sa = _slope_err(fps[fps["kind"] == kind_a], alpha, col)
    sb = (0.0, offset_err) if kind_b is None else _slope_err(fps[fps["kind"] == kind_b], alpha, col)
    if sa is None or sb is None:
        return LineError(None, f"fewer than two solved {kind_a if sa is None else kind_b} points near it")
    slope, sig = sa[0] - sb[0], math.hypot(sa[1], sb[1])
    if not math.isfinite(sig):
        return LineError(None, "the integrator gives no per-point error (split rule: quadrature ~1e-5, not "
                               "estimated per point)")
    if not slope or not math.isfinite(slope):
        return LineError(None, f"the difference of {col} has no slope near the line", slope, sig)
    return LineError(abs(sig / slope), "", float(slope), float(sig))


def transition_errors(fps, alpha_c: float | None, alpha_c_kind: str, against: str, alpha_l: float | None,
                      global_kind_above: str | None, end: Any = None,
                      location: dict[str, Any] | None = None) -> dict[str, Any]:
    """``alpha_c_err``, ``alpha_l_err`` (None with ``*_err_reason``) for a transition: α_c of kind ``crossing``
    from the e_t of the semantic point and ``against``; ``competitor loses stability`` and a ``continuous``
    onset located on the competitor's growth factor (``location["method"]``, :data:`~.global_min.ONSET_FACTOR`)
    from ``against``'s growth factor (``stability``, ``stability_err``); another ``continuous`` / ``semantic
    branch appears`` from the bracket of the semantic branch's end (``end``: half its width, the location's
    resolution). Where the table bracket of an e_t crossing holds rows whose e_t are tied (``location["tied"]``),
    α_c is only known to lie between the neighbouring significant rows: its error is at least half that bracket. α_l
    from the ε_g of the kind global just above α_c."""
    location = location or {}
    out: dict[str, Any] = {}
    if alpha_c is None:
        c = LineError(None, "no α_c")
    elif alpha_c_kind == "crossing":
        c = line_error(fps, alpha_c, "semantic", against, "e_t")
    elif location.get("method") == ONSET_FACTOR and location.get("err") is not None:
        c = LineError(float(location["err"]), f"the weighted line through the {against} point's growth factors "
                      f"(± their errors) at α = {location.get('rows')}, its root's standard error")
    elif alpha_c_kind == "competitor loses stability":
        c = line_error(fps, alpha_c, against, None, "stability")
    elif end is not None:
        c = LineError(0.5 * abs(end.alpha_valid - end.alpha_invalid),
                      "half the bracket of the semantic branch's end (located on the solves, not from the "
                      "integration error)")
    else:
        c = LineError(None, f"α_c of kind {alpha_c_kind!r}: no error model")
    if alpha_c_kind == "crossing" and location.get("tied") and location.get("switch_bracket"):
        half = 0.5 * abs(location["switch_bracket"][1] - location["switch_bracket"][0])
        if c.value is None or c.value < half:
            c = LineError(half, f"half the table bracket {location['switch_bracket']} between the rows where e_t "
                                f"tell the fixed points apart (tied inside it at α = {location['tied']})")
    out.update(alpha_c_err=c.value, alpha_c_err_reason=c.reason)
    if alpha_l is None:
        lerr = LineError(None, "no α_l")
    elif global_kind_above is None:
        lerr = LineError(None, "no global minimum known above α_c")
    else:
        lerr = line_error(fps, alpha_l, global_kind_above, None, "eps_g")
    out.update(alpha_l_err=lerr.value, alpha_l_err_reason=lerr.reason)
    return out
