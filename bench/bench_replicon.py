"""Replicon (de Almeida–Thouless) eigenvalue Λ_AT of the RS fixed points (issue 11, helper hC).

Prediction written before measuring (docs/notes/2026-12-05-theory-general.md, "Replicon stability"): the smooth replicon
Λ_AT is below 1 on the L = 2 branches (their finite-d Hessians have a bulk edge bounded away from 0); on the
L = 3 positional side, the RS state closest to the finite-d glassy band (θ = 0 at the band's M) is the
candidate for Λ_AT ≥ 1.

Cases (σ = 0.5, λ = 0.01, ω = 0.3): L = 2 default, α ∈ {1, 2}, semantic / positional, by the split rule
(orders 8 and 16) and by the QMC engine (4096 × 4) — the two integrators compared in the same run; L = 3,
A = 0.4 I + 0.2 J, P = I, α ∈ {1, 2}, semantic / positional / uninformative (QMC 4096 × 4); L = 2, r = 2,
r* = 1, α ∈ {1, 2}, semantic / positional (QMC 4096 × 4); the L = 3 constrained saddle point at the band's
overlap M = 0.22 (2, −1, −1)/√6, α = 1, θ pinned and θ free (theory.constrained, QMC 1024 × 4 as in
bench_constrained_L3). Output: docs/data/replicon/replicon.json (rows kept; ``--rerun`` recomputes) and the
table block ``replicon`` in docs/notes/2026-12-05-theory-general.md (``--table``).

Usage: python bench/bench_replicon.py [--only L2,L3,L2r2,constrained] [--rerun]; python bench/bench_replicon.py --table
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from attnphase.model import ModelParams
from attnphase.theory import replicon as RP
from attnphase.theory.constrained import ThetaMode, solve_constrained
from attnphase.theory.engine import QMCConfig, solve
from attnphase.theory.solver import solve_point

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docblock import write_block  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "data" / "replicon" / "replicon.json"
DOC = ROOT / "docs" / "notes" / "2026-12-05-theory-general.md"
A3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
STRUCT = {"L2": ModelParams(), "L3": ModelParams(L=3, A=A3), "L2r2": ModelParams(r=2)}
CFG = QMCConfig(points=4096, scrambles=4)
CFG_CONSTRAINED = QMCConfig(points=1024, scrambles=4)
M_BAND = 0.22


def _load() -> dict:
    return json.loads(OUT.read_text()) if OUT.exists() else {}


def _save(rows: dict) -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(rows, indent=1, default=float))


def _plain(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "matrix"}


def split_row(alpha: float, branch: str) -> dict:
    s = solve_point(STRUCT["L2"], alpha, branch, stability=False)
    rec = RP.replicon_split(s)
    return {"status": s.status, "q": s.q, "m": s.m, "theta": s.theta, "V": s.V, **_plain(rec)}


def qmc_row(name: str, alpha: float, branch: str) -> dict:
    s = solve(STRUCT[name], alpha, branch, qmc_config=CFG)
    rec = RP.replicon(s)
    v = s.values if s.values else {}
    return {"status": s.status.value, **{k: float(v.get(k, math.nan)) for k in ("q", "m", "theta", "V", "e_t")},
            **_plain(rec)}


CFG_RESAMPLE = QMCConfig(points=16384, scrambles=4, seed=100)


def resampled_row(name: str, alpha: float, branch: str) -> dict:
    """Λ_AT at the per-scramble states of the 4096 × 4 solve, each integrated on a fresh, 4× larger scramble
    (seeds 100–103, 16384 points): the heavy tail of ‖J‖² (docs) needs more samples than the fixed point."""
    s = solve(STRUCT[name], alpha, branch, qmc_config=CFG)
    if s.status.value not in ("converged", "collapsed"):
        return {"status": s.status.value, "value": math.nan, "error": math.nan, "reason": "no fixed point"}
    rec = RP.replicon_states(STRUCT[name], alpha, s.scramble_x, CFG_RESAMPLE)
    return {"status": s.status.value, **{k: float(s.values[k]) for k in ("q", "m", "theta", "V", "e_t")},
            **_plain(rec)}


def constrained_row(mode: ThetaMode, m: float = M_BAND, cfg_replicon: QMCConfig = CFG_CONSTRAINED) -> dict:
    """The L = 3 constrained saddle point at M = m (2, −1, −1)/√6, α = 1 (1024 × 4), and Λ_AT at its
    per-scramble states on ``cfg_replicon``'s points (its own points by default)."""
    u = np.array([2.0, -1.0, -1.0]) / math.sqrt(6.0)
    kw = {"theta_seed": 0.02 * 0.25} if mode is ThetaMode.FREE else {}
    (s,) = solve_constrained(STRUCT["L3"], 1.0, [m * u[None, :]], theta=mode, qmc_config=CFG_CONSTRAINED,
                             **kw)
    if not s.converged:
        return {"status": s.status.value, "value": math.nan, "error": math.nan, "reason": "not converged"}
    rec = RP.replicon_states(STRUCT["L3"], 1.0, s.per_scramble["state"], cfg_replicon)
    return {"status": s.status.value, **{k: float(s.values[k]) for k in ("q", "m", "theta", "V", "e_t")},
            **_plain(rec)}


