"""Randomized quasi-Monte Carlo points for expectations over i.i.d. standard normals (MODEL.md §8).

Scrambled Sobol points (``scipy.stats.qmc``) mapped through the normal quantile. A solve uses the SAME points at
every iteration (the map is deterministic); independent scrambles (different seeds) give independent unbiased
estimates, whose spread is the integration error bar.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc

from ..errors import ParameterError, check_int

DEFAULT_POINTS = 4096
"""Sobol points per scramble (a power of two)."""
DEFAULT_COARSE = 1024
"""Points per scramble of the engine's coarse stage (see ``engine.QMCConfig``)."""
DEFAULT_SCRAMBLES = 4
"""Independent scrambles: the reported value is their mean, the error bar their standard error."""


def normal_points(dim: int, n: int, seed: int) -> np.ndarray:
    """``n`` scrambled Sobol points in ``R^dim`` mapped to ``N(0, I_dim)`` (float64, shape (n, dim))."""
    dim = check_int("dim", dim, 1)
    n = check_int("qmc_points", n, 2)
    if n & (n - 1):
        raise ParameterError("qmc_points", "a power of two >= 2 (Sobol balance)", n)
    u = qmc.Sobol(d=dim, scramble=True, seed=np.random.default_rng(seed)).random(n)
    # a scrambled point never sits exactly on 0 or 1; clip anyway so that the quantile stays finite
    return ndtri(np.clip(u, 1e-300, 1.0 - 2.0 ** -53))


def scrambles(dim: int, n: int, seeds) -> np.ndarray:
    """One point set per seed: shape (len(seeds), n, dim)."""
    return np.stack([normal_points(dim, n, int(s)) for s in seeds])
