"""Tables from a sweep's store (export) and the simulation-vs-theory comparison (``attnphase compare``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..outputs import write_atomic
from .spec import Sweep
from .store import Store

QUANTITIES = ("m", "theta", "eps_g", "e_t")


def _flat_config(cfg: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {}
    for k, v in (cfg.get("model") or {}).items():
        row[k] = json.dumps(v) if isinstance(v, (list, dict)) else v
    row.update(cfg.get("params") or {})
    for k in ("seed", "instances", "version"):
        if k in cfg:
            row[k] = cfg[k]
    return row


def frame(sweep: Sweep, per_instance: bool = True) -> pd.DataFrame:
    """One row per task instance (simulate) or per task (theory, baseline, failed tasks) of the sweep file."""
    with Store(sweep.db_path, read_only=True) as store:     # missing / corrupt: one-line ParameterError
        rows = store.rows(sweep.keys)
    out = []
    for r in rows:
        base = {"key": r["key"], "kind": r["kind"], "status": r["status"], **_flat_config(r["config"]),
                "task_converged": None if r["converged"] is None else bool(r["converged"]),
                "wall_s": r["wall_s"], "git": r["git"], "git_dirty": _dirty(r["provenance"]),
                "attempts": r["attempts"],
                "error": (r["error"] or "").splitlines()[0] if r["error"] else None}
        res = r["result"] or {}
        base.update({(f"result_{k}" if k in base else k): v for k, v in (res.get("scalars") or {}).items()})
        per = {(f"result_{k}" if k in base else k): v for k, v in (res.get("per_instance") or {}).items()}
        if per and per_instance:
            n = max(len(v) for v in per.values())
            for i in range(n):
                out.append({**base, "instance": i, **{k: v[i] if i < len(v) else None for k, v in per.items()}})
        else:
            out.append(base)
    return pd.DataFrame(out)


def _dirty(prov: Any) -> bool | None:
    env = (prov or {}).get("environment") or {}
    return env.get("git_dirty")


def export(sweep: Sweep, fmt: str = "csv", out: str | Path | None = None) -> Path:
    """Write :func:`frame` to ``out`` (default ``<output>/results.<fmt>``), atomically; returns the path.
    Each row carries its task's version (``version``), git commit (``git``) and dirty flag (``git_dirty``)."""
    if fmt not in ("csv", "parquet"):
        raise ParameterError("format", "one of {csv, parquet}", fmt)
    path = Path(out) if out else sweep.output / f"results.{fmt}"
    df = frame(sweep)
    if df.empty:
        raise ParameterError("sweep store", "a store with results for this sweep file (none of its tasks "
                             "has run yet)", str(sweep.db_path))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: df.to_csv(tmp, index=False) if fmt == "csv" else df.to_parquet(tmp, index=False))
    return path


_MATCH = ("alpha", "omega", "L", "r", "r_star", "sigma", "lam", "A", "P")


def compare(sweep: Sweep, out_dir: str | Path | None = None, figures: bool = True,
            sim_kinds: tuple[str, ...] = ("simulate",),
            theory_kinds: tuple[str, ...] = ("theory",), finite_d: bool = True) -> tuple[pd.DataFrame, Path]:
    """Simulation mean ± standard error against theory (branch = initialisation) per parameter point.

    Writes ``compare.csv`` and one figure per initialisation (``compare_<init>.png``) to ``out_dir``
    (default ``<output>/compare``). Deviation = (mean − theory) / standard error. |m| and |θ| are used.
    Simulations at different ``d`` are separate rows. ``finite_d``: ε_g and e_t are compared with the theory at
    the simulation's d (``{q}_theory_at_d``: the d → ∞ ``{q}_theory`` plus its O(1/d) term,
    :func:`attnphase.theory.finite_size.record`, with ``{q}_coef``) where the theory row carries its state
    (q, m, θ, V); ``{q}_dev_se`` is then against that value.
    """
    df = frame(sweep)
    if df.empty or "kind" not in df:
        raise ParameterError("compare", "a sweep with finished simulate and theory tasks", "no results")
    sim = df[df.kind.isin(sim_kinds) & (df.status == "done")].copy()
    th = df[df.kind.isin(theory_kinds) & (df.status == "done")].copy()
    if sim.empty or th.empty:
        raise ParameterError("compare", "finished simulate and theory tasks in the sweep",
                             f"{len(sim)} simulation rows, {len(th)} theory rows")
    for q in ("m", "theta"):
        for d in (sim, th):
            if q in d:
                d[q] = d[q].abs()
    keys = [k for k in _MATCH if k in sim and k in th]
    group = keys + ["init"] + (["d"] if "d" in sim else [])
    rows, cache = [], {}
    for gkey, g in sim.groupby(group, dropna=False):
        rec = dict(zip(group, gkey))
        rec["branch"] = rec["init"] if rec["init"] in ("semantic", "positional") else None
        rec["n"] = len(g)
        cand = th[th.branch == rec["branch"]] if rec["branch"] else th.iloc[0:0]
        for k in keys:
            cand = cand[np.isclose(cand[k], rec[k])] if isinstance(rec[k], float) else cand[cand[k] == rec[k]]
        t = cand.iloc[0] if len(cand) else None
        rec["theory_converged"] = None if t is None else bool(t.get("task_converged"))
        at_d = _at_dimension(t, rec.get("d"), cache) if finite_d else {}
        rec.update({f"{q}_{c}": at_d.get(f"{q}_{c}", math.nan) for q in ("eps_g", "e_t")
                    for c in ("theory_at_d", "coef")} if finite_d else {})
        for q in QUANTITIES:
            vals = pd.to_numeric(g[q], errors="coerce").dropna() if q in g else pd.Series([], dtype=float)
            mean = float(vals.mean()) if len(vals) else math.nan
            se = float(vals.std(ddof=1) / math.sqrt(len(vals))) if len(vals) > 1 else math.nan
            tv = float(t[q]) if t is not None and q in t and pd.notna(t[q]) else math.nan
            rec[f"{q}_sim_mean"], rec[f"{q}_sim_se"], rec[f"{q}_theory"] = mean, se, tv
            tv = at_d.get(f"{q}_theory_at_d", tv)
            rec[f"{q}_dev_se"] = (mean - tv) / se if se and se > 0 and not math.isnan(tv) else math.nan
        rows.append(rec)
    table = pd.DataFrame(rows).sort_values(["init", "omega", "alpha"]).reset_index(drop=True)
    out = Path(out_dir) if out_dir else sweep.output / "compare"
    out.mkdir(parents=True, exist_ok=True)
    from ..provenance import stamp
    table = table.assign(**stamp())
    write_atomic(out / "compare.csv", lambda tmp: table.to_csv(tmp, index=False))
    if figures:
        _figures(table, th, out)
    return table, out


