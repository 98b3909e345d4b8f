"""Benchmark + reproduction check of finite-d training (writes "## Finite-d training" of docs/benchmarks.md).

python bench/bench_simulate.py [--gd-steps-batched 200] [--eager-steps 50] [--repro-instances 8] [--no-repro]
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from attnphase.data import n_samples, sample_dataset, sample_teacher
from attnphase.model import ModelParams, empirical_risk, positional_encodings
from attnphase.simulate import TrainConfig, simulate

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
REF = Path("/work/shared/reference/gd_d1000_omega0.3.csv")
if not REF.exists():
    REF = ROOT.parent / "shared" / "reference" / "gd_d1000_omega0.3.csv"
P = ModelParams(omega=0.3)
D, ALPHA = 1000, 2.0

PREDICTION = """Prediction (written before measuring): one compiled GD step at d = 1000, n = 2000 costs a few ms
(a 2000×2×1000 forward + backward), so 5000 steps take ~10–30 s per instance; batching 24 instances
shares the dispatch but not the flops, so per-instance time drops ~1.5–3× further. The eager loop pays
Python dispatch of ~20 small ops per step (~0.1–0.3 ms each) plus unfused kernels: ≥ 10× slower per
instance than compiled, ≥ 20× vs batched. L-BFGS reaches ‖∇R‖ ≤ 1e-6 in ~50–150 iterations (~2–4 risk
evaluations each), ≥ 10× fewer gradient evaluations than 5000 GD steps, with e_t ≤ GD's."""


def eager_gd_time(steps: int) -> float:
    """A research-script loop: no jit, one GD step at a time."""
    k1, k2 = jax.random.split(jax.random.key(0))
    Qs = sample_teacher(k1, P, D)
    X, Y = sample_dataset(k2, P, Qs, n_samples(ALPHA, D))
    p = positional_encodings(P, D)
    grad = jax.grad(lambda Q: empirical_risk(Q, X, Y, p, P.lam))
    Q = Qs
    with jax.disable_jit():
        Q = Q - 0.15 * grad(Q)  # warm-up
        Q.block_until_ready()
        t = time.perf_counter()
        for _ in range(steps):
            Q = Q - 0.15 * grad(Q)
        Q.block_until_ready()
    return time.perf_counter() - t


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def reference_row(alpha: float, informed: bool) -> dict:
    df = pd.read_csv(REF)
    df = df[df.informed == informed].sort_values("alpha")
    cols = {"eps_g": "attention_gen_error", "R": "attention_train_error", "m": "attention_mag",
            "theta_over_sigma2": "attention_theta"}
    out = {}
    for k, c in cols.items():
        out[k] = float(np.interp(alpha, df.alpha, df[c + "_mean"]))
        out[k + "_std"] = float(np.interp(alpha, df.alpha, df[c + "_std"]))
    out["e_t"] = out.pop("R") / D
    out["e_t_std"] = out.pop("R_std") / D
    return out


