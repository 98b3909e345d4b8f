"""Outcome of a fixed-point solve (issue 11): an enum, never free text."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Why a solve stopped. Only ``CONVERGED`` is a result; every other status is reported as such."""

    CONVERGED = "converged"
    MAX_STEPS = "max_steps"            # the residual of the undamped map stayed above rtol
    DIVERGED = "diverged"              # non-finite map value
    INVALID_STATE = "invalid_state"    # q or V left the positive-definite cone, or D = λ + σ²V̂ not positive
    NOT_SIGNIFICANT = "not_significant"  # converged, but the pinned branch's defining overlap (m, resp. θ) is
    #                                      not significantly non-zero: the "fixed point" is an integration
    #                                      artefact, the scrambles do not agree that it vanished
    #                                      (engine.overlap_significance)
    COLLAPSED = "collapsed"            # the pinned branch's defining overlap vanished: the solve failed
    #                                    (invalid_state, max_steps, diverged) while it fell to ~0
    #                                    (collapse.collapse_record), or it converged not significant where a
    #                                    zero overlap is stable and every scramble's overlap is the linear
    #                                    response of that 0 to its QMC noise (collapse.response_record) — the
    #                                    iteration fell onto the uninformative point;
    #                                    or it converged onto the q = 0 point (the student Q = 0;
    #                                    engine.zero_q_record: values kept, as the split rule's ``collapsed``
    #                                    state at q = 0)
    ON_PINNED = "on_pinned"            # free branch: the iteration sits on a pinned branch's fixed point (converged
    #                                    there and stable against the pinned direction); its pinned overlap is an
    #                                    integration artefact of the QMC points (free_verdict.decide)

    @property
    def ok(self) -> bool:
        return self is Status.CONVERGED
