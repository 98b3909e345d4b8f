"""Rank 2 at σ = 0.7: does the mixed (free) fixed point exist? (issue 11, item 4; helper hD)

L = 2, r = 2, r* = 1, ω = 0.3, σ = 0.7, λ = 0.01, default A, P. Each part cached as JSON in
``docs/data/r2_sigma07/``:

    python bench/investigations/bench_r2_sigma07.py fd --alpha 1 --d 1000 --instances 8      # finite d (L-BFGS, float32)
    python bench/investigations/bench_r2_sigma07.py fdpin --alpha 1 --d 1000 --instances 8   # the same, with M = 0 imposed
    python bench/investigations/bench_r2_sigma07.py theory --alpha 1 --points 1024            # the engine from informed starts
    python bench/investigations/bench_r2_sigma07.py roots --alpha 1 --points 1024 --scrambles 2   # root finding, one scramble's map
    python bench/investigations/bench_r2_sigma07.py et --alpha 2 --points 4096                # paired e_t per scramble
    python bench/investigations/bench_r2_sigma07.py table                                     # tables from the cache

``fd``: per instance (the keys of ``attnphase.simulate``, ``fold_in(key(seed), i)``) the student trained as
``simulate --optimizer lbfgs`` trains it (:func:`attnphase.simulate.instance`, :func:`~attnphase.simulate.train`),
for the inits semantic, positional, random; reported: m, θ, q, e_t (:func:`~attnphase.simulate.observables`),
the exact ε_g (:func:`attnphase.finite_d_error.exact_errors`) and the overlap MATRICES q (r×r), M (r×k),
θ (r×r*) in the theory's normalisation (MODEL.md §8), so that the theory can start from them.

``fdpin``: the finite-d analogue of the pinned semantic branch on the same instances: L-BFGS (semantic init,
the same settings) on ``R(P⊥Q)`` with ``P⊥ = I − uᵀu`` (the student cannot see the positional direction),
reported at ``P⊥Q`` (M = 0 exactly); with the free semantic-init end point of ``fd`` on the same instance, the
paired difference Δe_t = e_t(free) − e_t(M = 0) says which state is lower at this d.

``theory``: ``engine.solve_batch(..., "free", init=…)`` from (i) each init's finite-d cluster mean (matrices
put into one gauge, :func:`attnphase.theory.state.canonical_frame`; V from the model start,
:func:`attnphase.theory.starts.model_start`), (ii) the default start; plus the pinned semantic and
positional branches from their default starts; at a fixed QMC size (``--points`` × 4, coarse stage off); at
4096 points only from the starts that converged at 1024 and from those converged 1024-point points.

``et``: e_t = −Φ of every scramble's final state of the ``theory`` run on that scramble's free map
(:func:`scramble_e_t`): fixed points compared on the same QMC points.

``roots``: a root finder also finds fixed points that the damped iteration cannot reach (repelling ones):
``scipy.optimize.root`` (hybr) on z − G(z) for the FREE map G of one scramble (global prox at every evaluation),
in a gauge regular at M = 0 (θ = (θ₀, 0), M = (M₀, M₁) free; reduced coordinates
z = (q₀₀, q₀₁, q₁₁, M₀, M₁, θ₀, V₀₀, V₀₁, V₁₁)), from the finite-d state (the semantic-init cluster mean with
the theory's V) and from the pinned semantic point with M = (0, c) added; the Jacobian's eigenvalues at
each root (central differences) and e_t there."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.baseline import fit_linear  # noqa: E402
from attnphase.finite_d_error import exact_errors, qmc_normals, subspace_dim  # noqa: E402
from attnphase.model import ModelParams  # noqa: E402
from attnphase.simulate import TrainConfig, instance, observables, train  # noqa: E402
from attnphase.theory.engine import QMCConfig, solve_batch  # noqa: E402
from attnphase.theory.finite_size import coefficients  # noqa: E402
from attnphase.theory.starts import model_start  # noqa: E402
from attnphase.theory.state import OrderParams, canonical_frame, invariants, unflatten  # noqa: E402
from bench_free_r2_roots import make_map, rotate_onto_first  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "r2_sigma07"
PARAMS = dict(L=2, r=2, r_star=1, omega=0.3, sigma=0.7, lam=0.01)
INITS = ("semantic", "positional", "random")


def params() -> ModelParams:
    return ModelParams(**PARAMS)


def fd_file(init: str, alpha: float, d: int, n: int) -> Path:
    return OUT / f"fd_{init}_a{alpha:g}_d{d}_n{n}.json"


def matrices(Q, inst, p: ModelParams) -> dict:
    """q = σ² QᵀQ/d (r×r), M = Qᵀu/√d (r×k), θ = σ² QᵀQ*/d (r×r*): the theory's overlaps (MODEL.md §8)."""
    Q, Qs, u = (np.asarray(a, float) for a in (Q, inst.Q_star, inst.u))
    d, s2 = Q.shape[0], p.sigma ** 2
    return {"q": (s2 * Q.T @ Q / d).tolist(), "M": (Q.T @ u.T / math.sqrt(d)).tolist(),
            "theta": (s2 * Q.T @ Qs / d).tolist()}


