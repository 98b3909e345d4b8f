"""Is the L = 3 positional-start state a local minimum or a saddle at finite d? Exact Hessian and basin.

Case (issue 11): L = 3, A = 0.4 I + 0.2 J, P = I, r = r* = 1, ω = 0.3, σ = 0.5, λ = 0.01, α = 1, positional
start; ``attnphase simulate --L 3 --A "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6" --alpha 1 --d 1000 --init positional
--optimizer lbfgs --instances 16`` lands 10/16 in a state m ≈ 0.22, θ ≈ 0.025, q ≈ 0.105, e_t ≈ 0.0078 that has no
replica-symmetric fixed point (docs/notes/2026-12-05-theory-general.md, "L = 3 positional: ..."). For each instance this script

1. rebuilds it as ``simulate`` draws it (:func:`attnphase.simulate.instance`, float32) and reruns simulate's
   float32 L-BFGS from the positional start (:func:`attnphase.simulate.train`); instances whose end point has
   m < ``M_CLUSTER`` (the semantic ones) are recorded and skipped;
2. polishes the end point in float64 (L-BFGS to ‖∇R‖ ≤ 1e-9·max(1, ‖∇R₀‖), no warm-up) and computes the full
   Hessian of the training objective R (summed risk + (λ/2)‖Q‖², MODEL.md §2: what ``train`` minimises) with
   respect to all d entries of Q (:func:`attnphase.simulate.risk_hessian`, ``jax`` forward-over-reverse,
   float64), its whole spectrum (``numpy.linalg.eigh``) and ‖∇R‖; the lowest eigenvector's overlap with the
   positional directions u_l, the teacher Q*/‖Q*‖ and the state Q/‖Q‖. Classification (:class:`Critical`):
   ``minimum`` if λ_min > ``EIG_TOL``·λ_max, ``saddle`` if λ_min < −``EIG_TOL``·λ_max (then steps of
   ``SADDLE_STEPS``·‖Q‖ along ± the eigenvector are re-minimised and reported), ``degenerate`` otherwise;
   ``not_critical`` if ‖∇R‖ > 1e-6 after the polish;
3. minimises the same instance (float64, simulate's warm-up + L-BFGS) from the semantic start and from
   ``RANDOM_SCALES`` random starts Q₀ = s·N(0, I) (keys ``fold_in(key_init, 100 + j)``): the instance's best
   training loss and its overlaps;
4. perturbs the state Q₁ by δ = ε‖Q₁‖·v (ε in ``EPS``) along unit directions v — random (``RANDOM_DRAWS`` draws
   per ε), ± the softest Hessian eigenvector, towards the teacher (sign of θ) and away from it, and −Q_u/‖Q_u‖
   (Q_u the component in span(u_l): towards M = 0) — and re-minimises (float64 L-BFGS, no warm-up). It
   "returns" if min(‖Q − Q₁‖, ‖Q + Q₁‖)/‖Q₁‖ < ``RETURN_TOL`` (R is even in Q). Per direction: the leave radius
   (smallest ε that does not return: the basin of this minimum) and the semantic radius (smallest ε whose
   minimum has m < ``M_CLUSTER`` and θ > ``THETA_SEMANTIC``: the semantic minimum); the scan stops at the first
   minimum with m < ``M_CLUSTER``; every other minimum met is classified by its Hessian.

Output: ``docs/data/L3_cluster_hessian/L3_positional_a1_d<d>.json`` (one row per instance, written after every
instance; rows already there are kept, ``--rerun`` recomputes). ``--table`` prints the markdown tables from the
cached JSON and writes them into docs/notes/2026-12-05-theory-general.md (block ``L3_cluster_hessian``).

Usage:
    python bench/investigations/bench_L3_cluster_hessian.py --d 1000 --instances 16          # the 10 cluster instances of 16
    python bench/investigations/bench_L3_cluster_hessian.py --d 2000 --indices 0,2,3,5       # cluster instances at d = 2000
    python bench/investigations/bench_L3_cluster_hessian.py --table
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type=").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from enum import Enum  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from attnphase.model import ModelParams  # noqa: E402
from attnphase.simulate import Instance, TrainConfig, initial_Q, instance, observables, risk_hessian, train  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # bench/ (_docblock)
from _docblock import write_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "data" / "L3_cluster_hessian"
DOC = ROOT / "docs" / "notes" / "2026-12-05-theory-general.md"
PARAMS = ModelParams(omega=0.3, L=3, A=[[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
ALPHA, SEED = 1.0, 0
M_CLUSTER = 0.1                       # end points with m above this are the positional-start state
THETA_SEMANTIC = 0.1                  # a minimum with m < M_CLUSTER and θ above this is the semantic one
EIG_TOL = 1e-9                        # |λ_min| ≤ EIG_TOL·λ_max: degenerate
GRAD_CRITICAL = 1e-6                  # ‖∇R‖ above this after the polish: not a critical point
EPS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5)
RANDOM_DRAWS = 2
RANDOM_SCALES = (0.1, 0.1, 1.0, 1.0)
RETURN_TOL = 1e-3
SADDLE_STEPS = (0.01, 0.1, 0.3)
KEYS = ("m", "theta", "q", "e_t")


class Critical(str, Enum):
    """What the polished end point is (item 2 of the module docstring)."""

    MINIMUM = "minimum"
    SADDLE = "saddle"
    DEGENERATE = "degenerate"
    NOT_CRITICAL = "not_critical"


def classify(lam_min: float, lam_max: float, grad_norm: float) -> Critical:
    """:class:`Critical` from the extreme Hessian eigenvalues and the gradient norm."""
    if grad_norm > GRAD_CRITICAL:
        return Critical.NOT_CRITICAL
    if lam_min > EIG_TOL * lam_max:
        return Critical.MINIMUM
    if lam_min < -EIG_TOL * lam_max:
        return Critical.SADDLE
    return Critical.DEGENERATE


def as64(inst: Instance) -> Instance:
    return Instance(*(v.astype(jnp.float64) if jnp.issubdtype(v.dtype, jnp.floating) else v for v in inst))


def describe(Q, inst: Instance) -> dict:
    o = observables(Q, inst, PARAMS)
    return {k: o[k] for k in KEYS}


def distance(Q, Q1) -> float:
    """min(‖Q − Q₁‖, ‖Q + Q₁‖)/‖Q₁‖ (R is even in Q)."""
    n1 = float(jnp.linalg.norm(Q1))
    return min(float(jnp.linalg.norm(Q - Q1)), float(jnp.linalg.norm(Q + Q1))) / n1


def spectrum(Q, c: Instance) -> dict:
    """Gradient norm and Hessian spectrum of R at Q (float64), lowest eigenvector and its overlaps."""
    g, H = risk_hessian(Q, c, PARAMS)
    H = np.asarray(H)
    asym = float(np.abs(H - H.T).max())
    vals, vecs = np.linalg.eigh(0.5 * (H + H.T))
    v = vecs[:, 0]
    qs = np.asarray(c.Q_star).ravel()
    gn = float(jnp.linalg.norm(g))
    return dict(grad_norm=gn, lam_lowest=[float(x) for x in vals[:6]], lam_max=float(vals[-1]),
                lam_median=float(np.median(vals)), n_negative=int(np.sum(vals < 0)), asymmetry=asym,
                v_min_overlap=dict(u=[float(x) for x in np.asarray(c.u) @ v],
                                   teacher=float(qs @ v / np.linalg.norm(qs)),
                                   state=float(np.asarray(Q).ravel() @ v / float(jnp.linalg.norm(Q)))),
                critical=classify(float(vals[0]), float(vals[-1]), gn).value), v


def minimise(c: Instance, Q0, warmup: bool) -> tuple:
    cfg = TrainConfig(optimizer="lbfgs", x64=True, gtol=1e-9, max_iter=5000,
                      warmup_steps=TrainConfig().warmup_steps if warmup else 0)
    Q, it, gn, status = train(c, PARAMS, cfg, Q0)
    return Q, dict(iters=it, grad_norm=gn, status=status.value)


def other_starts(c: Instance) -> list[dict]:
    """Minima of the same instance from the semantic start and from random starts (float64, with warm-up)."""
    rows = []
    sem = initial_Q(c, PARAMS, TrainConfig(init="semantic"))
    Q, info = minimise(c, sem, warmup=True)
    sp, _ = spectrum(Q, c)
    rows.append(dict(start="semantic", **info, **describe(Q, c), lam_min=sp["lam_lowest"][0], critical=sp["critical"]))
    d = c.X.shape[-1]
    for j, s in enumerate(RANDOM_SCALES):
        Q0 = s * jax.random.normal(jax.random.fold_in(c.key_init, 100 + j), (d, PARAMS.r), jnp.float64)
        Q, info = minimise(c, Q0, warmup=True)
        rows.append(dict(start=f"random(scale={s:g}, j={j})", **info, **describe(Q, c)))
    return rows


def directions(Q1, c: Instance, v_min, key) -> dict:
    """Unit perturbation directions (random ones are drawn per ε from ``key``)."""
    qs = c.Q_star / jnp.linalg.norm(c.Q_star)
    th_sign = float(jnp.sign(jnp.sum(c.Q_star * Q1)))
    Qu = c.u.T @ (c.u @ Q1)
    V = jnp.asarray(v_min.reshape(Q1.shape))
    return {"soft +": V, "soft -": -V, "teacher (towards)": th_sign * qs, "teacher (away)": -th_sign * qs,
            "towards M = 0": -Qu / jnp.linalg.norm(Qu),
            **{f"random {k}": ("random", jax.random.fold_in(key, k)) for k in range(RANDOM_DRAWS)}}


def semantic_radius(trials: list[dict]) -> float | None:
    """The first ε whose minimum is the semantic one (m < ``M_CLUSTER``, θ > ``THETA_SEMANTIC``), else None."""
    return next((t["eps"] for t in trials if t["m"] < M_CLUSTER and t["theta"] > THETA_SEMANTIC), None)


def basin(Q1, c: Instance, v_min, key) -> dict:
    """Escape radii per direction (item 4): re-minimise Q₁ + ε‖Q₁‖v for growing ε. ``leave_radius``: the
    smallest ε that does not return to Q₁; ``semantic_radius`` (:func:`semantic_radius`): the smallest ε
    that ends in the semantic minimum. The scan stops at the first minimum with m < ``M_CLUSTER``. Each
    minimum reached is classified by its Hessian (:func:`spectrum`) the first time it is met (minima told
    apart by e_t to 1e-11)."""
    n1 = float(jnp.linalg.norm(Q1))
    out, seen = {}, {}
    for name, v in directions(Q1, c, v_min, key).items():
        trials, leave = [], None
        for eps in EPS:
            if isinstance(v, tuple):
                z = jax.random.normal(jax.random.fold_in(v[1], int(eps * 1000)), Q1.shape, jnp.float64)
                u = z / jnp.linalg.norm(z)
            else:
                u = v
            Q, info = minimise(c, Q1 + eps * n1 * u, warmup=False)
            dist = distance(Q, Q1)
            t = dict(eps=eps, distance=dist, returned=dist < RETURN_TOL, **info, **describe(Q, c))
            if dist >= RETURN_TOL:                 # where it went: is that a minimum too?
                tag = round(t["e_t"], 11)
                if tag not in seen:
                    sp, _ = spectrum(Q, c)
                    seen[tag] = (sp["lam_lowest"][0], sp["critical"])
                t.update(lam_min=seen[tag][0], critical=seen[tag][1])
                leave = eps if leave is None else leave
            trials.append(t)
            if t["m"] < M_CLUSTER:                 # left the positional state: stop
                break
        out[name] = dict(leave_radius=leave, semantic_radius=semantic_radius(trials), trials=trials)
    return out


def saddle_escape(Q1, c: Instance, v_min) -> list[dict]:
    n1 = float(jnp.linalg.norm(Q1))
    V = jnp.asarray(v_min.reshape(Q1.shape))
    rows = []
    for step in SADDLE_STEPS:
        for sgn in (1.0, -1.0):
            Q, info = minimise(c, Q1 + sgn * step * n1 * V, warmup=False)
            rows.append(dict(step=step, sign=sgn, distance=distance(Q, Q1), **info, **describe(Q, c)))
    return rows


def run_instance(d: int, i: int, do_basin: bool = True, do_starts: bool = True) -> dict:
    t0 = time.perf_counter()
    inst = instance(PARAMS, alpha=ALPHA, d=d, seed=SEED, index=i)
    cfg = TrainConfig(init="positional", optimizer="lbfgs")
    Q32, it32, gn32, st32 = train(inst, PARAMS, cfg)
    row = dict(instance=i, d=d, f32=dict(iters=it32, grad_norm=gn32, status=st32.value, **describe(Q32, inst)))
    if row["f32"]["m"] < M_CLUSTER:
        row.update(in_cluster=False, wall_s=time.perf_counter() - t0)
        return row
    with jax.enable_x64(True):
        c = as64(inst)
        Q1, info = minimise(c, Q32.astype(jnp.float64), warmup=False)
        row.update(in_cluster=True, polish=dict(**info, move=distance(Q1, Q32.astype(jnp.float64))),
                   state=describe(Q1, c), M=[float(x) for x in np.asarray(c.u @ Q1).ravel() / math.sqrt(d)])
        spec, v_min = spectrum(Q1, c)
        row["hessian"] = spec
        if spec["critical"] == Critical.SADDLE.value:
            row["saddle_escape"] = saddle_escape(Q1, c, v_min)
        if do_starts:
            row["other_starts"] = other_starts(c)
        if do_basin:
            row["basin"] = basin(Q1, c, v_min, jax.random.fold_in(c.key_init, 999))
    row["wall_s"] = time.perf_counter() - t0
    return row


# ---------------------------------------------------------------------------------------------------
# tables


def _radius(x) -> str:
    return f">{EPS[-1]:g}" if x is None else f"{x:g}"


def _minimum(o: dict) -> str:
    return f"{o['e_t']:.5f} ({o['m']:.2f})"


def instance_table(rows: list[dict]) -> list[str]:
    """Item 1–3 per instance: the state, its Hessian, the semantic start's minimum and the random starts."""
    out = ["| d | instance | e_t | m | θ | q | ‖∇R‖ | λ_min | λ_min/λ_max | λ_min/median | # λ < 0 "
           "| v_min on u, Q*, Q | semantic start: e_t (m, θ) | its λ_min | e_t − lowest of all starts "
           "| random starts ending semantic | the others: e_t (m) |",
           "|" + "---|" * 17]
    for r in rows:
        if not r.get("in_cluster"):
            continue
        h, s = r["hessian"], r["state"]
        ov = h["v_min_overlap"]
        line = (f"| {r['d']} | {r['instance']} | {s['e_t']:.6f} | {s['m']:.3f} | {s['theta']:.4f} | {s['q']:.4f} "
                f"| {h['grad_norm']:.1e} | {h['lam_lowest'][0]:.2e} | {h['lam_lowest'][0] / h['lam_max']:.1e} "
                f"| {h['lam_lowest'][0] / h['lam_median']:.3f} | {h['n_negative']} "
                f"| {math.hypot(*ov['u']):.2f}, {abs(ov['teacher']):.2f}, {abs(ov['state']):.2f} ")
        if "other_starts" not in r:                     # --hessian-only
            out.append(line + "| not run | — | — | — | — |")
            continue
        sem = r["other_starts"][0]
        best = min(o["e_t"] for o in r["other_starts"])
        rnd = r["other_starts"][1:]
        rest = [o for o in rnd if not (o["m"] < M_CLUSTER and o["theta"] > THETA_SEMANTIC)]
        out.append(line + f"| {sem['e_t']:.6f} ({sem['m']:.3f}, {sem['theta']:.3f}) | {sem['lam_min']:.1e} "
                   f"| {s['e_t'] - best:.2e} | {len(rnd) - len(rest)}/{len(rnd)} "
                   f"| {', '.join(_minimum(o) for o in rest) or '—'} |")
    return out


