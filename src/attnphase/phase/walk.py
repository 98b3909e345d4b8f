"""The walk past a branch's ``ended`` end: is it a turning point, or a failure of the iteration? (MODEL.md §6
"Transition", §8.) A policy of :func:`~.continuation.follow_branch` (``walk_past``, the step rules of
:class:`attnphase.theory.stepping.WalkPast`), run with ``follow_branch``'s own solve — its stall cure included.

A pinned branch ``ended`` (:class:`~.branch.PointState`) where no solve converged however small the step: read
as a fold, below which the branch does not exist. On QMC points the damped iteration can fail at isolated α's
of a branch that exists on both sides of them. Measured at L = 3, A = 0.4 I + 0.2 J, P = I, σ = 0.5, λ = 0.01,
ω = 0.4 (256 × 4 points, bench/investigations/l3_omega04_branch_down.py): the semantic branch followed down
ends at 0.725 (``max_steps`` at 0.7 and 0.65 from the point at 0.75), yet the solve from that same point
converges at 0.6 (44 steps), and from there at 0.5, 0.45, 0.35, 0.3 (θ = 0.099 … 0.034, growth factors against
m 0.35 … 0.81), failing again at 0.55 and 0.4: the only stable fixed point on [0.25, 0.7], where the
uninformative point is a saddle, was lost (docs/guides/transitions-any-model.md, "L = 3").

:func:`walk_past` walks on past an ``ended`` end at the policy's α's (:meth:`~attnphase.theory.stepping.WalkPast.
targets`), each α solved from the last valid point, then the one before, skipping up to ``misses`` − 1 failures
in a row. A valid point past the end makes the fold false: the branch gets the walk's points and a new end
(where the walk met a collapse, a saddle, a divergence or ``misses`` failures in a row; none if it reached the
last requested α). No valid point: the fold stands (a turning point as far as the walk tells). The record of
one walk is :class:`FoldCheck` (``fold_checks`` of a transition's provenance)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..theory.stepping import WalkPast
from .branch import END_REASONS, Branch, BranchEnd, BranchPoint, PointState, point_state, unsolved_point


@dataclass(frozen=True)
class FoldCheck:
    """The walk past the ``ended`` end of one branch (:func:`walk_past`): ``fold`` the end's estimate, ``real``
    (no valid point past it), the α's with a valid point (``solved``) and where the solve failed (``failed``),
    and the branch's new end (``end``, None: valid to its last requested α); ``stopped``: the state that stopped
    the walk and where (None: it reached the last requested α); ``step`` the walk's spacing in α."""

    branch: str
    fold: float
    real: bool
    solved: tuple[float, ...]
    failed: tuple[float, ...]
    end: BranchEnd | None
    stopped: tuple[str, float] | None = None
    step: float = WalkPast.step

    @property
    def note(self) -> str:
        fails = ", ".join(f"{a:g}" for a in self.failed) or "none"
        if self.real:
            met = "" if self.stopped is None else f"; the walk stopped at {self.stopped[1]:g}, {self.stopped[0]}"
            return (f"the {self.branch} branch's end at {self.fold:.4g} kept: no valid point past it in steps of "
                    f"{self.step:g} (failed at {fails}{met})")
        span = f"{min(self.solved):g}–{max(self.solved):g}"
        end = ("valid to the last α" if self.end is None else
               f"now ends at {self.end.alpha:.4g} ({self.end.kind.value}: {self.end.reason})")
        return (f"the {self.branch} branch's end at {self.fold:.4g} is no fold: valid points past it at "
                f"α = {span} ({len(self.solved)} α's; the iteration failed at {fails}); it {end}")

    def to_dict(self) -> dict:
        return dict(branch=self.branch, fold=self.fold, real=self.real, solved=list(self.solved),
                    failed=list(self.failed), end=None if self.end is None else self.end.to_dict(),
                    stopped=None if self.stopped is None else list(self.stopped))


def walk_past(run: Callable[..., BranchPoint], out: Branch, history: Sequence, policy: WalkPast,
              nodes: int | None) -> FoldCheck | None:
    """Walk past ``out``'s ``ended`` end (module docstring) with ``follow_branch``'s solve ``run(α, start,
    max_steps=…)``; ``history``: valid points known before the branch's requested α's. On a valid point past
    the end, update ``out`` (its points at the requested α's, its extra points, its end). None when the branch
    has no ``ended`` end or no requested α past it."""
    end = out.end
    if end is None or end.kind is not PointState.ENDED:
        return None
    sign = 1.0 if end.alpha_invalid > end.alpha_valid else -1.0
    requested = [float(p.alpha) for p in out.points if sign * (p.alpha - end.alpha_valid) > 1e-9]
    valid = sorted((p for p in list(history) + out.points + out.extra
                    if point_state(p).valid and sign * (p.alpha - end.alpha_valid) <= 1e-9),
                   key=lambda p: sign * p.alpha)
    if not requested or not valid:
        return None
    results: dict[float, BranchPoint] = {}
    misses, stop = 0, None
    for a in policy.targets(end.alpha_valid, end.alpha_invalid, requested):
        for start in valid[:-3:-1]:        # the last valid point, then the one before
            p = run(a, start, max_steps=policy.max_steps)
            if p.state is not PointState.NOT_CONVERGED:
                break
        results[a] = p
        if p.state.valid:
            valid.append(p)
            misses = 0
            continue
        misses += p.state is PointState.NOT_CONVERGED
        if p.state is not PointState.NOT_CONVERGED or misses >= policy.misses:
            stop = p
            break
    solved = tuple(a for a, p in results.items() if p.state.valid)
    failed = tuple(a for a, p in results.items() if p.state is PointState.NOT_CONVERGED)
    where = None if stop is None else (stop.state.value, float(stop.alpha))
    if not solved:
        return FoldCheck(out.branch, float(end.alpha), True, (), failed, end, where, policy.step)
    last = valid[-1]
    new_end = None
    if stop is not None:
        kind = PointState.ENDED if stop.state is PointState.NOT_CONVERGED else stop.state
        new_end = BranchEnd(0.5 * (float(last.alpha) + float(stop.alpha)), kind, float(last.alpha),
                            float(stop.alpha))
    _rebuild(out, results, new_end, nodes)
    return FoldCheck(out.branch, float(end.alpha), False, solved, failed, new_end, where, policy.step)


def _rebuild(out: Branch, results: dict[float, BranchPoint], end: BranchEnd | None, nodes: int | None) -> None:
    """Put the walk's ``results`` on ``out``: at its requested α's (those past the new ``end`` unsolved, with
    its reason), the rest as extra points; the branch's end becomes ``end``."""
    sign = 0.0 if end is None else (1.0 if end.alpha_invalid > end.alpha_valid else -1.0)
    used = set()
    for i, p in enumerate(out.points):
        a = round(float(p.alpha), 9)
        if end is not None and sign * (a - end.alpha_invalid) > 1e-9:
            out.points[i] = unsolved_point(out.params, a, out.branch, nodes, end.kind,
                                           f"beyond the branch's end near α={end.alpha:.4g}: "
                                           f"{END_REASONS[end.kind]}")
        elif a in results:
            out.points[i] = results[a]
            used.add(a)
    out.extra.extend(p for a, p in results.items() if a not in used)
    out.end = end
