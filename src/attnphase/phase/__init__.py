"""The positional/semantic transition and the (α, ω) phase diagram (MODEL.md §5, §6 "Branches",
"Transition", §7).

Modules: :mod:`.roots` (root finding on functions and tables), :mod:`.continuation` (the one engine that
follows a pinned branch and locates and names its ends), :mod:`.stability` (table spinodals, mixed fixed
points), :mod:`.transition` (α_c, α_l with an α range that follows the physics), :mod:`.diagram` (the (α, ω)
grid). The theory solver is imported lazily, so the table-level helpers work without it.
"""

from .continuation import (END_REASONS, Branch, BranchEnd, BranchPoint, PointSolver, PointState, branch_table,
                           follow_branch, point_state)
from .diagram import phase_diagram
from .roots import Unrefinable, find_root, local_root, table_root
from .stability import mixed_at, mixed_search, spinodal
from .transition import (ALPHA_MAX, ALPHA_MIN, DEFAULT_ALPHAS, DIAGRAM_NODES, TransitionResult,
                         alpha_l_from_table, global_table, transition, transition_from_tables)

__all__ = ["END_REASONS", "Branch", "BranchEnd", "BranchPoint", "PointSolver", "PointState", "branch_table",
           "follow_branch", "point_state", "phase_diagram", "Unrefinable", "find_root", "local_root", "table_root",
           "mixed_at", "mixed_search", "spinodal", "ALPHA_MAX", "ALPHA_MIN", "DEFAULT_ALPHAS", "DIAGRAM_NODES",
           "TransitionResult", "alpha_l_from_table", "global_table", "transition", "transition_from_tables"]
