"""What the one fixed-point loop needs from an integrator (MODEL.md §6, §8; issue 29): the map
``state ↦ prior(channel(state))`` evaluated at a batch of states, its resolution, and a finer one.

Two integrators implement it: the split rule at L = 2, r = r* = 1 (:class:`.split_integrator.SplitIntegrator`,
deterministic, outer order ``nodes``) and randomized QMC for any L, r (:class:`.qmc_integrator.QMCIntegrator`,
``points × scrambles``, values with standard errors over scrambles). States go in and come out as
:class:`~.state.OrderParams`; :func:`theory.solve` and ``phase/`` see only that and :class:`~.solution.Solution`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ..model import ModelParams
from .state import Hats, OrderParams


@dataclass(frozen=True)
class MapValue:
    """The map at a batch of states: ``x`` the images (one :class:`OrderParams` per state; for QMC the mean
    over scrambles), ``hats`` the conjugates there, ``ok`` whether each evaluation is valid (False: the map
    failed there, e.g. D = λ + σ²V̂ ≤ 0 on the prior side; its image is NaN), ``errors``: per state, the
    standard error of each block of the image over scrambles (None for a deterministic rule)."""

    x: list[OrderParams]
    hats: list[Hats]
    ok: np.ndarray
    errors: list[OrderParams] | None = None


@runtime_checkable
class Integrator(Protocol):
    """An integration rule of the fixed-point map of ``params`` (the structure: L, r, r*, A, P; α and the
    branch are arguments of the evaluation)."""

    name: str
    params: ModelParams

    def evaluate(self, states: OrderParams | Sequence[OrderParams], alpha: float, branch: str = "free"
                 ) -> MapValue:
        """The map at ``states`` at sample complexity ``alpha``, the hats pinned to ``branch`` (``free``:
        none pinned, the full map)."""
        ...

    @property
    def resolution(self) -> dict[str, Any]:
        """The rule's size (``nodes`` for the split rule; ``points``, ``scrambles`` for QMC)."""
        ...

    def finer(self) -> "Integrator":
        """The same rule at the next finer resolution (for a resolution check or an error estimate)."""
        ...


def as_states(states: OrderParams | Sequence[OrderParams]) -> list[OrderParams]:
    """One state or a sequence of them as a list (blocks as float64 numpy arrays)."""
    one = isinstance(states, OrderParams)
    seq = [states] if one else list(states)
    return [OrderParams(*(np.asarray(b, float) for b in x)) for x in seq]
