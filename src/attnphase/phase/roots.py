"""Root finding on functions and on tables (the numerical core of α_c and α_l, MODEL.md §6 "Transition")."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..errors import ParameterError

def find_root(f: Callable[[float], float], a: float, b: float, *, xtol: float = 1e-4, num: int = 21,
              grid: Sequence[float] | None = None) -> float | None:
    """Bracket-and-refine root of ``f`` on ``[a, b]``.

    Scans ``grid`` (default ``num`` equispaced points) for the first sign change of ``f`` and refines it with
    :func:`scipy.optimize.brentq` to ``xtol``. Returns ``None`` when no sign change is found (NaN values are
    skipped). An exact zero on the grid is returned as is.
    """
    from scipy.optimize import brentq

    if not (math.isfinite(a) and math.isfinite(b)) or not a < b:
        raise ParameterError("find_root interval", "finite a < b", (a, b))
    xs = np.asarray(grid if grid is not None else np.linspace(a, b, num), dtype=float)
    prev_x = prev_v = None
    for x in xs:
        v = float(f(float(x)))
        if not math.isfinite(v):
            continue
        if v == 0.0:
            return float(x)
        if prev_v is not None and (prev_v < 0) != (v < 0):
            return float(brentq(lambda t: float(f(t)), prev_x, float(x), xtol=xtol))
        prev_x, prev_v = float(x), v
    return None


def local_root(f: Callable[[float], float], estimate: float, lo: float, hi: float, *, sign_below: float,
               step: float = 0.02, xtol: float = 1e-4, max_expand: int = 8) -> float | None:
    """Root of ``f`` near ``estimate`` on ``[lo, hi]``, knowing the sign of ``f`` below the root.

    Brackets with ``estimate ± step`` (widening by doubling towards the root while both ends have the same
    sign) and refines with :func:`scipy.optimize.brentq` to ``xtol``. ``f`` may raise :class:`Unrefinable`
    (e.g. a solve that did not converge): the result is then ``None``. Values are cached, so the bracket ends
    are evaluated once. Returns ``lo`` when ``f(lo)`` already has the sign above the root.
    """
    from scipy.optimize import brentq

    if not lo < hi:
        raise ParameterError("local_root interval", "lo < hi", (lo, hi))
    cache: dict[float, float] = {}

    def g(x):
        x = float(x)
        if x not in cache:
            cache[x] = float(f(x))
        return cache[x]

    below = math.copysign(1.0, sign_below)
    est = min(max(float(estimate), lo), hi)
    a, b = max(lo, est - step), min(hi, est + step)
    try:
        for _ in range(max_expand):
            fa, fb = g(a), g(b)
            if (fa * below > 0) and (fb * below <= 0):
                return float(brentq(g, a, b, xtol=xtol)) if fb != 0.0 else b
            if fa * below <= 0:  # root below a
                if a <= lo:
                    return float(lo)
                step *= 2
                a, b = max(lo, a - step), a
            else:  # both ends below the root: move up
                if b >= hi:
                    return None
                step *= 2
                a, b = b, min(hi, b + step)
    except Unrefinable:
        return None
    return None


class Unrefinable(Exception):
    """Raised by a root function when a solve it needs is not a valid branch point."""


def table_root(x: Sequence[float], y: Sequence[float], direction: str = "any", *, smooth: bool = True
               ) -> float | None:
    """First sign change of tabulated ``y(x)`` (sorted by x, NaN skipped).

    ``direction``: ``"down"`` only accepts a change from ``y > 0`` to ``y < 0`` as x increases, ``"up"`` the
    reverse, ``"any"`` either. (α_c is a *down* crossing of ``e_t^sem − e_t^pos``.) The root inside the
    bracketing interval is that of the cubic through the four surrounding points (``smooth``; a quadratic or
    the straight line when fewer exist), which passes through the data, so it stays inside the bracket."""
    from scipy.optimize import brentq

    if direction not in ("any", "up", "down"):
        raise ParameterError("direction", "'any', 'up' or 'down'", direction)
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    order = np.argsort(x)
    x, y = x[order], y[order]
    for i in range(len(x)):
        if y[i] == 0.0 and direction == "any":
            return float(x[i])
        if i and (y[i - 1] < 0) != (y[i] < 0):
            if (direction == "down" and y[i - 1] < 0) or (direction == "up" and y[i - 1] > 0):
                continue
            lin = float(x[i - 1] - y[i - 1] * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))
            if not smooth or len(x) < 3 or y[i] == 0.0:
                return lin
            lo, hi = max(0, i - 2), min(len(x), i + 2)
            xs, ys = x[lo:hi], y[lo:hi]
            c = 0.5 * (x[i - 1] + x[i])
            try:
                poly = np.polyfit(xs - c, ys, len(xs) - 1)
                return float(brentq(lambda t: float(np.polyval(poly, t - c)), x[i - 1], x[i]))
            except (ValueError, np.linalg.LinAlgError):
                return lin
    return None
