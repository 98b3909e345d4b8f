"""Where simulate's time goes at d = 1000, α = 1 (issue 34): the stages of one instance, each jit-compiled
alone and timed (best of a few), against simulate's own per-instance time (two instance counts, marginal).

    PYTHONPATH=src python bench/investigations/profile_simulate_d1000.py [--instances 8 24] [--init semantic]
"""
from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from attnphase import baseline as bl
from attnphase.data import n_samples
from attnphase.finite_d_error import integrate, project
from attnphase.model import ModelParams
from attnphase.attention import empirical_risk, empirical_risk_from_statistics, risk_statistics
from attnphase.simulate import (TrainConfig, _draw, _gradient_descent, _initial_Q, _knobs, _structure,
                                _train_lbfgs, instance_keys, simulate)


def best(fn, *a, reps=3):
    """Least CPU time (process, all threads) of ``reps`` calls after one warm call; the last result."""
    out = jax.block_until_ready(fn(*a))
    ts = []
    for _ in range(reps):
        t = time.process_time()
        out = jax.block_until_ready(fn(*a))
        ts.append(time.process_time() - t)
    return min(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=1.0)
    ap.add_argument("--instances", type=int, nargs=2, default=[8, 24])
    ap.add_argument("--init", default="semantic")
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--alpha-costs", default="", help="comma-separated α: CPU s per student at each (both inits, "
                    "24 instances, compiled beforehand) and their trapezoid mean over [min, max]; then exit")
    a = ap.parse_args()
    print("load", os.getloadavg(), "XLA_FLAGS", os.environ.get("XLA_FLAGS"))
    P = ModelParams(omega=0.3)
    if a.alpha_costs:
        alphas = [float(x) for x in a.alpha_costs.split(",")]
        per, comp = [], []
        for al in alphas:
            cpu = 0.0
            for init in ("semantic", "positional"):
                c0 = time.process_time()
                simulate(P, alpha=al, d=a.d, config=TrainConfig(init=init, optimizer="lbfgs"), instances=24, seed=7)
                c1 = time.process_time()
                simulate(P, alpha=al, d=a.d, config=TrainConfig(init=init, optimizer="lbfgs"), instances=24)
                cpu += time.process_time() - c1
                if init == "semantic":  # the first call of a shape compiles (the init is traced: no recompilation)
                    comp.append(c1 - c0 - (time.process_time() - c1))
            per.append(cpu / 48)
            print(f"alpha {al}: {per[-1]*1e3:.0f} ms CPU per student (both inits); load {os.getloadavg()[0]:.1f}",
                  flush=True)
        mean = np.trapezoid(per, alphas) / (alphas[-1] - alphas[0])
        print(f"trapezoid mean over α: {mean*1e3:.0f} ms CPU per student; compilation ≈ {np.mean(comp):.1f} CPU-s "
              f"per shape (first call − compiled call)")
        return
    d, n = a.d, n_samples(a.alpha, a.d)
    cfg = TrainConfig(init=a.init, optimizer="lbfgs")
    if a.stages:
        kn = _knobs(P, cfg, jnp.float32)
        st = _structure(P)
        key = instance_keys(0, 1)[0]
        draw = jax.jit(lambda k, kn: _draw(k, st, d, n, kn, jnp.float32))
        t, inst = best(draw, key, kn)
        print(f"draw (teacher, X, Y)        {t*1e3:8.1f} ms")
        stats_f = jax.jit(risk_statistics)
        t, stats = best(stats_f, inst.X, inst.Y, inst.p)
        print(f"risk_statistics             {t*1e3:8.1f} ms")
        Q0 = _initial_Q(inst.key_init, kn["init_index"], kn["init_scale"], inst.Q_star, 1, d, jnp.float32)
        risk = lambda Q, s: empirical_risk_from_statistics(Q, s, kn["lam"])
        g1 = jax.jit(jax.value_and_grad(risk))
        t, _ = best(g1, Q0, stats, reps=20)
        print(f"one value_and_grad          {t*1e3:8.3f} ms")
        warm = jax.jit(lambda Q, s: _gradient_descent(lambda q: risk(q, s), Q, kn["warmup_steps"], kn["lr"]))
        t, Qw = best(warm, Q0, stats)
        print(f"60 GD warm-up steps         {t*1e3:8.1f} ms")
        nfev = [0]
        lb = jax.jit(lambda Q, s: _train_lbfgs(lambda q: risk(q, s), Q, dict(kn, warmup_steps=jnp.asarray(0))))
        t, (Q, it, gn, status) = best(lb, Qw, stats)
        print(f"L-BFGS from warm start      {t*1e3:8.1f} ms  ({int(it)} iterations, {t*1e3/max(1,int(it)):.2f} ms/it)")
        er = jax.jit(lambda Q, X, Y, p: empirical_risk(Q, X, Y, p, kn["lam"]))
        t, _ = best(er, Q, inst.X, inst.Y, inst.p)
        print(f"reference e_t               {t*1e3:8.1f} ms")
        fl = jax.jit(bl.fit_linear)
        t, B = best(fl, inst.X, inst.Y)
        print(f"fit_linear                  {t*1e3:8.1f} ms")
        pr = jax.jit(project)
        t, proj = best(pr, Q, inst.Q_star, inst.p, inst.u)
        print(f"project                     {t*1e3:8.1f} ms")
        ig = jax.jit(lambda pr, B: integrate(pr, B, kn["sigma"], kn["omega"], kn["A"], kn["xi"]))
        t, _ = best(ig, proj, B)
        print(f"integrate (QMC)             {t*1e3:8.1f} ms")
    # simulate itself: compile + two instance counts
    t0 = time.perf_counter()
    simulate(P, alpha=a.alpha, d=d, config=cfg, instances=a.instances[0])
    t_first = time.perf_counter() - t0
    walls, cpus = [], []
    for k in a.instances:
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(P, alpha=a.alpha, d=d, config=cfg, instances=k)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    dk = a.instances[1] - a.instances[0]
    marg, cmarg = (walls[1] - walls[0]) / dk, (cpus[1] - cpus[0]) / dk
    print(f"simulate: first call {t_first:.2f} s (compile + run), {a.instances[0]}: {walls[0]:.2f} s, "
          f"{a.instances[1]}: {walls[1]:.2f} s wall; marginal {marg*1e3:.0f} ms wall, {cmarg*1e3:.0f} ms CPU "
          f"per instance (2 cores busy: {2/cmarg:.2f}/s); its mean {r.iterations.mean():.0f}; "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
