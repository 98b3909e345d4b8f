"""One batch of the QMC engine iterated (MODEL.md §8): :class:`Job` holds what the points of a batch share and
runs their (point, scramble) rows through the stages of the QMC integrator's map
(:class:`.qmc_integrator.QMCIntegrator`, row by row: :meth:`~.qmc_integrator.QMCIntegrator.map_rows`) with the one
loop (:func:`fixed_point.iterate`);
:func:`collect` turns a point's rows into its :class:`.general_solution.GeneralSolution` (status from the
significance and collapse rules)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..model import ModelParams
from . import fixed_point
from .collapse import collapse_record, response_record, zero_q_record
from .general_solution import GeneralSolution
from .onset_hook import onset_hook
from .qmc_config import COARSE_RTOL, QMCConfig
from .qmc_integrator import QMCIntegrator
from .qmc_map import MAX_SAMPLES, padded_rows
from .restarts import restart_failed
from .scrambles import aligned_scrambles
from .significance import DEFINING, overlap_significance
from .state import Hats, OrderParams, block_residual, invariants, shapes, unflatten
from .status import Status, worst_of


SCALARS = ("q", "m", "theta", "V")


@dataclass(frozen=True)
class Job:
    """What the points of one :func:`solve_batch` call share: the model structure, the branch, the per-point
    knobs (α, ω, σ, λ as arrays over the batch) and the iteration settings."""

    params: ModelParams
    branch: str
    al: np.ndarray
    om: np.ndarray
    sg: np.ndarray
    lm: np.ndarray
    rtol: float
    max_steps: int
    damping: float
    anderson: int
    full_prox_every: int
    significance: float
    even: bool
    backtrack: int = 0
    jump_rtol: float = fixed_point.JUMP_RTOL
    auto_damping: bool = False
    m_proj: tuple | None = None
    m_fixed_by: tuple | None = None

    def point_params(self, i: int) -> ModelParams:
        """The model of the batch's point ``i`` (its ω, σ, λ)."""
        return self.params.replace(omega=float(self.om[i]), sigma=float(self.sg[i]), lam=float(self.lm[i]))

    def run(self, pts: np.ndarray, x0: np.ndarray, cfg: QMCConfig, stages: tuple[int, ...],
            hist: tuple | None = None, coarse_x: np.ndarray | None = None, damp: np.ndarray | None = None):
        """Iterate the points ``pts`` (indices into the batch) from ``x0`` (b, S, n), one row per (point,
        scramble), through the QMC stages ``stages`` of ``cfg``; ``hist``: Anderson secant pairs per row to start
        from; ``coarse_x`` (b·S, n): a previous resolution's states for the significance test's trend (the
        coarse stage's, if it runs); ``damp`` (b·S,): each row's damping to start from (default ``self.damping``;
        the safeguard's lowered damping carries over from stage to stage). Returns (solutions, final states
        (b, S, n), secant pairs per row)."""
        params, branch = self.params, self.branch
        L, r, rs, k, S = params.L, params.r, params.r_star, params.k, cfg.scrambles
        b = len(pts)
        n = x0.shape[-1]
        blocks = shapes(r, k, rs)
        integrator = QMCIntegrator(params, cfg, even=self.even, m_proj=self.m_proj)
        xi_all, y_all = integrator.points()
        maps = {w: integrator.compiled(branch, warm=w) for w in (False, True)}
        row_knobs = np.stack([np.repeat(v[pts], S) for v in (self.al, self.om, self.sg, self.lm)])   # (4, b·S)
        sig_flat = np.repeat(self.sg[pts], S)
        X = x0.reshape(b * S, n)
        used = np.zeros(b * S, int)
        full_calls = np.zeros(b * S, int)    # per row: evaluations whose prox was the global multi-start one
        damp = np.full(b * S, self.damping) if damp is None else np.asarray(damp, float)
        halvings = np.zeros(b * S, int)
        coarse_last = None                  # the coarse stage's last iterates, converged or not (free_verdict)
        for i_stage, N in enumerate(stages):
            xi, y = xi_all[:, :N], y_all[:, :N]
            h_cache = np.zeros((b * S, N, 2, L, r))     # each row's minimisers (best, runner-up) at its last call
            chunk = max(1, MAX_SAMPLES // N)            # rows per compiled call (memory: rows × N samples)

            def call(Xa, idx, warm, xi=xi, y=y, h_cache=h_cache, chunk=chunk):
                m = len(idx)
                R = padded_rows(m, b * S, chunk)
                pad = np.concatenate([idx, np.full(R - m, idx[-1])])
                Xp = np.concatenate([Xa, np.repeat(Xa[-1:], R - m, axis=0)])
                fx, ok, aux, h = integrator.map_rows(maps[warm], Xp, row_knobs[:, pad], pad % S, xi, y,
                                                     h_cache[pad] if warm else None, chunk)
                h_cache[idx] = np.asarray(h)[:m]
                cut = lambda v: np.asarray(v)[:m]  # noqa: E731
                return cut(fx), cut(ok), {key: cut(v) for key, v in aux.items()}

            def F(Xa, idx, full, chunk=chunk):
                """Full rows through the global prox, the others warm: two calls at most. Where the full call's
                padding (:func:`padded_rows`) has room for every active row, the warm rows ride along in it
                (the exact map instead of the warm one, at no extra cost: one call instead of two)."""
                if full.any() and padded_rows(int(full.sum()), b * S, chunk) >= len(idx):
                    full = np.ones_like(full)
                parts = [(np.nonzero(sel)[0], call(Xa[sel], idx[sel], warm))
                         for sel, warm in ((full, False), (~full, True)) if sel.any()]
                if len(parts) == 1:
                    fx, ok, aux = parts[0][1]
                else:
                    fx = np.empty_like(Xa)
                    ok = np.empty(len(idx), bool)
                    aux = {}
                    for pos, (f_, o_, a_) in parts:
                        fx[pos], ok[pos] = f_, o_
                        for key, v in a_.items():
                            aux.setdefault(key, np.empty((len(idx),) + v.shape[1:], v.dtype))[pos] = v
                # the rows that got the global prox, riding ones included (counted by iterate: Run.full_calls)
                return fx, ok, {**aux, fixed_point.FULL_TIER: full}

            final = i_stage == len(stages) - 1
            newton = onset_hook(self, pts, S, F, sig_flat) if r == 1 else None
            run = fixed_point.iterate(F, X, lambda X, Y: block_residual(X, Y, blocks, sig_flat),
                                      rtol=self.rtol if final else max(self.rtol, COARSE_RTOL),
                                      max_steps=self.max_steps, damping=damp, anderson=self.anderson,
                                      admissible=lambda v, i: admissible(v, r, k, rs, sig_flat[i]), history=hist,
                                      compact=True, full_every=self.full_prox_every, certify=final,
                                      backtrack=self.backtrack, groups=np.arange(b * S) // S,
                                      jump_rtol=self.jump_rtol, newton=newton)
            if final and self.backtrack:     # scrambles that failed restart from their point's converged ones
                run = restart_failed(run, F, lambda X, Y, rows: block_residual(X, Y, blocks, sig_flat[rows]),
                                      lambda v, i: admissible(v, r, k, rs, sig_flat[i]), S, params, self)
            used += run.iterations
            full_calls += run.full_calls
            damp, halvings = run.damping, halvings + run.halvings
            hist = run.history
            if not final:          # a coarse stage that failed leaves that point at its start
                conv = np.array([s is Status.CONVERGED for s in run.status])
                coarse_x = np.where(conv[:, None], run.x, np.nan)
                coarse_last = np.array(run.x, float)
                ok = np.array([s in (Status.CONVERGED, Status.MAX_STEPS) for s in run.status])
                X = np.where(ok[:, None] & np.all(np.isfinite(run.x), axis=1)[:, None], run.x, X)
        run.iterations = used
        run.full_calls = full_calls
        run.halvings = halvings
        sols = [replace(collect(self.point_params(i), float(self.al[i]), branch, run, slice(j * S, (j + 1) * S),
                                 cfg, self.full_prox_every, coarse_x, self.significance), even=self.even,
                        iteration=self.iteration_record(run, slice(j * S, (j + 1) * S), cfg),
                        coarse_scramble_x=None if coarse_last is None else coarse_last[j * S:(j + 1) * S])
                for j, i in enumerate(pts)]
        return sols, run.x.reshape(b, S, n), run.history

    def iteration_record(self, run: fixed_point.Run, sl: slice, cfg: QMCConfig) -> dict:
        """The provenance of the iteration of one point (rows ``sl``): damping asked and in use at the end
        (lowest over the scrambles; the safeguard may have halved it), halvings, Anderson depth, and the
        scrambles (by seed) whose own fixed point failed, with status and last residual (a point is converged
        only if every scramble is), the scrambles converged at a jump of their map (``jump_scrambles``, with the
        jump's residual; ``fixed_point.iterate(jump_rtol=…)``) and the iteration budget ``max_steps``."""
        failed = [{"seed": seed, "status": st.value, "residual": float(res)}
                  for seed, st, res in zip(cfg.seeds, run.status[sl], run.residual[sl]) if st is not Status.CONVERGED]
        restarted = getattr(run, "restarted", None)
        restarted = [] if restarted is None else [seed for seed, rs_ in zip(cfg.seeds, restarted[sl]) if rs_]
        at_jump = getattr(run, "at_jump", None)
        jumps = [] if at_jump is None else [{"seed": seed, "residual": float(res)} for seed, j, res in
                                            zip(cfg.seeds, at_jump[sl], run.residual[sl]) if j]
        return {"damping": self.damping, "damping_final": float(np.min(run.damping[sl])),
                "damping_scrambles": [float(v) for v in run.damping[sl]],
                "halvings": int(np.max(run.halvings[sl])), "backtrack": self.backtrack, "anderson": self.anderson,
                "failed_scrambles": failed, "restarted_scrambles": restarted,
                "jump_rtol": self.jump_rtol, "jump_scrambles": jumps, "max_steps": self.max_steps,
                "m_symmetry": None if self.m_fixed_by is None else
                {"exchanges": [list(pi) for pi in self.m_fixed_by], "projector": [list(v) for v in self.m_proj]}}


def admissible(v: np.ndarray, r: int, k: int, rs: int, sigma: float) -> bool:
    """May an Anderson step go to ``v``: q and V positive definite, and the token covariance
    ``[[q, θ], [θᵀ, ρ]]`` (ρ = σ² I) positive semi-definite, ``σ² I − θᵀ q⁻¹ θ ⪰ 0`` (MODEL.md §8; Cauchy–Schwarz,
    r = r* = 1: θ² ≤ σ² q). The prior side's output always satisfies it, and so does every damped step between
    two such states (the set is convex); an extrapolation need not: measured at r = 1, r* = 2, L = 2, α = 2
    (1024 × 4), two scrambles' Anderson steps reached θ²/q = 0.35, 0.63 > σ² = 0.25 and ended ``invalid_state``
    (the channel floors the residual covariance's square root and its output is meaningless there)."""
    x = unflatten(np.asarray(v), r, k, rs)
    q = np.asarray(x.q)
    if not (np.linalg.eigvalsh(q)[0] > 0 and np.linalg.eigvalsh(np.asarray(x.V))[0] > 0):
        return False
    th = np.asarray(x.theta)
    return bool(np.linalg.eigvalsh(sigma ** 2 * np.eye(rs) - th.T @ np.linalg.solve(q, th))[0] >= 0)


def collect(params, alpha, branch, run: fixed_point.Run, sl, cfg: QMCConfig, full_prox_every: int,
             coarse_x: np.ndarray | None, k_se: float) -> GeneralSolution:
    """One point's solution from its (point, scramble) rows ``sl`` of ``run``: the status (the worst row's; then
    the significance test, the collapse rules and q = 0 on a converged point; ACCEPTED_AT_JUMP where a row
    converged at a jump of its map), the scrambles aligned to one gauge, their mean and standard errors."""
    r, k, rs, S = params.r, params.k, params.r_star, cfg.scrambles
    status = worst_of(run.status[sl])
    xs, hs = aligned_scrambles(np.asarray(run.x[sl]), np.asarray(run.aux["hats"][sl]), r, k, rs)
    sig = None
    if status is Status.CONVERGED:
        xc = None if coarse_x is None else np.asarray(coarse_x[sl])
        sig = overlap_significance(branch, xs, xc if xc is not None and np.all(np.isfinite(xc)) else None,
                                   r, k, rs, k_se)
        if sig is not None and not sig["significant"]:
            status = Status.NOT_SIGNIFICANT     # collapsed where the artefact is the noise image of a stable 0
            rec = response_record(params, alpha, branch, np.asarray(run.x[sl], float), cfg)
            if rec is not None and rec["collapsed"]:
                status, sig = Status.COLLAPSED, {**rec, "significance": sig}
            elif rec is not None:           # why not collapsed, in the record and in the reason
                sig = {**sig, "collapse_test": rec, "reason": f"{sig['reason']}; {rec['reason']}"}
        zero = zero_q_record(params, branch, xs, alpha)
        if zero is not None and branch in DEFINING:      # the pinned branch fell onto the q = 0 point
            status, sig = Status.COLLAPSED, zero
        elif zero is not None and branch == "uninformative":   # converged, said to be q = 0
            sig = zero
    else:                       # a failure where the branch's overlap vanished: collapsed (collapse.py)
        sig = collapse_record(params, alpha, branch, xs)
        status = status if sig is None else Status.COLLAPSED
    per = {**invariants(unflatten(xs, r, k, rs)),
           **{f"{kk}_hat": v for kk, v in invariants(unflatten(hs, r, k, rs, Hats)).items() if kk in SCALARS},
           "eps_g": run.aux["eps_g"][sl], "e_t": run.aux["e_t"][sl]}
    mean = {kk: np.mean(v, axis=0) for kk, v in per.items()}
    err = {kk: np.std(v, axis=0, ddof=1) / math.sqrt(S) for kk, v in per.items() if np.ndim(v) == 1}
    x_mean = unflatten(xs.mean(axis=0), r, k, rs)
    h_mean = unflatten(hs.mean(axis=0), r, k, rs, Hats)
    last = None
    if status is not Status.CONVERGED and not (sig is not None and sig.get("zero_q")):
        last = OrderParams(*(np.asarray(b) for b in x_mean))
        nanify = lambda t: type(t)(*(np.full(np.shape(b), np.nan) for b in t))  # noqa: E731
        x_mean, h_mean = nanify(x_mean), nanify(h_mean)
        mean = {kk: np.full(np.shape(v), np.nan) for kk, v in mean.items()}
        err = {kk: np.full(np.shape(v), np.nan) for kk, v in err.items()}
    at_jump = getattr(run, "at_jump", None)
    if status is Status.CONVERGED and at_jump is not None and np.any(at_jump[sl]):
        status = Status.ACCEPTED_AT_JUMP     # a result, but some scramble's residual is the jump's (≤ JUMP_RTOL)
    return GeneralSolution(params, alpha, branch, status, int(np.max(run.iterations[sl])),
                           float(np.max(run.residual[sl])), OrderParams(*(np.asarray(b) for b in x_mean)),
                           Hats(*(np.asarray(b) for b in h_mean)), mean, err, "qmc", cfg,
                           float(np.max(run.aux["max_grad"][sl])), last, full_prox_every=full_prox_every,
                           full_prox_calls=int(np.max(run.full_calls[sl])), significance=sig,
                           scramble_x=np.array(run.x[sl], float))
