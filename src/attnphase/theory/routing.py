"""Which integrator solves a point (MODEL.md §6 vs §8): one rule for the CLI and the notebook API; and the
fixed-point safeguard the general engine uses by default for a structure (:func:`default_backtrack`).

``auto`` picks the split-line rule where it applies (L = 2, r = r* = 1, P = ±(1, -1)ᵀ: the precise integrator
of §6) and the randomized-QMC engine of §8 everywhere else; ``split`` and ``product`` are refused outside their
case.
"""

from __future__ import annotations

from ..errors import ParameterError
from ..model import ModelParams

INTEGRATORS = ("auto", "split", "qmc", "product")


def has_paper_encodings(params: ModelParams) -> bool:
    """True when ``P = ±(1, -1)ᵀ``: the encodings ``s = (+1, -1)`` that the split and product rules hard-code
    (MODEL.md §6; the sign is the model's ``Q → −Q`` symmetry). Any other P at L = 2 (a scale, ``P = 0``,
    ``(1, 1)ᵀ``) is a different model, solved by the engine of §8."""
    P = params.P_array
    return P.shape == (2, 1) and abs(abs(P[0, 0]) - 1.0) < 1e-12 and abs(P[1, 0] + P[0, 0]) < 1e-12


def is_small(params: ModelParams) -> bool:
    """True for the case of MODEL.md §6 (L = 2, r = r* = 1, one positional direction with ``P = ±(1, -1)ᵀ``)."""
    return params.L == 2 and params.r == 1 and params.r_star == 1 and has_paper_encodings(params)


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
        if params.L == 2 and params.r == 1 and params.r_star == 1:
            raise ParameterError("P", f"(1, -1)ᵀ or (-1, 1)ᵀ with integrator {integrator} (the split and product "
                                 "rules hard-code the paper's encodings; use qmc or auto for another P)",
                                 [list(row) for row in params.P])
        raise ParameterError(name, "qmc or auto when L != 2, r != 1, r* != 1 or k != 1 (the split and product "
                             "rules are for L = 2, r = r* = 1, k = 1)", integrator)
    return integrator


SAFEGUARD_HALVINGS = 4
"""Halvings of the damping (0.6 → 0.0375 at most) the safeguard of ``fixed_point.iterate`` may make per row
where it is on by default (:func:`default_backtrack`)."""


def default_backtrack(params: ModelParams) -> int:
    """Default of ``engine.solve_batch(backtrack=…)``: ``SAFEGUARD_HALVINGS`` for a rank r > 1 student, 0 (no
    safeguard) at r = 1. Measured (docs/notes/2026-12-05-theory-general.md, "Rank-2 defaults and progress"): at r = 2 the pinned
    branches' maps have an oscillating mode (eigenvalue ≈ −4.8 at the positional point, so damping 0.6 makes
    it grow) and the default start runs into invalid states: without the safeguard the default call ended in
    ``invalid_state``, with it every r = 2 point tried converged to the values of hand-tuned dampings. At
    r = 1 the default damping converges where a fixed point exists, and the safeguard only slows the
    collapsed-branch artefacts (positional ω = 0.1: damping cut to 0.0375, 65 instead of ~25 steps before
    it is found ``not_significant``), so the r = 1 behaviour is kept as it was. The safeguard also covers a
    scramble that stalls or fails while others of its point converged: it stops early and restarts once from
    their mean (``fixed_point.STALL_WINDOW``, ``restarts.restart_failed``; docs/notes/2026-12-05-theory-general.md, "Rank 2 on
    the defaults"). A student of lower rank than the teacher (r < r*) gets it too: at r = 1, r* = 2, α = 2 the
    teacher overlap θ is a soft direction (slope of its map ≈ 0.9 near the fixed point, and θ = 0 only weakly
    unstable), and without the safeguard one scramble of four hovered at ``max_steps`` (4096 points) or settled
    on the θ = 0 fixed point (a point ``not_significant``); with it that scramble restarts from the others'
    mean and the point converges (docs/notes/2026-12-05-theory-general.md, "A student of lower rank than the teacher")."""
    return SAFEGUARD_HALVINGS if params.r > 1 or params.r < params.r_star else 0