def reproduce(alphas, instances: int, optimizer: str = "lbfgs", test_samples: int = 50_000):
    rows = []
    for alpha in alphas:
        for init, informed in (("semantic", True), ("positional", False)):
            r, t = timed(lambda: simulate(P, alpha=alpha, d=D, config=TrainConfig(init=init, optimizer=optimizer),
                                          instances=instances, seed=100, test_samples=test_samples))
            s, ref = r.summary(), reference_row(alpha, informed)
            for k in ("eps_g", "e_t", "m", "theta_over_sigma2"):
                sem = math.hypot(s[k]["sem"], ref[k + "_std"] / math.sqrt(24))
                tol = max(3 * sem, 0.05 * abs(ref[k]))
                rows.append(dict(alpha=alpha, init=init, optimizer=optimizer, observable=k, ours=s[k]["mean"],
                                 sem=s[k]["sem"], reference=ref[k], tol=tol,
                                 ok=abs(s[k]["mean"] - ref[k]) <= tol, converged=int(r.converged.sum()),
                                 seconds=t))
            print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def write_section(text: str) -> None:
    body = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    sec = "## Finite-d training\n\n" + text.strip() + "\n"
    pat = re.compile(r"^## Finite-d training\n.*?(?=^## |\Z)", re.S | re.M)
    body = pat.sub(lambda _: sec + "\n", body) if pat.search(body) else body.rstrip() + "\n\n" + sec
    DOC.write_text(body)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gd-steps-batched", type=int, default=200)
    ap.add_argument("--gd-steps-single", type=int, default=5000)
    ap.add_argument("--eager-steps", type=int, default=50)
    ap.add_argument("--repro-instances", type=int, default=8)
    ap.add_argument("--repro-alphas", default="0.5,1.0,2.0")
    ap.add_argument("--no-repro", action="store_true")
    ap.add_argument("--test-samples", type=int, default=50_000)
    a = ap.parse_args()
    lines = [f"Machine: {platform.machine()} {platform.processor()}, 2 cores shared with other jobs; "
             f"JAX {jax.__version__} ({jax.default_backend()}). `python bench/bench_simulate.py`.", "", PREDICTION, ""]

    ts = a.test_samples
    cfg1 = TrainConfig(optimizer="gd", steps=a.gd_steps_single)
    simulate(P, alpha=ALPHA, d=D, config=TrainConfig(optimizer="gd", steps=1), test_samples=ts)  # warm caches
    r1, t1c = timed(lambda: simulate(P, alpha=ALPHA, d=D, config=cfg1, test_samples=ts))  # incl. compile
    r1b, t1 = timed(lambda: simulate(P, alpha=ALPHA, d=D, config=cfg1, test_samples=ts))  # cached
    cfgb = TrainConfig(optimizer="gd", steps=a.gd_steps_batched)
    simulate(P, alpha=ALPHA, d=D, config=cfgb, instances=24, test_samples=ts)
    _, tb = timed(lambda: simulate(P, alpha=ALPHA, d=D, config=cfgb, instances=24, test_samples=ts))
    te = eager_gd_time(a.eager_steps)
    eager5000 = te / a.eager_steps * 5000
    single_step = t1 / a.gd_steps_single
    batch_per_inst_5000 = tb / 24 / a.gd_steps_batched * 5000
    lb, tl = timed(lambda: simulate(P, alpha=ALPHA, d=D, config=TrainConfig(optimizer="lbfgs"), test_samples=ts))
    lb, tl = timed(lambda: simulate(P, alpha=ALPHA, d=D, config=TrainConfig(optimizer="lbfgs"), test_samples=ts))
    lines += [
        f"### (a) compiled vs eager GD (d = {D}, α = {ALPHA:g}, ω = 0.3, semantic init, {ts} test samples)", "",
        "| variant | measured | per instance, 5000 steps | speed-up vs eager |", "|---|---|---|---|",
        f"| eager loop (no jit), {a.eager_steps} steps, extrapolated ×{5000 // a.eager_steps} | {te:.1f} s | {eager5000:.0f} s | 1× |",
        f"| compiled, 1 instance, {a.gd_steps_single} steps (cached compile; first call {t1c:.1f} s) | {t1:.1f} s | {single_step * 5000:.1f} s | {eager5000 / (single_step * 5000):.0f}× |",
        f"| compiled, 24 instances vmapped, {a.gd_steps_batched} steps, extrapolated to 5000 | {tb:.1f} s | {batch_per_inst_5000:.1f} s | {eager5000 / batch_per_inst_5000:.0f}× |",
        "", "(compiled times include the test-error evaluation; the eager figure is training only.)", "",
        "### (b) 5000-step GD vs L-BFGS (1 instance, same data)", "",
        "| optimizer | time | e_t | ‖∇R‖ | iterations | ε_g |", "|---|---|---|---|---|---|",
        f"| GD, 5000 steps, lr 0.15 | {t1:.1f} s | {r1b.e_t[0]:.8f} | {r1b.grad_norm[0]:.2e} | {r1b.iterations[0]} | {r1b.eps_g[0]:.6f} |",
        f"| L-BFGS (optax, zoom) | {tl:.1f} s | {lb.e_t[0]:.8f} | {lb.grad_norm[0]:.2e} | {lb.iterations[0]} | {lb.eps_g[0]:.6f} |",
        "", f"L-BFGS speed-up {t1 / tl:.1f}×; e_t(L-BFGS) − e_t(GD) = {lb.e_t[0] - r1b.e_t[0]:.2e}.", ""]
    write_section("\n".join(lines + ["Reproduction: running…"]))
    print("\n".join(lines), flush=True)
    if not a.no_repro:
        alphas = [float(x) for x in a.repro_alphas.split(",")]
        df = reproduce(alphas, a.repro_instances, "lbfgs", ts)
        dg = reproduce([alphas[-1]], a.repro_instances, "gd", ts)
        df = pd.concat([df, dg])
        lines += [f"### Reproduction of reference/gd_d1000_omega0.3.csv (d = 1000, ω = 0.3, {a.repro_instances} instances, "
                  "tolerance max(3 combined s.e., 5 %))", "",
                  "| α | init | optimizer | observable | ours | s.e. | reference | tol | ok |", "|---|---|---|---|---|---|---|---|---|"]
        for _, r in df.iterrows():
            lines.append(f"| {r.alpha:g} | {r.init} | {r.optimizer} | {r.observable} | {r.ours:.5g} | {r.sem:.2g} | "
                         f"{r.reference:.5g} | {r.tol:.2g} | {'yes' if r.ok else 'NO'} |")
        lines += ["", f"{int(df.ok.sum())}/{len(df)} within tolerance."]
    write_section("\n".join(lines))
    print("\n".join(lines[-30:]))


if __name__ == "__main__":
    main()