def jobs(only: set[str]):
    for name in ("L2",):
        if name in only:
            for a in (1.0, 2.0):
                for br in ("semantic", "positional"):
                    yield f"split|L2|{a:g}|{br}", lambda a=a, br=br: split_row(a, br)
                    yield f"qmc|L2|{a:g}|{br}", lambda a=a, br=br: qmc_row("L2", a, br)
    if "L3" in only:
        for a in (1.0, 2.0):
            for br in ("semantic", "positional", "uninformative"):
                yield f"qmc|L3|{a:g}|{br}", lambda a=a, br=br: qmc_row("L3", a, br)
    if "resampled" in only:
        for a in (1.0, 2.0):
            yield f"qmc 16384|L3|{a:g}|uninformative", lambda a=a: resampled_row("L3", a, "uninformative")
        yield "qmc 16384|L2|1|semantic", lambda: resampled_row("L2", 1.0, "semantic")
        for m in (0.1, M_BAND):
            yield (f"constrained 16384|L3|1|theta pinned, M = {m:g}",
                   lambda m=m: constrained_row(ThetaMode.PINNED, m, CFG_RESAMPLE))
    if "L2r2" in only:
        for a in (1.0, 2.0):
            for br in ("semantic", "positional"):
                yield f"qmc|L2r2|{a:g}|{br}", lambda a=a, br=br: qmc_row("L2r2", a, br)
    if "L2r2resampled" in only:
        yield "qmc 16384|L2r2|1|positional", lambda: resampled_row("L2r2", 1.0, "positional")
    if "L2r2free" in only:            # the mixed point: where the r = 2 finite-d minimisers go (acceptance)
        for a in (1.0, 2.0):
            yield f"qmc|L2r2|{a:g}|free (mixed)", lambda a=a: qmc_row("L2r2", a, "free")
    if "constrained" in only:
        yield "constrained|L3|1|theta pinned, M = 0.22", lambda: constrained_row(ThetaMode.PINNED)
        yield "constrained|L3|1|theta free, M = 0.22", lambda: constrained_row(ThetaMode.FREE)


def _f(v, digits=3):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}g}"


def table(rows: dict) -> str:
    out = ["<!-- replicon:begin (generated by bench/bench_replicon.py --table) -->",
           "| integrator | model | α | branch | status | q | m | θ | V | Λ_AT (smooth) | stable | two-basin fraction "
           "| κ at gap windows ε σ², ε = 1e-2, 3e-3, 1e-3 (Λ_jump = β κ, β of exp(−βR)) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in rows.items():
        integ, model, a, br = key.split("|")
        lam = f"{_f(r.get('value'), 4)} ± {_f(r.get('error'), 2)}"
        jump = ", ".join(f"{_f(j, 2)} ± {_f(e, 1)}" for j, e in zip(r.get("jump", []), r.get("jump_err", []))) \
            or "—"
        out.append(f"| {integ} | {model} | {a} | {br} | {r.get('status')} | {_f(r.get('q'), 4)} | {_f(r.get('m'), 3)} "
                   f"| {_f(r.get('theta'), 3)} | {_f(r.get('V'), 4)} | {lam} | {r.get('stable')} "
                   f"| {_f(r.get('two_basin'), 2)} | {jump} |")
    out += ["", *hessian_table(rows), "<!-- replicon:end -->"]
    return "\n".join(out)


THEORY_OF = {"L2a2sem": "split|L2|2|semantic", "L2a2pos": "split|L2|2|positional", "L2a1sem": "split|L2|1|semantic",
             "L3a1sem": "qmc|L3|1|semantic", "L3a1pos": "constrained 16384|L3|1|theta pinned, M = 0.22"}
"""The RS point each finite-d case is compared with (the L = 3 band has no RS fixed point: the θ = 0 sector's
constrained saddle point at the band's M = 0.22)."""


def hessian_table(rows: dict) -> list[str]:
    """Finite-d traces of the inverse Hessian (bench_replicon_hessian.py) against the theory's V and Λ_AT."""
    path = OUT.parent / "hessian_traces.json"
    if not path.exists():
        return []
    out = ["| case | d | instance | m | θ | e_t | λ_min | t₁ = (σ²/d) tr H⁻¹ | theory V | Λ_d = 1 − t₁²/t₂ "
           "| Λ_d without λ_min (its share of t₂) | theory Λ_AT |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = list(THEORY_OF)
    for h in sorted(json.loads(path.read_text()), key=lambda h: (order.index(h["case"]), h["d"], h["instance"])):
        th = rows.get(THEORY_OF.get(h["case"], ""), {})
        s2 = 0.25                      # σ² of every case (σ = 0.5)
        low2 = s2 * s2 / h["d"] / h["lam_min"] ** 2
        t1, t2 = h["t1_V"] - s2 / h["d"] / h["lam_min"], h["t2"] - low2
        out.append(f"| {h['case']} | {h['d']} | {h['instance']} | {h['m']:.3f} | {h['theta']:.3f} | {h['e_t']:.6f} "
                   f"| {h['lam_min']:.2e} | {h['t1_V']:.2f} | {_f(th.get('V'), 4)} | {h['Lambda_d']:.3f} "
                   f"| {1 - t1 * t1 / t2:.3f} ({low2 / h['t2']:.2f}) "
                   f"| {_f(th.get('value'), 3)} ± {_f(th.get('error'), 2)} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="L2,L3,L2r2,constrained")
    ap.add_argument("--rerun", action="store_true")
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args()
    rows = _load()
    if a.table:
        text = table(rows)
        print(text)
        write_block(DOC, "replicon", text)
        return
    for key, job in jobs(set(a.only.split(","))):
        if key in rows and not a.rerun:
            continue
        t = time.time()
        try:
            rows[key] = {**job(), "wall_s": time.time() - t}
        except Exception as exc:  # noqa: BLE001 - recorded, never a silent number
            rows[key] = {"status": "error", "reason": f"{type(exc).__name__}: {exc}", "wall_s": time.time() - t}
        print(key, {k: rows[key].get(k) for k in ("status", "value", "error", "two_basin", "jump", "wall_s")},
              flush=True)
        _save(rows)


if __name__ == "__main__":
    main()
