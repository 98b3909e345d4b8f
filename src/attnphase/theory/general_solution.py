"""One point of the QMC engine (MODEL.md §8): :class:`GeneralSolution`, the mean over scrambles with standard
errors, its status and provenance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import __version__
from ..model import ModelParams
from . import prox_general as PG
from .qmc_config import COARSE_RTOL, QMCConfig
from .state import Hats, OrderParams
from .status import Status


@dataclass(frozen=True)
class GeneralSolution:
    """One point: mean over scrambles and standard errors (``*_err``). Values are NaN unless ``status`` is
    a result (``status.ok``: CONVERGED, or ACCEPTED_AT_JUMP where a scramble stopped at a jump of its map
    within ``fixed_point.JUMP_RTOL``; an unconverged point is reported, never a result), or COLLAPSED onto the q = 0 point
    (``significance["zero_q"]``, :func:`zero_q_record`: a fixed point, its values kept); ``last`` keeps the last
    iterate otherwise.
    ``significance``: the test of the pinned branch's defining overlap (:func:`overlap_significance`; None
    where it does not apply); a point that fails it has status ``NOT_SIGNIFICANT``. ``resolution``: the error
    control's record (target, the QMC sizes tried with their worst relative standard error, ``met``,
    ``capped``; None for a fixed size, :func:`refine`). ``iteration``: damping asked and in use at the end
    (the safeguard of ``fixed_point.iterate`` may lower it), its halvings, the Anderson depth.
    ``stability``: the growth factor of the pinned direction (:func:`stability_general.pinned_growth`: growth,
    growth_err, stable True/False/None, verdict, reason, …); None on the free branch or when not asked for.
    ``scramble_x``: the per-scramble converged states (S, n), flattened, each in its own map's gauge (not
    aligned: the state the scramble's map was iterated to; not in the JSON); ``coarse_scramble_x``: the same at the
    end of the coarse stage (its last iterates, converged or not; None without a coarse stage).
    ``verdict``: the free branch's verdict (:mod:`.free_verdict`: is the iteration on a pinned point?); None
    where it does not apply."""

    params: ModelParams
    alpha: float
    branch: str
    status: Status
    iterations: int
    residual: float
    x: OrderParams
    hats: Hats
    values: dict
    errors: dict
    integrator: str = "qmc"
    qmc: QMCConfig = field(default_factory=QMCConfig)
    max_grad: float = float("nan")
    last: OrderParams | None = None
    full_prox_every: int = 1
    full_prox_calls: int = 0
    iteration: dict | None = None
    significance: dict | None = None
    even: bool = False
    resolution: dict | None = None
    stability: dict | None = None
    scramble_x: np.ndarray | None = field(default=None, repr=False)
    coarse_scramble_x: np.ndarray | None = field(default=None, repr=False)
    verdict: dict | None = None
    version: str = __version__

    @property
    def converged(self) -> bool:
        return self.status.ok

    def __getattr__(self, name: str):
        v = self.__dict__.get("values")
        if v is not None and name in v:
            return v[name]
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the scalar keys (q = tr q, m = ‖M‖_F, theta = ‖θ‖_F, V = tr V, eps_g, e_t, …), the
        full matrices, ``*_err`` and provenance."""
        d: dict[str, Any] = {"alpha": self.alpha, "branch": self.branch, "omega": self.params.omega}
        d.update({k: float(v) for k, v in self.values.items() if np.ndim(v) == 0})
        d.update({f"{k}_err": float(v) for k, v in self.errors.items() if np.ndim(v) == 0})
        d.update(converged=self.converged, status=self.status.value, iterations=self.iterations,
                 residual=self.residual, max_grad=self.max_grad, start=(self.iteration or {}).get("start"))
        st = self.stability          # the split rule's scalar keys (stability = growth factor, stable), + error
        d.update(stability=None if st is None else st["growth"], stability_err=None if st is None else st["growth_err"],
                 stable=None if st is None else st["stable"])
        d["matrices"] = {**{k: np.asarray(v).tolist() for k, v in self.x._asdict().items()},
                         **{k: np.asarray(v).tolist() for k, v in self.hats._asdict().items()},
                         "q_eig": np.asarray(self.values["q_eig"]).tolist(),
                         "theta_sv": np.asarray(self.values["theta_sv"]).tolist()}
        d["provenance"] = {"params": self.params.to_dict(), "integrator": self.integrator,
                           "qmc_points": self.qmc.points, "scrambles": self.qmc.scrambles,
                           "seeds": list(self.qmc.seeds),
                           "coarse_points": self.qmc.stages[0] if len(self.qmc.stages) > 1 else 0,
                           "coarse_rtol": COARSE_RTOL, "version": self.version,
                           "newton": {"scout": PG.SCOUT_STEPS, "polish": PG.POLISH_STEPS,
                                      "random_starts": PG.RANDOM_STARTS, "gtol": PG.GTOL,
                                      "derivatives": "closed form, unrolled (prox_general.moreau_terms)",
                                      "full_prox_every": self.full_prox_every,
                                      "full_prox_calls": self.full_prox_calls,
                                      "certified_by": "global multi-start prox"},
                           "iteration": self.iteration,
                           "significance": None if self.significance is None else dict(self.significance),
                           "ansatz": "even in the signal-free directions (engine.even_hats)" if self.even else None,
                           "resolution": self.resolution,
                           "stability": None if self.stability is None else dict(self.stability),
                           "free_verdict": self.verdict}
        return d
