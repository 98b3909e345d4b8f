"""A stand-in solver's point for the tests of ``phase/`` (L = 2, r = 1): the scalars of a split-rule fixed point
as a plain dataclass, so that a stand-in can ``dataclasses.replace`` any of them (``m``, ``converged``,
``stability`` …). ``phase/`` reads any solution-like object (``theory.solution.state_of``: ``.x`` or the
scalars q, m, V, θ); the theory's own solves return ``theory.Solution``. Synthetic inputs, never results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnphase.model import ModelParams


@dataclass(frozen=True)
class ScalarStandInPoint:
    alpha: float
    branch: str
    params: ModelParams
    q: float
    m: float
    V: float
    theta: float
    q_hat: float
    m_hat: float
    V_hat: float
    theta_hat: float
    eps_g: float
    e_t: float
    converged: bool
    iterations: int
    residual: float
    status: str
    stability: float | None
    stable: bool | None
    nodes: int
    rule: str = "split"
    fast_map: bool = False
    stability_nodes: int | None = None
    start: str = "given or model"

    @property
    def note(self) -> str:
        return self.status

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "params"}