def _row(Q, inst, p: ModelParams, xi, t: float, **training) -> dict:
    """What one trained instance records: ``simulate``'s observables, ``training`` (iterations, gradient norm,
    status), the exact ε_g with its s.e. on the QMC normals ``xi``, the overlap matrices, the wall time since
    ``t``."""
    row = dict(observables(Q, inst, p), **training)
    ex = exact_errors(Q, inst.Q_star, fit_linear(inst.X, inst.Y), inst.p, inst.u, p.sigma, p.omega,
                      jnp.asarray(p.A_array, jnp.float32), xi)
    row.update(eps_g=float(ex.eps_g), eps_g_se=float(ex.eps_g_se), matrices=matrices(Q, inst, p),
               wall_s=time.perf_counter() - t)
    return row


def run_fd(init: str, alpha: float, d: int, n: int, seed: int = 0) -> dict:
    """``n`` instances from ``init`` (float32 L-BFGS, ``simulate``'s defaults), cached."""
    f = fd_file(init, alpha, d, n)
    if f.exists():
        return json.loads(f.read_text())
    p = params()
    cfg = TrainConfig(init=init, optimizer="lbfgs")
    xi = jnp.asarray(qmc_normals(p.L, subspace_dim(p.r, p.r_star, p.k)), jnp.float32)
    rows, t0 = [], time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        inst = instance(p, alpha=alpha, d=d, seed=seed, index=i)
        Q, it, gn, status = train(inst, p, cfg)
        row = _row(Q, inst, p, xi, t, iterations=it, grad_norm=gn, status=status.value)
        rows.append(row)
        print(f"{init} α={alpha:g} #{i}: m={row['m']:.4f} θ={row['theta']:.4f} q={row['q']:.4f} "
              f"e_t={row['e_t']:.6f} ε_g={row['eps_g']:.6f} {row['status']} ({row['wall_s']:.1f} s)", flush=True)
    out = dict(params=PARAMS, init=init, alpha=alpha, d=d, instances=n, seed=seed, optimizer="lbfgs",
               dtype="float32", wall_s=time.perf_counter() - t0, load=os.getloadavg(), rows=rows,
               **{k: [r[k] for r in rows] for k in ("m", "theta", "q", "e_t", "eps_g")})
    f.write_text(json.dumps(out))
    return out


