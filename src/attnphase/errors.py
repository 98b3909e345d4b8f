"""Errors raised on bad input. Each message is one line naming the parameter and its allowed range."""

from __future__ import annotations


class ParameterError(ValueError):
    """A parameter is outside its allowed range (message: ``name: allowed range, got value``)."""

    def __init__(self, name: str, allowed: str, got: object):
        self.name, self.allowed, self.got = name, allowed, got
        super().__init__(f"{name} must be {allowed}, got {_plain(got)!r}")


def _plain(value: object) -> object:
    """numpy scalars and arrays as plain Python (``1.4``, not ``np.float64(1.4)``) for messages."""
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


class NotConvergedError(RuntimeError):
    """A solver stopped without meeting its tolerance and the caller asked for a hard failure."""


def check_finite(name: str, value: float) -> float:
    """``float(value)``, or a :class:`ParameterError` for NaN, ±inf, a huge integer or a non-number."""
    if isinstance(value, (str, bytes)):
        raise ParameterError(name, "a finite number", value)
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, "a finite number", value) from None
    if v != v or v in (float("inf"), float("-inf")):
        raise ParameterError(name, "a finite number", value)
    return v


def check_range(name: str, value: float, lo: float | None = None, hi: float | None = None,
                lo_open: bool = False, hi_open: bool = False) -> float:
    """Validate ``lo (<|<=) value (<|<=) hi``; returns ``float(value)``."""
    v = check_finite(name, value)
    left = "" if lo is None else (f"> {lo:g}" if lo_open else f">= {lo:g}")
    right = "" if hi is None else (f"< {hi:g}" if hi_open else f"<= {hi:g}")
    if lo is not None and hi is not None:
        allowed = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    else:
        allowed = left or right or "finite"
    bad = (lo is not None and (v <= lo if lo_open else v < lo)) or (
        hi is not None and (v >= hi if hi_open else v > hi))
    if bad:
        raise ParameterError(name, allowed, value)
    return v


def check_int(name: str, value: int, lo: int, hi: int | None = None) -> int:
    """``int(value)`` for an integral ``lo <= value (<= hi)``, else a one-line :class:`ParameterError`
    (also for NaN, ±inf, strings and other non-numbers)."""
    allowed = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
    if isinstance(value, (bool, str, bytes)):
        raise ParameterError(name, allowed, value)
    try:
        iv = int(value)
        integral = iv == value
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, allowed, value) from None
    if not integral or iv < lo or (hi is not None and iv > hi):
        raise ParameterError(name, allowed, value)
    return iv
