"""Which integrator solves a point (MODEL.md §6 vs §8): one rule for the CLI and the notebook API.

``auto`` picks the split-line rule where it applies (L = 2, r = r* = k = 1: the precise integrator of §6) and
the randomized-QMC engine of §8 everywhere else; ``split`` and ``product`` are refused outside their case.
"""

from __future__ import annotations

from ..errors import ParameterError
from ..model import ModelParams

INTEGRATORS = ("auto", "split", "qmc", "product")


def is_small(params: ModelParams) -> bool:
    """True for the case of MODEL.md §6 (L = 2, r = r* = 1, one positional direction)."""
    return params.L == 2 and params.r == 1 and params.r_star == 1 and params.k == 1


def choose_integrator(params: ModelParams, integrator: str = "auto", rule: str | None = None,
                      name: str = "integrator") -> str:
    """The integrator to use (``split``, ``product`` or ``qmc``); ``rule`` is the split/product choice that
    ``auto`` uses in the small case; ``name`` is the parameter named in errors."""
    if integrator not in INTEGRATORS:
        raise ParameterError(name, f"one of {', '.join(INTEGRATORS)}", integrator)
    small = is_small(params)
    if integrator == "auto":
        integrator = (rule or "split") if small else "qmc"
    if integrator in ("split", "product") and not small:
        raise ParameterError(name, "qmc or auto when L != 2, r != 1, r* != 1 or k != 1 (the split and product "
                             "rules are for L = 2, r = r* = 1, k = 1)", integrator)
    return integrator