def run_fd_pinned(alpha: float, d: int, n: int, seed: int = 0) -> dict:
    """``n`` instances trained with M = 0 imposed (module docstring, ``fdpin``), cached."""
    from attnphase.attention import empirical_risk_from_statistics, risk_statistics
    from attnphase.simulate import _STATUS_CODES, _knobs, _train_lbfgs, initial_Q
    f = OUT / f"fdpin_semantic_a{alpha:g}_d{d}_n{n}.json"
    if f.exists():
        return json.loads(f.read_text())
    p = params()
    cfg = TrainConfig(init="semantic", optimizer="lbfgs")
    xi = jnp.asarray(qmc_normals(p.L, subspace_dim(p.r, p.r_star, p.k)), jnp.float32)
    kn = _knobs(p, cfg, jnp.float32, test_error="sampled")
    rows, t0 = [], time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        inst = instance(p, alpha=alpha, d=d, seed=seed, index=i)
        stats = risk_statistics(inst.X, inst.Y, inst.p)
        u = inst.u
        perp = lambda Q: Q - u.T @ (u @ Q)  # noqa: E731

        @jax.jit
        def fit(Q0):
            return _train_lbfgs(lambda Q: empirical_risk_from_statistics(perp(Q), stats, kn["lam"]), Q0, kn)

        Q, it, gn, status = fit(initial_Q(inst, p, cfg))
        Q = perp(Q)
        row = _row(Q, inst, p, xi, t, iterations=int(it), grad_norm=float(gn), status=_STATUS_CODES[int(status)].value)
        rows.append(row)
        print(f"M=0 α={alpha:g} d={d} #{i}: m={row['m']:.2e} θ={row['theta']:.4f} q={row['q']:.4f} "
              f"e_t={row['e_t']:.6f} ε_g={row['eps_g']:.6f} status {row['status']} ({row['wall_s']:.1f} s)",
              flush=True)
    out = dict(params=PARAMS, init="semantic", constraint="M = 0 (Q -> P_perp Q)", alpha=alpha, d=d,
               instances=n, seed=seed, optimizer="lbfgs", dtype="float32", wall_s=time.perf_counter() - t0,
               load=os.getloadavg(), rows=rows, **{k: [r[k] for r in rows] for k in ("m", "theta", "q", "e_t", "eps_g")})
    f.write_text(json.dumps(out))
    return out


def fd_all(alpha: float, d: int, n: int) -> dict[str, dict]:
    return {init: json.loads(fd_file(init, alpha, d, n).read_text()) for init in INITS
            if fd_file(init, alpha, d, n).exists()}


def frame_mean(rows: list[dict], V: np.ndarray) -> OrderParams:
    """Mean of the instances' overlap matrices, each first put into the canonical frame
    (:func:`attnphase.theory.state.canonical_frame`: θ on direction 0, M upper triangular), with ``V``."""
    xs = [canonical_frame(OrderParams(*(np.asarray(r["matrices"][k], float) for k in ("q", "M", "theta")), V))
          for r in rows]
    return OrderParams(*(np.mean([np.asarray(b) for b in blocks], axis=0) for blocks in zip(*xs)))


def informed_starts(alpha: float, d: int, n: int) -> list[tuple[str, OrderParams | None]]:
    """(name, start) of the free branch: the default start (None); per init the mean of its instances; the
    mean of each instance's lowest-e_t end point over the inits (``best``), with the model start's V and with
    V/3 and V/10 (V is not observable at finite d)."""
    p = params()
    V = np.asarray(model_start(p, "free", alpha).V, float)
    fd = fd_all(alpha, d, n)
    out: list[tuple[str, OrderParams | None]] = [("default", None)]
    out += [(f"fd {init}", frame_mean(fd[init]["rows"], V)) for init in INITS if init in fd]
    best = [min((fd[i]["rows"][j] for i in fd), key=lambda r: r["e_t"]) for j in range(n)]
    out += [(f"fd best, V/{f:g}" if f != 1 else "fd best", frame_mean(best, V / f)) for f in (1, 3, 10)]
    return out


def summary(sol) -> dict:
    """The JSON of one solve (``GeneralSolution.to_dict``) plus the per-scramble invariants of its last states
    (also for an unconverged point) and, where converged, the O(1/d) coefficients of ε_g, e_t."""
    out = sol.to_dict()
    p = sol.params
    if sol.scramble_x is not None:
        inv = invariants(unflatten(np.asarray(sol.scramble_x), p.r, p.k, p.r_star))
        out["scrambles_inv"] = {k: np.asarray(v).tolist() for k, v in inv.items() if k in ("q", "m", "theta", "V")}
        out["scramble_x"] = np.asarray(sol.scramble_x).tolist()
    if sol.last is not None:
        out["last_inv"] = {k: float(v) for k, v in invariants(sol.last).items() if np.ndim(v) == 0}
    if sol.converged:
        out["finite_size"] = coefficients(p, sol.alpha, sol.x)
    return out


