"""The positional/semantic transition and the (α, ω) phase diagram (MODEL.md §5, §6 "Branches",
"Transition", §7).

Modules: :mod:`.roots` (root finding on functions and tables), :mod:`.continuation` (the one engine that
follows a branch on its state and locates and names its ends, for every integrator), :mod:`.stability`
(table spinodals, the survey of fixed points, mixed fixed points), :mod:`.global_min` (which fixed point is
lowest, where that changes), :mod:`.crossing` (growth factors crossing +1), :mod:`.refine` (Brent on
warm-started solves), :mod:`.scale_refine` (the split rule's finer order near the lines), :mod:`.uncertainty`
(α_c, α_l errors from the integration error), :mod:`.result`, :mod:`.transition` (α_c, α_l: orchestration),
:mod:`.diagram` (the (α, ω) grid). They solve through :func:`attnphase.theory.solve.point_solver`.
"""

from .continuation import (END_REASONS, Branch, BranchEnd, BranchPoint, PointSolver, PointState, branch_table,
                           follow_branch, point_state)
from .diagram import phase_diagram
from .roots import Unrefinable, find_root, local_root, table_root
from .stability import mixed_at, mixed_search, spinodal
from .global_min import alpha_l_from_table, global_table, transition_from_tables
from .result import TransitionResult
from .transition import ALPHA_MAX, ALPHA_MIN, DEFAULT_ALPHAS, DIAGRAM_NODES, transition

__all__ = ["END_REASONS", "Branch", "BranchEnd", "BranchPoint", "PointSolver", "PointState", "branch_table",
           "follow_branch", "point_state", "phase_diagram", "Unrefinable", "find_root", "local_root", "table_root",
           "mixed_at", "mixed_search", "spinodal", "ALPHA_MAX", "ALPHA_MIN", "DEFAULT_ALPHAS", "DIAGRAM_NODES",
           "TransitionResult", "alpha_l_from_table", "global_table", "transition", "transition_from_tables"]
