"""Quadrature rules for expectations over i.i.d. standard normals (float64, numpy).

``gauss_hermite(k, dim)`` is the tensor (product) Gauss–Hermite rule of order ``k`` per dimension for
``N(0, I_dim)``: exact for polynomials of degree <= 2k-1 in each variable. Nodes have shape ``(k**dim, dim)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import check_int


@lru_cache(maxsize=64)
def _gh1(k: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(k)  # weight exp(-x^2/2)
    w = w / np.sqrt(2.0 * np.pi)
    return x.astype(np.float64), w.astype(np.float64)


@lru_cache(maxsize=32)
def _gh_cached(k: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = _gh1(k)
    grids = np.meshgrid(*([x] * dim), indexing="ij")
    wgrids = np.meshgrid(*([w] * dim), indexing="ij")
    nodes = np.stack([g.ravel() for g in grids], axis=1)
    weights = np.prod(np.stack([g.ravel() for g in wgrids], axis=1), axis=1)
    nodes.setflags(write=False)
    weights.setflags(write=False)
    return nodes, weights


def gauss_hermite(k: int, dim: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Product Gauss–Hermite rule for ``N(0, I_dim)``: ``(nodes (k**dim, dim), weights (k**dim,))``."""
    k = check_int("nodes", k, 1)
    dim = check_int("dim", dim, 1)
    return _gh_cached(k, dim)


@dataclass(frozen=True)
class ProductRule:
    """The plain product Gauss–Hermite rule of order ``nodes`` per dimension over (ξ1, ξ2, y1, y2).

    Exact for smooth integrands of low degree; for the discontinuous channel integrands it converges
    slowly (MODEL.md §7) — kept for comparison and for smooth expectations such as ε_g.
    """

    nodes: int = 8

    def __post_init__(self) -> None:
        check_int("nodes", self.nodes, 1)

    def rule(self) -> tuple[np.ndarray, np.ndarray]:
        return gauss_hermite(self.nodes, 4)