def theory_file(alpha: float, points: int, tag: str = "") -> Path:
    return OUT / f"theory_a{alpha:g}_N{points}x4{tag}.json"


def scramble_e_t(alpha: float, points: int, xs) -> list[float]:
    """e_t = −Φ of each scramble's state ``xs`` (S, n; engine layout) on that scramble's map (seeds 0, 1, …):
    for a paired comparison of fixed points on the same point sets (at a fixed point Φ is stationary, so a
    residual ε moves it by O(ε²))."""
    p = params()
    out = []
    with jax.enable_x64(True):
        for s, x in enumerate(np.asarray(xs, float)):
            G = free_map(p, alpha, points, s)
            z = reduce(theta_gauge(OrderParams(*(jnp.asarray(b) for b in unflatten(jnp.asarray(x), p.r, p.k, p.r_star)))))
            out.append(float(G(z)[1]))
    return out


BIG_STARTS = ("fd semantic", "fd best, V/3")
"""The free branch's starts at the larger size (``--points`` ≥ 4096): the two that converged at 1024 × 4."""


def run_theory(alpha: float, points: int, d: int, n: int, max_steps: int = 200) -> dict:
    """The free branch from the starts of :func:`informed_starts` (one batch; at ``points`` ≥ 4096 only
    ``BIG_STARTS``, and the default start only below), the pinned semantic and positional branches from their
    default starts (positional only below 4096); QMC ``points`` × 4, no coarse stage; cached."""
    f = theory_file(alpha, points)
    if f.exists():
        return json.loads(f.read_text())
    p, cfg, big = params(), QMCConfig(points=points, scrambles=4, coarse=0), points >= 4096
    out: dict = {"alpha": alpha, "points": points, "scrambles": 4, "load": os.getloadavg(), "free": {}}
    t = time.perf_counter()
    st = informed_starts(alpha, d, n)
    given = [(k, x) for k, x in st if x is not None and (not big or k in BIG_STARTS)]
    small = theory_file(alpha, 1024)
    if big and small.exists():          # the converged free points of the 1024-point run
        for k, v in json.loads(small.read_text())["free"].items():
            if v["status"] == "converged":
                given.append((f"1024-point fixed point from {k}",
                              OrderParams(*(np.asarray(v["matrices"][b], float) for b in ("q", "M", "theta", "V")))))
    sols = solve_batch(p, [alpha] * len(given), "free", init=[x for _, x in given], qmc_config=cfg,
                       max_steps=max_steps)
    for (name, x), s in zip(given, sols):
        out["free"][name] = dict(summary(s), start={k: np.asarray(v).tolist() for k, v in x._asdict().items()})
    if not big:
        out["free"]["default"] = summary(solve_batch(p, [alpha], "free", qmc_config=cfg, max_steps=max_steps)[0])
    for b in ("semantic",) if big else ("semantic", "positional"):
        out[b] = summary(solve_batch(p, [alpha], b, qmc_config=cfg, max_steps=max_steps)[0])
    out["wall_s"] = time.perf_counter() - t
    f.write_text(json.dumps(out, default=float))
    return out


R_SCALE = np.array([0.1, 0.01, 0.05, 0.1, 0.1, 0.2, 20.0, 20.0, 20.0])
"""Typical sizes of the reduced coordinates of ``roots`` (the root finder works on z / R_SCALE)."""
R_NAMES = ("q00", "q01", "q11", "M0", "M1", "theta0", "V00", "V01", "V11")