def basin_table(rows: list[dict]) -> list[str]:
    """Item 4 per instance: ε that leaves the minimum / ε that reaches the semantic state, per direction, and
    the other minima met on the way."""
    groups = (("random", lambda k: k.startswith("random")), ("soft ±", lambda k: k.startswith("soft")),
              ("teacher towards", lambda k: k == "teacher (towards)"),
              ("teacher away", lambda k: k == "teacher (away)"), ("towards M = 0", lambda k: k == "towards M = 0"))
    out = ["| d | instance | " + " | ".join(f"{g}: leave / semantic" for g, _ in groups)
           + " | other positional minima met: # (Hessian > 0) | their e_t − e_t(state) | their distance "
           "| their m | their θ |", "|" + "---|" * (len(groups) + 7)]
    for r in rows:
        b = r.get("basin")
        if not r.get("in_cluster") or not b:
            continue
        cells = []
        for _, sel in groups:
            ks = [k for k in b if sel(k)]
            lv = [b[k]["leave_radius"] for k in ks]
            sm = [semantic_radius(b[k]["trials"]) for k in ks]
            lo = lambda xs: None if all(x is None for x in xs) else min(x for x in xs if x is not None)  # noqa: E731
            cells.append(f"{_radius(lo(lv))} / {_radius(lo(sm))}")
        others = {}
        for k in b:
            for t in b[k]["trials"]:
                if not t["returned"] and t["m"] >= M_CLUSTER:
                    others.setdefault(round(t["e_t"], 11), t)
        e0 = r["state"]["e_t"]
        o = list(others.values())
        rng = lambda f, fmt: "—" if not o else f"{fmt(min(map(f, o)))} … {fmt(max(map(f, o)))}"  # noqa: E731
        out.append(f"| {r['d']} | {r['instance']} | " + " | ".join(cells)
                   + f" | {len(o)} ({sum(t['critical'] == Critical.MINIMUM.value for t in o)})"
                   + f" | {rng(lambda t: t['e_t'] - e0, lambda x: f'{x:+.1e}')}"
                   + f" | {rng(lambda t: t['distance'], lambda x: f'{x:.2f}')}"
                   + f" | {rng(lambda t: t['m'], lambda x: f'{x:.3f}')} | {rng(lambda t: t['theta'], lambda x: f'{x:.3f}')} |")
    return out