_STATE = ("q", "m", "theta", "V")


def _at_dimension(t, d, cache: dict) -> dict[str, float]:
    """``eps_g_theory_at_d``, ``e_t_theory_at_d`` and their coefficients for the theory row ``t`` at the
    simulation's dimension ``d`` (:func:`attnphase.theory.finite_size.record` on the row's r = r* = k = 1
    state and model, at a reduced QMC size; cached per row); empty where the row has no state or d is unknown."""
    if t is None or d is None or not all(k in t and pd.notna(t[k]) for k in _STATE + ("eps_g", "e_t")):
        return {}
    key = (t["key"], int(d))
    if key not in cache:
        from ..model import ModelParams
        from ..theory import finite_size as FS
        model = {k: json.loads(t[k]) if isinstance(t[k], str) and k in ("A", "P") else t[k]
                 for k in ("L", "r", "r_star", "sigma", "lam", "omega", "A", "P") if k in t and _present(t[k])}
        params = ModelParams(**model)
        if (params.L, params.r, params.r_star, params.k) != (2, 1, 1, 1):
            cache[key] = {}
        else:
            rec = FS.record(params, float(t["alpha"]), FS.from_scalars(*(float(t[k]) for k in _STATE)), int(d),
                            {"eps_g": float(t["eps_g"]), "e_t": float(t["e_t"])}, points=2 ** 12, scrambles=4)
            cache[key] = {f"{q}_{c}": rec[f"{q}_{src}"] for q in ("eps_g", "e_t")
                          for c, src in (("theory_at_d", "at_d"), ("coef", "coef"))}
    return cache[key]


def _present(v) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _figures(table: pd.DataFrame, th: pd.DataFrame, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    omegas = sorted(table.omega.unique())
    if len(omegas) > 6:   # a readable subset of ω
        omegas = [omegas[i] for i in np.linspace(0, len(omegas) - 1, 6).round().astype(int)]
    for init, tab in table.groupby("init"):
        fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
        for j, om in enumerate(omegas):
            sub = tab[np.isclose(tab.omega, om)].sort_values("alpha")
            color = f"C{j}"
            branch = sub.branch.iloc[0] if len(sub) else None
            tcurve = th[(th.branch == branch) & np.isclose(th.omega, om)].sort_values("alpha") \
                if branch else th.iloc[0:0]
            for ax, q in zip(axes, QUANTITIES):
                ax.errorbar(sub.alpha, sub[f"{q}_sim_mean"], yerr=sub[f"{q}_sim_se"], fmt="o", ms=3,
                            color=color, label=f"ω={om:g} sim" if q == "m" else None)
                if len(tcurve) and q in tcurve:
                    ax.plot(tcurve.alpha, tcurve[q], "-", color=color,
                            label=f"ω={om:g} theory" if q == "m" else None)
        for ax, q in zip(axes, QUANTITIES):
            ax.set_xlabel("α")
            ax.set_title({"m": "|m|", "theta": "|θ|", "eps_g": "ε_g", "e_t": "e_t"}[q])
        axes[0].legend(fontsize=7)
        fig.suptitle(f"init = {init} (theory branch = {init})")
        fig.tight_layout()
        fig.savefig(out / f"compare_{init}.png", dpi=110)
        plt.close(fig)