def theta_gauge(x: OrderParams) -> OrderParams:
    """Rotate (det +1) so that θ = (‖θ‖, 0): regular at M = 0 (θ ≈ 0.2 there)."""
    return rotate_onto_first(x, x.theta[:, 0])


def reduce(x: OrderParams):
    return jnp.stack([x.q[0, 0], x.q[0, 1], x.q[1, 1], x.M[0, 0], x.M[1, 0], x.theta[0, 0],
                      x.V[0, 0], x.V[0, 1], x.V[1, 1]])


def expand(z) -> OrderParams:
    return OrderParams(jnp.array([[z[0], z[1]], [z[1], z[2]]]), jnp.array([[z[3]], [z[4]]]),
                       jnp.array([[z[5]], [0.0]]), jnp.array([[z[6], z[7]], [z[7], z[8]]]))


def free_map(p: ModelParams, alpha: float, points: int, seed: int):
    """z → (G(z), e_t(z), valid): the free map of one scramble (``points`` Sobol points, seed ``seed``), jitted,
    in this module's θ gauge and coordinates (``bench_free_r2_roots.make_map``)."""
    from attnphase.theory import qmc
    L, r, rs = p.L, p.r, p.r_star
    Z = qmc.scrambles(L * (r + rs), points, (seed,))[0]
    xi, y = jnp.asarray(Z[:, :L * r].reshape(-1, L, r)), jnp.asarray(Z[:, L * r:].reshape(-1, L, rs))
    return make_map(p, alpha, xi, y, coords=(expand, reduce), gauge=theta_gauge)


def run_roots(alpha: float, points: int, scrambles: int, d: int, n: int) -> dict:
    """Root finding on the free map (module docstring), cached."""
    from scipy.optimize import root
    f = OUT / f"roots_a{alpha:g}_N{points}x{scrambles}.json"
    if f.exists():
        return json.loads(f.read_text())
    p = params()
    th = json.loads(theory_file(alpha, 1024).read_text())["semantic"]
    sem = OrderParams(*(np.asarray(th["matrices"][k], float) for k in ("q", "M", "theta", "V")))
    fdx = frame_mean(fd_all(alpha, d, n)["semantic"]["rows"], sem.V)
    out = {"alpha": alpha, "points": points, "load": os.getloadavg(), "roots": []}
    with jax.enable_x64(True):
        z_sem = np.asarray(reduce(theta_gauge(OrderParams(*(jnp.asarray(b) for b in sem)))))
        starts = {"finite-d semantic-init mean, theory V": np.asarray(reduce(theta_gauge(
            OrderParams(*(jnp.asarray(b) for b in fdx)))))}
        starts["semantic point"] = z_sem.copy()
        for c in (0.05, 0.13):
            z = z_sem.copy()
            z[4] = c
            starts[f"semantic point + M = (0, {c:g})"] = z
        for s in range(scrambles):
            G = free_map(p, alpha, points, s)
            fun = lambda u: (u * R_SCALE - np.asarray(G(jnp.asarray(u * R_SCALE))[0])) / R_SCALE  # noqa: E731
            for name, z0 in starts.items():
                t0 = time.perf_counter()
                sol = root(fun, z0 / R_SCALE, method="hybr", options=dict(xtol=1e-10, maxfev=300))
                z = sol.x * R_SCALE
                Gz, e_t, ok = G(jnp.asarray(z))
                J = np.zeros((9, 9))
                for j in range(9):
                    h = np.zeros(9)
                    h[j] = 1e-4 * R_SCALE[j]
                    J[:, j] = (np.asarray(G(jnp.asarray(z + h))[0]) - np.asarray(G(jnp.asarray(z - h))[0])) / (
                        2e-4 * R_SCALE)
                ev = np.linalg.eigvals(J)
                row = dict(scramble=s, start=name, success=bool(sol.success), nfev=int(sol.nfev),
                           residual=float(np.max(np.abs(fun(sol.x)))), valid=bool(ok),
                           z=dict(zip(R_NAMES, map(float, z))), q=float(z[0] + z[2]), m=float(np.hypot(z[3], z[4])),
                           theta=float(abs(z[5])), e_t=float(e_t),
                           jac_abs_eig=sorted(map(float, np.abs(ev)), reverse=True)[:4],
                           jac_eig=[[float(v.real), float(v.imag)] for v in ev[np.argsort(-ev.real)]],
                           jac_max_real=float(np.max(ev.real)),
                           wall_s=time.perf_counter() - t0)
                out["roots"].append(row)
                print(f"s{s} {name:40s} ok={row['success']!s:5s} res={row['residual']:.1e} q={row['q']:.5f} "
                      f"m={row['m']:.4f} θ={row['theta']:.4f} e_t={row['e_t']:.6f} "
                      f"|eig J| {np.round(row['jac_abs_eig'], 3)} max Re {row['jac_max_real']:.3f} ({row['wall_s']:.0f} s)", flush=True)
    f.write_text(json.dumps(out))
    return out


