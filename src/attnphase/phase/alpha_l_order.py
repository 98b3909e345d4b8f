"""The order α_l is located at, and what its error says about it (MODEL.md §6 "Transition", §5).

α_l is refined by Brent at the split rule's ``nodes`` (8). Where that fails, :func:`~.transition.transition` tries
again on the semantic branch, at ``nodes`` first and at the curves' order (4) only where the ``nodes`` solves fail
too (:func:`fallback_notes` words the outcome). The first refinement can fail for another reason than the solves:
it works on the branch the *table* says is global just above the table's α_c — at σ = 0.7, ω = 0.3 (α_c a
continuous birth against the uninformative point) that is the collapsed positional branch, whose ε_g never meets
ε_lin, so the fallback at the curves' order alone reported α_l = 0.7567 (nodes = 4) where the nodes = 8 solves on
the semantic branch converge and give 0.7765 (docs/notes/2026-12-06-alpha-l-resolution.md).

A value located at an order coarser than ``nodes`` carries that order's shift, which the split rule's error model
(quadrature ~1e-5 per point) does not hold: :func:`alpha_l_error` says so in ``alpha_l_err_reason``."""

from __future__ import annotations

COARSE_SHIFT = ("σ = 0.7, ω = 0.3: 0.7567 at nodes = 4 against 0.7765 at nodes = 8, "
                "docs/notes/2026-12-06-alpha-l-resolution.md")
"""The measured shift of α_l between the curves' order and the refinement's, quoted where α_l stays coarse."""


def fallback_notes(at: int | None, nodes: int, more: list[str], at_alpha_c: bool = False) -> list[str]:
    """The notes of the second α_l refinement on the semantic branch (tried at ``nodes``, then the curves' order),
    which returned the order ``at`` (None: the table value kept; ``more``: its own notes then). ``at_alpha_c``: it
    returned α_c itself (ε_g already below ε_lin there): α_l is then α_c's value, reported at α_c's order, and
    the note says which order's solves decided it (σ = 1.0, ω = 0.3: nodes = 4; ``alpha_l_nodes`` 8, α_c's)."""
    if at is None:
        return list(more)
    if at_alpha_c:
        return [f"α_l = α_c: the semantic ε_g is below ε_lin at α_c already on the nodes = {at} solves"
                + ("" if at == nodes else f" (the nodes = {nodes} solves failed near it)")
                + "; α_l takes α_c's value and order"]
    if at == nodes:
        return [f"α_l refined on the semantic branch at nodes = {nodes} (the first refinement, on the branch the "
                "table says is global above its α_c, found no crossing)"]
    return [f"α_l refined at nodes = {at} (the nodes = {nodes} solves failed near it)"]


def alpha_l_error(alpha_l: float | None, l_nodes: int | None, nodes: int, split_rule: bool,
                  err: float | None, reason: str) -> tuple[float | None, str]:
    """``alpha_l_err`` and its reason: unchanged where α_l is located at ``nodes`` or finer, or without the split
    rule's two orders (QMC: one resolution); where the split rule located it at a coarser order, no error (the
    order's shift is not estimated: :data:`COARSE_SHIFT`) and a reason that says so."""
    if alpha_l is None or l_nodes is None or not split_rule or l_nodes >= nodes:
        return err, reason
    return None, (f"α_l located at nodes = {l_nodes}, coarser than nodes = {nodes} (the finer solves failed "
                  f"near it): its error is that order's shift, not estimated ({COARSE_SHIFT})")
