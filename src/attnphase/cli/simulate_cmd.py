"""``attnphase simulate`` (finite-d training, MODEL.md §4) and ``attnphase baseline`` (MODEL.md §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import (AOpt, JsonOpt, LamOpt, LOpt, OmegaOpt, POpt, ROpt, RStarOpt, SigmaOpt, check_output_path,
                      console, emit_json, model_params, print_table, with_stamp, write_atomic)


@app.command()
def simulate(
    alpha: float = typer.Option(2.0, "--alpha", help="Sample complexity α = n/d > 0."),
    omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt,
    d: int = typer.Option(200, "--d", help="Dimension d >= 2 (paper: 1000)."),
    L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, A: Optional[str] = AOpt, P: Optional[str] = POpt,
    init: str = typer.Option("semantic", "--init", help="semantic | positional | random."),
    optimizer: str = typer.Option("gd", "--optimizer", help="gd | lbfgs."),
    instances: int = typer.Option(4, "--instances", help="Independent teacher/data instances."),
    seed: int = typer.Option(0, "--seed", help="Base seed >= 0 (instance i uses fold_in(key(seed), i))."),
    test_error: str = typer.Option("exact", "--test-error", help="exact (ε_g by a low-dimensional QMC rule, "
                                   "docs/finite_d.md §1) | sampled (--test-samples fresh samples)."),
    test_samples: int = typer.Option(50_000, "--test-samples", help="Fresh test samples for ε_g (--test-error "
                                     "sampled)."),
    steps: int = typer.Option(5000, "--steps", help="GD iterations (optimizer gd)."),
    lr: float = typer.Option(0.15, "--lr", help="GD step on R(Q) (gd, and the warm-up of lbfgs)."),
    gtol: float = typer.Option(1e-6, "--gtol", help="lbfgs: stop when ‖∇R‖ <= gtol·max(1, ‖∇R‖ after warm-up)."),
    max_iter: int = typer.Option(2000, "--max-iter", help="lbfgs: at most this many iterations."),
    warmup_steps: int = typer.Option(60, "--warmup-steps", help="lbfgs: GD steps before L-BFGS."),
    init_scale: float = typer.Option(0.1, "--init-scale", help="Std of the entries of the random start (> 0)."),
    x64: bool = typer.Option(False, "--x64", help="Train in float64 (default float32)."),
    as_json: bool = JsonOpt,
    out: Optional[Path] = typer.Option(None, "--out", help="Write one row per instance to this CSV "
                                       "(with parameters, version and git commit)."),
) -> None:
    """Train the attention student at finite d (full-batch GD or L-BFGS) and report order parameters.

    Any L, r, r*, A and P (MODEL.md §2, §4), e.g. ``--L 3 --r 2 --A "0.5,0.25,0.25;0.25,0.5,0.25;0.25,0.25,0.5"``.
    """
    from ..errors import ParameterError, check_range
    from ..guards import check_simulation
    params = model_params(L, r, sigma, lam, omega, A, r_star=r_star, P=P)
    check_range("--init-scale", init_scale, lo=0.0, lo_open=True)
    if test_error not in ("exact", "sampled"):
        raise ParameterError("--test-error", "exact or sampled", test_error)
    check_simulation(params.L, params.r, params.r_star, params.k, alpha=alpha, d=d, instances=instances, seed=seed,
                     steps=steps, max_iter=max_iter, warmup_steps=warmup_steps, test_samples=test_samples, x64=x64,
                     test_error=test_error)
    from ..simulate import TrainConfig, simulate as run     # JAX loads only once the sizes are accepted
    cfg = TrainConfig(init=init, optimizer=optimizer, lr=lr, steps=steps, gtol=gtol, max_iter=max_iter,
                      warmup_steps=warmup_steps, x64=x64, init_scale=init_scale)
    if out is not None:
        out = check_output_path(out)
    with console.status(f"simulate: {instances} instance(s), d={d}, α={alpha:g}, {optimizer} ...") as st:
        res = run(params, alpha=alpha, d=d, config=cfg, instances=instances, seed=seed,
                  test_samples=test_samples, test_error=test_error, progress=lambda m: st.update(f"simulate: {m}"))
    if out is not None:
        frame = res.to_frame()
        if "P" not in frame:
            frame.insert(frame.columns.get_loc("A") + 1, "P", str([list(p) for p in params.P]))
        write_atomic(out, lambda tmp: with_stamp(frame).to_csv(tmp, index=False))
        console.print(f"wrote {out}")
    unconverged = int((~res.converged.astype(bool)).sum())
    if as_json:
        emit_json(res.to_dict())
        if unconverged:
            console.print(f"warning: {unconverged} of {res.instances} instance(s) did not converge "
                          f"(statuses: {', '.join(sorted(set(map(str, res.status[~res.converged.astype(bool)]))))}; "
                          "'converged' and 'status' in the JSON)")
        return
    s = res.summary()
    keys = ["m", "theta_over_sigma2", "q", "e_t", "eps_g", "eps_lin", "grad_norm", "converged"]
    rows = [[i] + [getattr(res, k)[i] for k in keys] for i in range(res.instances)]
    rows.append(["mean"] + [s[k]["mean"] for k in keys])
    rows.append(["sem"] + [s[k]["sem"] for k in keys])
    print_table(f"simulate d={d} α={alpha:g} ω={omega:g} L={L} r={r} init={init} {optimizer}",
                ["instance"] + keys, rows)
    if not bool(res.converged.all()):
        console.print(f"warning: {int((~res.converged.astype(bool)).sum())} of {res.instances} instance(s) "
                      "did not converge (column 'converged')")


@app.command()
def baseline(
    omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt,
    L: int = LOpt, A: Optional[str] = AOpt,
    nodes: int = typer.Option(80, "--nodes", help="Gauss–Hermite nodes per dimension (L=2)."),
    as_json: bool = JsonOpt,
) -> None:
    """Population test error ε_lin of the optimal linear positional baseline (MODEL.md §5)."""
    from ..errors import check_int
    from ..guards import baseline_bytes, check_memory
    params = model_params(L, 1, sigma, lam, omega, A)
    check_int("nodes", nodes, 2)
    check_memory("nodes" if L == 2 else "L", nodes if L == 2 else L, baseline_bytes(L, 1, nodes, 400_000),
                 f"the baseline's {'quadrature' if L == 2 else 'Monte Carlo'} at L={L}")
    from ..baseline import eps_lin          # JAX loads only once the input is accepted
    from ..provenance import provenance
    e = eps_lin(params, nodes=nodes)
    if as_json:
        emit_json({"eps_lin": e, "params": params.to_dict(),
                   "provenance": provenance({"params": params.to_dict(), "nodes": nodes})})
        return
    print_table("linear baseline", ["omega", "sigma", "L", "eps_lin"], [[omega, sigma, L, e]])