KEYS = ("q", "m", "theta", "eps_g", "e_t")


def mean_se(v) -> tuple[float, float]:
    v = np.asarray(v, float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")


def theory_points(alpha: float) -> dict[str, dict]:
    """Converged theory points at α: semantic (pinned) and the free ones, per QMC size, by name."""
    out = {}
    for points in (1024, 4096):
        f = theory_file(alpha, points)
        if not f.exists():
            continue
        r = json.loads(f.read_text())
        if r["semantic"]["status"] == "converged":
            out[f"semantic (pinned), {points} × 4"] = r["semantic"]
        for name, v in r["free"].items():
            if v["status"] == "converged":
                out[f"free from {name}, {points} × 4"] = v
    return out


def at_d(t: dict, key: str, d: int) -> float:
    """A theory value at dimension d: ε_g and e_t with the O(1/d) pass-through term (theory.finite_size)."""
    return t[key] + (t["finite_size"][key] / d if key in ("eps_g", "e_t") else 0.0)


def check(fd_v: tuple[float, float], tv: float) -> str:
    """✓ within max(3 s.e., 5 %) of the theory value (the issue's acceptance), ✗ otherwise."""
    mean, se = fd_v
    tol = max(3 * se, 0.05 * abs(tv))
    return "✓" if abs(mean - tv) <= tol else "✗"


def tables(d: int = 1000, n: int = 8) -> list[str]:
    lines = []
    for alpha in (1.0, 2.0):
        pts = theory_points(alpha)
        lines += [f"**α = {alpha:g}** (finite d: d = {d}, {n} instances per init, mean ± s.e.; theory ε_g, e_t with "
                  "the O(1/d) term at this d; ✓/✗: within max(3 s.e., 5 %) of the theory point named in the "
                  "last column)", "",
                  "| state | q | m | θ | ε_g | e_t | compared with |", "|---|---|---|---|---|---|---|"]
        for name, t in pts.items():
            cells = [f"{t[k]:.4g} ± {t[k + '_err']:.1g}" + (f" ({at_d(t, k, d):.4g})" if k in ("eps_g", "e_t") else "")
                     for k in KEYS]
            lines.append(f"| theory: {name} | " + " | ".join(cells) + " | |")
        ref = next((t for k, t in pts.items() if k.startswith("free") and "4096" in k), None) or \
            next((t for k, t in pts.items() if k.startswith("free")), None)
        sem = next((t for k, t in pts.items() if k.startswith("semantic") and "4096" in k), None) or \
            next((t for k, t in pts.items() if k.startswith("semantic")), None)
        for label, file in [(f"finite d, {init} init", fd_file(init, alpha, d, n)) for init in INITS] + \
                [("finite d, M = 0 imposed", OUT / f"fdpin_semantic_a{alpha:g}_d{d}_n{n}.json")]:
            if not file.exists():
                continue
            fd = json.loads(file.read_text())
            for tname, t in (("mixed", ref), ("semantic", sem)):
                if t is None or (tname == "mixed" and "M = 0" in label):
                    continue
                cells = [f"{mean_se(fd[k])[0]:.4g} ± {mean_se(fd[k])[1]:.1g} " +
                         ("(imposed)" if k == "m" and "M = 0" in label else check(mean_se(fd[k]), at_d(t, k, d)))
                         for k in KEYS]
                lines.append(f"| {label} | " + " | ".join(cells) + f" | {tname} |")
        lines.append("")
    return lines


def paired_table(sizes=((1000, 8), (2000, 8), (4000, 4))) -> list[str]:
    """Finite d, per instance: the free semantic-init end point against the same instance trained with M = 0
    imposed (``fdpin``): m, θ of both and Δe_t = e_t(free) − e_t(M = 0), mean ± s.e. over the instances."""
    lines = ["| α | d | n | m (free) | θ (free) | θ (M = 0) | q (free) | ε_g (free) | ε_g (M = 0) | e_t (free) | "
             "e_t (M = 0) | Δe_t | instances with Δe_t < 0 |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for alpha in (1.0, 2.0):
        for d, n in sizes:
            a, b = fd_file("semantic", alpha, d, n), OUT / f"fdpin_semantic_a{alpha:g}_d{d}_n{n}.json"
            if not (a.exists() and b.exists()):
                continue
            fa, fb = json.loads(a.read_text()), json.loads(b.read_text())
            ms = lambda v: "{:.4g} ± {:.1g}".format(*mean_se(v))  # noqa: E731
            delta = np.asarray(fa["e_t"]) - np.asarray(fb["e_t"])
            lines.append(f"| {alpha:g} | {d} | {n} | {ms(fa['m'])} | {ms(fa['theta'])} | {ms(fb['theta'])} | "
                         f"{ms(fa['q'])} | {ms(fa['eps_g'])} | {ms(fb['eps_g'])} | {ms(fa['e_t'])} | {ms(fb['e_t'])} | "
                         f"{ms(delta)} | {int((delta < 0).sum())}/{n} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("fd", "fdpin", "theory", "roots", "et", "table"))
    ap.add_argument("--scrambles", type=int, default=2)
    ap.add_argument("--alpha", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument("--d", type=int, nargs="+", default=[1000])
    ap.add_argument("--instances", type=int, default=8)
    ap.add_argument("--inits", nargs="+", default=list(INITS))
    ap.add_argument("--points", type=int, default=1024)
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    if a.what == "fd":
        for alpha in a.alpha:
            for init in a.inits:
                for d in a.d:
                    run_fd(init, alpha, d, a.instances)
    elif a.what == "fdpin":
        for alpha in a.alpha:
            for d in a.d:
                run_fd_pinned(alpha, d, a.instances)
    elif a.what == "et":
        for alpha in a.alpha:
            r = json.loads(theory_file(alpha, a.points).read_text())
            out = {"semantic": scramble_e_t(alpha, a.points, r["semantic"]["scramble_x"])}
            out.update({k: scramble_e_t(alpha, a.points, v["scramble_x"]) for k, v in r["free"].items()})
            print(json.dumps(out, indent=1))
            (OUT / f"scramble_e_t_a{alpha:g}_N{a.points}x4.json").write_text(json.dumps(out))
    elif a.what == "table":
        print("\n".join(tables(a.d[0], a.instances) + paired_table()))
    elif a.what == "roots":
        for alpha in a.alpha:
            run_roots(alpha, a.points, a.scrambles, a.d[0], a.instances)
    elif a.what == "theory":
        for alpha in a.alpha:
            r = run_theory(alpha, a.points, a.d[0], a.instances, max_steps=300 if a.points >= 4096 else 200)
            for name, v in [*r["free"].items(), *((b, r[b]) for b in ("semantic", "positional") if b in r)]:
                print(f"α={alpha:g} {name}: {v['status']} ({v['iterations']}) q={v['q']:.4g} m={v['m']:.4g} "
                      f"θ={v['theta']:.4g} e_t={v['e_t']:.6g}±{v['e_t_err']:.1g} last={v.get('last_inv')} "
                      f"scr={v.get('scrambles_inv')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