def tables() -> str:
    rows = []
    for f in sorted(OUT.glob("L3_positional_a1_d*.json"), key=lambda p: int(p.stem.split("_d")[-1])):
        rows += json.loads(f.read_text())["rows"]
    lines = ["<!-- L3_cluster_hessian:begin (generated by bench/investigations/bench_L3_cluster_hessian.py --table) -->",
             "### Hessian at the state and the instance's best minimum (seed 0)", ""]
    lines += instance_table(rows)
    lines += ["", "### Basin: relative kick ε that leaves the minimum / that ends in the semantic state", ""]
    lines += basin_table(rows)
    lines += ["<!-- L3_cluster_hessian:end -->"]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--instances", type=int, default=16, help="instances 0 .. N−1 (the cluster ones are examined)")
    ap.add_argument("--indices", default=None, help="comma-separated instance indices instead of --instances")
    ap.add_argument("--no-basin", action="store_true", help="skip the perturbation scan (item 4)")
    ap.add_argument("--hessian-only", action="store_true", help="skip the other starts and the scan (items 3, 4)")
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--table", action="store_true", help="print the tables from the cached JSON, write the docs")
    a = ap.parse_args(argv)
    if a.table:
        text = tables()
        print(text)
        write_block(DOC, "L3_cluster_hessian", text)
        return 0
    idx = [int(x) for x in a.indices.split(",")] if a.indices else list(range(a.instances))
    OUT.mkdir(parents=True, exist_ok=True)
    f = OUT / f"L3_positional_a1_d{a.d}.json"
    res = json.loads(f.read_text()) if f.exists() and not a.rerun else dict(
        case=dict(params=PARAMS.to_dict(), alpha=ALPHA, seed=SEED, init="positional", m_cluster=M_CLUSTER, eps=EPS,
                  random_draws=RANDOM_DRAWS, random_scales=RANDOM_SCALES, return_tol=RETURN_TOL, eig_tol=EIG_TOL,
                  theta_semantic=THETA_SEMANTIC),
        rows=[])
    done = {r["instance"] for r in res["rows"]}
    for i in idx:
        if i in done:
            continue
        row = run_instance(a.d, i, do_basin=not (a.no_basin or a.hessian_only), do_starts=not a.hessian_only)
        row["load"] = os.getloadavg()
        res["rows"].append(row)
        res["rows"].sort(key=lambda r: r["instance"])
        f.write_text(json.dumps(res, indent=1))
        brief = {k: row.get(k) for k in ("instance", "in_cluster", "state", "wall_s")}
        if row.get("in_cluster"):
            h = row["hessian"]
            brief.update(lam_min=h["lam_lowest"][0], grad=h["grad_norm"], critical=h["critical"],
                         best=min((o["e_t"] for o in row.get("other_starts", [])), default=None),
                         radii={k: (b["leave_radius"], b["semantic_radius"]) for k, b in row.get("basin", {}).items()})
        print(json.dumps(brief), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
