"""A continuous birth located at the refinement order (MODEL.md §6 "Transition").

Where the semantic branch is born continuously from the uninformative point (θ → 0), :func:`~.transition.transition`
reads α_c off the end of the branch followed on the curves (split rule at ``curve_nodes`` = 4). The Brent
refinement at ``nodes`` (8) refines e_t crossings only, so that end kept the coarse order's error, which is not
the ~2e-3 of a crossing at the paper's σ = 0.5: at σ = 0.7, ω = 0.3 the birth lies at 0.6409 at nodes = 4, 0.6502
at 6 and 0.6500 at 8 (docs/notes/2026-12-06-birth-resolution.md). Here the semantic branch is followed again at
``nodes``, from its first valid curve point at least :data:`BIRTH_WINDOW` above the coarse α_c down in steps of
:data:`BIRTH_STEP`, and its end located by ``follow_branch`` to ``end_xtol``. An e_t crossing is no substitute:
near a continuous birth the e_t gap vanishes quadratically and its sign is the solves' noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import ModelParams
from .branch import Branch, PointState
from .continuation import PointSolver, follow_branch

BIRTH_WINDOW = 0.05
"""The finer follow starts at the first valid curve point at least this far above the coarse α_c."""
BIRTH_DEPTH = 0.1
"""It goes down to the coarse α_c minus this (the finer order may move the birth either way)."""
BIRTH_STEP = 0.025
"""Spacing of its requested α's (the end between them is located by halving to ``end_xtol``)."""
BIRTH_METHOD = "the end of the semantic branch followed again at the refinement order (θ → 0)"
BIRTH_ERROR = ("the whole bracket of the semantic branch's end at the refinement order (not half: near θ → 0 the "
               "iteration is slow, and two follows from different curve points put the end one bracket apart, "
               "σ = 0.7, ω = 0.3: 0.6500 and 0.6508)")


@dataclass(frozen=True)
class BirthRefinement:
    """The birth at ``nodes``: ``alpha`` and its ``bracket`` (last valid, first collapsed α), or None with the
    ``reason``; ``alpha_coarse`` the curves' value."""

    nodes: int
    alpha_coarse: float
    alpha: float | None = None
    bracket: tuple[float, float] | None = None
    reason: str = ""
    solves: int = 0

    @property
    def error(self) -> float | None:
        """The bracket's whole width (:data:`BIRTH_ERROR`)."""
        return None if self.bracket is None else self.bracket[1] - self.bracket[0]

    def to_dict(self) -> dict[str, Any]:
        return dict(nodes=self.nodes, alpha_curve_nodes=self.alpha_coarse, alpha=self.alpha,
                    bracket=None if self.bracket is None else list(self.bracket), reason=self.reason,
                    solves=self.solves)

    def note(self, curve_nodes: int) -> str:
        """One line for the transition's notes."""
        head = f"the continuous birth on the curves (nodes = {curve_nodes}) at {self.alpha_coarse:.4f}"
        if self.alpha is None:
            return f"{head} could not be located at nodes = {self.nodes} ({self.reason}); the curves' value is kept"
        lo, hi = self.bracket
        return (f"{head} located again at nodes = {self.nodes}: α_c = {self.alpha:.4f} in [{lo:.4f}, {hi:.4f}] "
                f"(moved by {self.alpha - self.alpha_coarse:+.4f})")


def relocate_birth(params: ModelParams, semantic: Branch, alpha_c: float, *, nodes: int, solver: PointSolver,
                   end_xtol: float, max_steps: int) -> BirthRefinement:
    """The semantic branch's continuous birth near the coarse ``alpha_c``, located at split-rule order ``nodes``
    (module docstring)."""
    above = [p for p in semantic.valid() if p.alpha >= alpha_c + BIRTH_WINDOW - 1e-9]
    if not above:
        return BirthRefinement(nodes, alpha_c,
                               reason=f"no valid semantic curve point at or above α_c + {BIRTH_WINDOW}")
    top = float(above[0].alpha)
    bottom = max(BIRTH_STEP, alpha_c - BIRTH_DEPTH)
    alphas = [float(a) for a in np.arange(top, bottom - 1e-9, -BIRTH_STEP)]
    br = follow_branch(params, alphas, "semantic", nodes=nodes, init=above[0].solution, solver=solver,
                       min_step=end_xtol, max_steps=max_steps, stability_nodes=nodes)
    e = br.end
    if e is None or e.kind is not PointState.COLLAPSED:
        why = (f"followed down from {top:g} it has no end above {bottom:.4g}" if e is None else
               f"followed down from {top:g} it ends {e.kind.value} at {e.alpha:.4g}, not by θ → 0")
        return BirthRefinement(nodes, alpha_c, reason=why, solves=br.solves)
    lo, hi = sorted((float(e.alpha_valid), float(e.alpha_invalid)))
    return BirthRefinement(nodes, alpha_c, float(e.alpha), (lo, hi), solves=br.solves)
