"""Asymptotic theory (MODEL.md §6) for L = 2, r = 1: fixed points of the replica equations."""

from .observables import eps_lin
from .quadrature import ProductRule
from .solution import Solution
from .solve import choose, point_solver, solve
from .integrator import Integrator, MapValue
from .solver import BRANCHES, DEFAULT_NODES, curve_table, make_rule, solve_point
from .switching import SplitRule

__all__ = ["solve", "choose", "point_solver", "Solution", "solve_point", "curve_table", "eps_lin", "BRANCHES",
           "DEFAULT_NODES", "make_rule", "SplitRule", "ProductRule", "Integrator", "MapValue"]
