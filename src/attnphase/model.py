"""The model's parameters (MODEL.md §1–§2): :class:`ModelParams`, validated, without JAX.

The teacher and the student as JAX functions of these parameters live in :mod:`attnphase.attention`; this
module stays free of JAX so that every command can validate its input (and refuse it) before JAX loads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .errors import ParameterError, check_range
from .guards import MAX_K, MAX_LAM, MAX_SIGMA, check_model_size

PAPER_A = ((0.6, 0.4), (0.4, 0.6))
ALTERNATIVE_A = ((0.3, 0.7), (0.8, 0.2))


def _as_matrix(name: str, value: Any, shape: tuple[int, int] | None = None) -> tuple[tuple[float, ...], ...]:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(name, "a numeric matrix", value) from None
    if arr.ndim != 2 or (shape is not None and arr.shape != shape):
        want = f"{shape[0]}x{shape[1]}" if shape else "2-D"
        raise ParameterError(name, f"a {want} matrix", f"shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(name, "a matrix of finite entries", arr.tolist())
    return tuple(tuple(float(v) for v in row) for row in arr)


def default_P(L: int) -> tuple[tuple[float, ...], ...]:
    """Positional-encoding coefficients (MODEL.md §2): the paper's ``P = (1, -1)ᵀ`` for L = 2, else ``I_L``."""
    if L == 2:
        return ((1.0,), (-1.0,))
    return tuple(tuple(1.0 if i == j else 0.0 for j in range(L)) for i in range(L))


@dataclass(frozen=True)
class ModelParams:
    """Parameters of the teacher and the student that do not depend on the dimension d (MODEL.md §1–§2).

    L: sequence length (>= 2).  r: student rank (>= 1).  r_star: teacher rank (>= 1).
    sigma: token standard deviation (> 0).  lam: ridge strength lambda (>= 0).
    omega: weight of the positional part of the teacher, in [0, 1].
    A: the teacher's fixed positional attention, L x L, non-negative, rows summing to 1.
    P: L x k coefficients of the positional encodings ``p_l = sum_j P_lj u_j`` (default: ``default_P(L)``).
    """

    L: int = 2
    r: int = 1
    r_star: int = 1
    sigma: float = 0.5
    lam: float = 0.01
    omega: float = 0.3
    A: tuple[tuple[float, ...], ...] = PAPER_A
    P: tuple[tuple[float, ...], ...] | None = field(default=None)

    def __post_init__(self) -> None:
        L, r, r_star = check_model_size(self.L, self.r, self.r_star)     # before any L x L array is made
        object.__setattr__(self, "L", L)
        object.__setattr__(self, "r", r)
        object.__setattr__(self, "r_star", r_star)
        object.__setattr__(self, "sigma", check_range("sigma", self.sigma, lo=0.0, hi=MAX_SIGMA, lo_open=True))
        object.__setattr__(self, "lam", check_range("lam", self.lam, lo=0.0, hi=MAX_LAM))
        object.__setattr__(self, "omega", check_range("omega", self.omega, lo=0.0, hi=1.0))
        A = _as_matrix("A", self.A, (L, L))
        arr = np.asarray(A)
        if np.any(arr < 0) or not np.allclose(arr.sum(axis=1), 1.0, atol=1e-9):
            raise ParameterError("A", "a non-negative row-stochastic matrix (rows sum to 1)", arr.tolist())
        object.__setattr__(self, "A", A)
        P = default_P(L) if self.P is None else self.P
        P = _as_matrix("P", P)
        if len(P) != L:
            raise ParameterError("P", f"an L x k matrix with L = {L} rows (one per position)", f"{len(P)} row(s)")
        if len(P[0]) > MAX_K:
            raise ParameterError("P", f"an L x k matrix with k <= {MAX_K} columns", f"{len(P[0])} columns")
        object.__setattr__(self, "P", P)

    @property
    def k(self) -> int:
        """Number of positional directions ``u_j``."""
        return len(self.P[0])

    @property
    def A_array(self) -> np.ndarray:
        return np.asarray(self.A, dtype=float)

    @property
    def P_array(self) -> np.ndarray:
        return np.asarray(self.P, dtype=float)

    def replace(self, **changes: Any) -> "ModelParams":
        return ModelParams(**{**asdict(self), **changes})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["A"] = [list(row) for row in self.A]
        d["P"] = [list(row) for row in self.P]
        return d
