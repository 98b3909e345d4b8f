"""``attnphase theory point`` and ``attnphase theory curve``: fixed points of MODEL.md §6 (split or product rule,
L = 2, r = 1) and §8 (the general QMC engine, any L, r, r*, A, P)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..errors import NotConvergedError, ParameterError
from ..guards import check_theory
from ._common import QMC_OPTIONS, as_option
from ._common import AOpt, LamOpt, LOpt, OmegaOpt, ROpt, SigmaOpt, check_output_path, check_theory_request, \
    console, emit_json, model_params, parse_linspace, parse_list, parse_matrix, print_table, with_stamp, write_atomic
from .theory_cmd import theory_app

_KEYS = ["q", "m", "V", "theta", "q_hat", "m_hat", "V_hat", "theta_hat", "eps_g", "e_t", "converged",
         "iterations", "residual", "status", "stability", "stable", "nodes", "rule"]
NODES_HELP = ("Resolution: Gauss-Hermite order in the smooth directions of the split-line rule, 4x as many "
              "panels across the switching set (even; default 8, raised to 16/24/32 where the student's q "
              "exceeds 0.7/1.3/2; 4 is ~4x cheaper, ~1e-4 accurate at sigma = 0.5). With --rule "
              "product: order per dimension of the plain product rule.")
RULE_HELP = "split (integration split at the basin switches, default) or product (plain Gauss-Hermite)."
INTEGRATOR_HELP = ("auto (split for L=2, r=r*=1, P=(1,-1)ᵀ; qmc otherwise), split, product (both only there), "
                   "or qmc (scrambled Sobol, any L, r, r*, A, P; MODEL.md §8).")
RStarOpt = typer.Option(1, "--r-star", help="Teacher rank r* >= 1.")
POpt = typer.Option(None, "--P", help="Positional-encoding coefficients, L x k, rows ';'-separated "
                    "(default \"1;-1\" for L=2, the identity otherwise).")
IntegratorOpt = typer.Option("auto", "--integrator", help=INTEGRATOR_HELP)
QmcOpt = typer.Option(None, "--qmc-points", help="Sobol points per scramble (power of two; default 4096, "
                      "grown by the error control unless a size is given).")
ScramblesOpt = typer.Option(None, "--scrambles", help="Independent QMC scrambles (>= 2; default 4): the error "
                            "bars are their standard error.")
TargetOpt = typer.Option(None, "--qmc-target", help="Error control: grow the QMC size (scrambles up to 8, "
                         "points up to 65536) until every relative standard error is below this (default 5e-3/3 "
                         "without --qmc-points/--scrambles, else 0 = fixed size).")
DimOpt = typer.Option(None, "--d", help="Also report eps_g and e_t at this dimension d (integer in [2, 1e9]): the "
                      "d → ∞ values plus their O(1/d) terms (eps_g_at_d, e_t_at_d, coefficients eps_g_coef, "
                      "e_t_coef with errors; attnphase.theory.finite_size, docs/guides/finite_d_theory.md).")


def _params(L, r, r_star, sigma, lam, omega, A, P):
    params = model_params(L, r, sigma, lam, omega, A, r_star)
    return params if P is None else params.replace(P=parse_matrix("P", P))


def _route(params, integrator: str, rule: str | None, nodes=None, qmc_points=None, scrambles=None,
           qmc_target=None) -> str:
    """The integrator, refusing the other integrator's resolution options (one of them given for nothing would
    be dropped silently: ``--nodes`` at L = 3, ``--qmc-points`` on the split rule)."""
    from ..theory.solve import choose
    how = choose(params, integrator, rule=rule, name="--integrator")
    if how == "qmc":
        for name, value in (("--nodes", nodes), ("--rule", rule)):
            if value is not None:
                raise ParameterError(name, "unset with the QMC engine (L != 2, r != 1, r* != 1, P != (1, -1)ᵀ or "
                                     "--integrator qmc); its resolution is --qmc-points/--scrambles/--qmc-target",
                                     value)
    else:
        for name, value in (("--qmc-points", qmc_points), ("--scrambles", scrambles), ("--qmc-target", qmc_target)):
            if value is not None:
                raise ParameterError(name, f"unset with the {how} rule (its resolution is --nodes); "
                                     "--integrator qmc uses the QMC options", value)
    return how


def _qmc_config(qmc_points, scrambles, target=None):
    from ..theory.engine import QMCConfig
    kw = {} if target is None else {"target": target}
    if qmc_points is None and scrambles is None and target is None:
        return QMCConfig.default()
    if qmc_points is not None:
        kw["points"] = qmc_points
    if scrambles is not None:
        kw["scrambles"] = scrambles
    try:
        return QMCConfig(**kw)
    except ParameterError as exc:
        raise as_option(exc, QMC_OPTIONS) from None


def zero_point_note(params, alpha: float, branch: str, e_t: float, growth: float | None,
                    closed_form: dict | None = None) -> str:
    """One line for a solution at the q = 0 point (:mod:`attnphase.theory.zero_point`): what it is, its stability
    (``growth``: the largest growth factor there; None where the closed form does not apply), and below which λ
    a positional / semantic branch leaves it (growth factor 1 against m, θ; closed form, any L, r, r*, A, P
    with L·r* ≤ 6). ``closed_form`` (the engine's ``significance["closed_form"]``): the closed-form V and e_t,
    quoted next to the QMC values, with their integration error where the record has it. Used by the split rule
    and by the engine (``significance["zero_q"]``)."""
    import math

    from ..theory.zero_point import branch_onsets
    closed = _closed_form_applies(params)
    what = (f"the {branch} branch collapses to q = 0 here" if branch in ("semantic", "positional")
            else f"the {branch} point is q = 0 here")
    if growth is None or not math.isfinite(growth):
        st = ("stability unknown" if closed else
              "stability at q = 0 not evaluated (closed form only for L·r* ≤ 6)")
    else:
        st = ("stable against every student direction" if growth <= 1.0 else "UNSTABLE (a saddle)") + \
            f" (largest growth factor {growth:.3g})"
    err = (closed_form or {}).get("integration_error") or {}
    cf = (f" (closed form: e_t = {closed_form['e_t']:.6g}" + (f" ± {err['e_t']:.1g}" if err else "")
          + f", V = {closed_form['V']:.7g}" + (f" ± {err['V']:.1g}" if err else "")
          + (f"; product Gauss–Hermite of order {closed_form['order']}" if err else "") + ")"
          if closed_form is not None else "")
    onsets = [f"a {name} branch leaves q = 0 for λ < {lam:.4g} (growth against {_AGAINST[name]} = 1)"
              for name, lam in (branch_onsets(params, alpha) if closed else {}).items()]
    return (f"q = 0: {what} — the student is zero (Q = 0), e_t = α ε_g = {e_t:.6g}{cf}; {st}"
            + ("; " + "; ".join(onsets) if onsets else "") + " (docs/notes/2026-12-05-theory-general.md, 'Strong ridge')")


_AGAINST = {"positional": "m", "semantic": "theta"}


def _closed_form_applies(params) -> bool:
    """The q = 0 closed form (:mod:`attnphase.theory.zero_point`) is evaluated: any L, r, r*, A, P with
    L·r* ≤ :data:`~attnphase.theory.zero_point.MAX_DIMS`."""
    from ..theory.zero_point import MAX_DIMS
    return params.L * params.r_star <= MAX_DIMS


def _engine_zero_growth(params, alpha: float) -> float | None:
    """The closed-form largest growth factor at q = 0 for the engine's note (None beyond L·r* = 6; NaN where the
    closed form has no admissible V)."""
    from ..theory.zero_point import largest_growth
    return largest_growth(params, alpha) if _closed_form_applies(params) else None


def _replicon_record(sol, how: str) -> dict:
    """value, error, stable (and the reason where there is no value) of :mod:`attnphase.theory.replicon`."""
    from ..theory import replicon as RP
    rec = RP.replicon(sol) if how == "qmc" else RP.replicon_split(sol)
    return {k: rec.get(k) for k in ("value", "error", "stable", "integrator", "reason")}


def _replicon_text(rec: dict) -> str:
    if rec["reason"]:
        return f"not evaluated: {rec['reason']}"
    verdict = {True: "RS stable", False: "RS unstable", None: "undecided"}[rec["stable"]]
    return f"{rec['value']:.4g} ± {rec['error']:.2g} ({verdict})"


def _add_finite_d(sol, dim: int, out: dict, rows: list) -> None:
    """The O(1/d) record (:func:`attnphase.theory.finite_size.solution_record`) into the point's output and
    table rows, and what was applied into its provenance."""
    from ..theory.finite_size import APPLIED, solution_record
    rec = solution_record(sol, dim)
    out.update(rec)
    rows.extend([k, v] for k, v in rec.items())
    out.setdefault("provenance", {})["finite_d"] = {"d": dim, "applied": APPLIED if rec["e_t_coef"] == rec["e_t_coef"]
                                                    else "not applied: no fixed point (values NaN)"}


@theory_app.command("point")
def point(alpha: float = typer.Option(..., "--alpha", help="Sample complexity α = n/d > 0."),
          omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
          L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, P: str = POpt,
          branch: str = typer.Option("semantic", "--branch",
                                     help="semantic, positional, uninformative or free."),
          integrator: str = IntegratorOpt,
          nodes: int = typer.Option(None, "--nodes", help=NODES_HELP),
          rule: str = typer.Option(None, "--rule", help=RULE_HELP + " (alias of --integrator for L=2, r=1)"),
          qmc_points: int = QmcOpt, scrambles: int = ScramblesOpt, qmc_target: float = TargetOpt,
          json_out: bool = typer.Option(False, "--json", help="Print JSON on stdout."),
          dim: int = DimOpt,
          replicon: bool = typer.Option(False, "--replicon", help="Also the replicon (de Almeida-Thouless) "
                                        "eigenvalue of the RS fixed point: 'replicon' = value, error, stable "
                                        "(RS locally stable iff < 1; docs/notes/2026-12-05-theory-general.md, 'Replicon "
                                        "stability')."),
          landscape: bool = typer.Option(False, "--landscape", help="Instead of the fixed point: the RS "
                                         "landscape at fixed overlaps, e_t(θ/σ²) and e_t(m) with their minima "
                                         "(r = r* = 1, k = 1; docs/theory/beyond-rs.md)."),
          surface: bool = typer.Option(False, "--surface", help="With --landscape: the surface e_t(m, θ) on a "
                                       "grid, its minima and lowest passes (always QMC, default 1024 x 4)."),
          surface_thetas: str = typer.Option(None, "--surface-thetas", help="θ/σ² axis of --surface, "
                                             "START:STOP:NUM (default 0:0.6:9)."),
          surface_ms: str = typer.Option(None, "--surface-ms", help="m axis of --surface, START:STOP:NUM "
                                         "(default 0:0.3:9).")) -> None:
    """Solve the fixed point at one α on one branch."""
    from ..provenance import provenance
    params = _params(L, r, r_star, sigma, lam, omega, A, P)
    check_theory(params, qmc_points, scrambles, 1, ("--qmc-points", "--scrambles"))
    if surface:                 # the surface's grid is refused before JAX loads
        from .landscape_cmd import surface as show_surface, surface_request
        surface_grid = surface_request(params, surface_thetas, surface_ms, qmc_points, scrambles)
        return show_surface(params, alpha, surface_grid, None if qmc_points is None and scrambles is None else
                            _qmc_config(qmc_points or 1024, scrambles or 4, 0.0), json_out)
    # the sizes are accepted: JAX and the theory load only now (a refusal above takes well under 2 s)
    from ..theory import BRANCHES, solve_point
    from ..theory.solver import resolution_note
    from ..theory.finite_size import check_dimension
    dim = None if dim is None else check_dimension(dim, "--d")
    if branch not in BRANCHES:
        raise ParameterError("--branch", f"one of {', '.join(BRANCHES)}", branch)
    if rule is not None and rule not in ("split", "product"):
        raise ParameterError("--rule", "split or product", rule)
    how = _route(params, integrator, rule, nodes, qmc_points, scrambles, qmc_target)
    if landscape:
        from .landscape_cmd import landscape as show_landscape
        return show_landscape(params, alpha, None if qmc_points is None and scrambles is None else
                              _qmc_config(qmc_points, scrambles, 0.0), json_out)
    if how == "qmc":
        from ..progress import QMCStatus
        from ..theory.engine import solve
        with QMCStatus(f"{branch}, α={alpha:g}") as progress:
            g = solve(params, alpha, branch, qmc_config=_qmc_config(qmc_points, scrambles, qmc_target),
                      progress=progress)
        d, converged, status = g.to_dict(), g.converged, g.status.value
        if g.significance is not None and g.significance["reason"]:
            status += f" ({g.significance['reason']})"
        if g.iteration and g.iteration["failed_scrambles"]:
            status += " (scrambles without a fixed point: " + ", ".join(
                f"seed {f['seed']} {f['status']} at residual {f['residual']:.2g}"
                for f in g.iteration["failed_scrambles"]) + ")"
        if g.iteration and g.iteration.get("continuation"):
            status += f" ({g.iteration['continuation']})"
        if g.converged and g.resolution is not None and not g.resolution["met"]:
            last = g.resolution["sizes"][-1]
            status += (f" (QMC error target {g.resolution['target']:.2g} not met: relative s.e. of {last['worst']} "
                       f"{last['rse']:.2g} at {last['points']} x {last['scrambles']}, the cap)")
        rows = [[k, v] for k, v in d.items() if k not in ("matrices", "provenance")]
    else:
        s = solve_point(params, alpha, branch, nodes=nodes, rule=how, continuation=True)
        from ..phase.continuation import COLLAPSE_TOL, PointState, point_state
        state = point_state(s)      # the state `theory curve` reports (collapsed, unstable, …; MODEL.md §7)
        d = {"alpha": s.alpha, "branch": s.branch, "omega": params.omega, "integrator": how,
             **{k: getattr(s, k) for k in _KEYS}, "status": s.status.value if s.converged else s.note,
             "state": state.value, "start": s.start,
             "resolution_note": resolution_note(s.q, s.nodes, how) if s.converged else None}
        rows = [[k, v] for k, v in d.items()]
        d["provenance"] = provenance(dict(params=params.to_dict(), alpha=alpha, branch=branch, nodes=s.nodes,
                                          rule=how), kind="theory point")
        converged, status = s.converged, d["status"]
    if dim is not None:
        _add_finite_d(g if how == "qmc" else s, dim, d, rows)
    if replicon:
        d["replicon"] = _replicon_record(g if how == "qmc" else s, how)
        rows.append(["replicon", _replicon_text(d["replicon"])])
    if json_out:
        emit_json(d)
    else:
        print_table(f"theory point ({branch}, α={alpha:g}, ω={omega:g}, {how})", ["quantity", "value"], rows)
    verdict = g.verdict if how == "qmc" else None     # the free branch's verdict (theory.free_verdict)
    zero = how == "qmc" and g.significance is not None and g.significance.get("zero_q", False)
    if zero:         # the engine at the q = 0 point (engine.zero_q_record): collapsed there, values kept
        note = zero_point_note(params, alpha, branch, g.e_t, _engine_zero_growth(params, alpha),
                               g.significance.get("closed_form"))
        console.print(f"[yellow]note: {note}[/yellow]")
    elif verdict is not None and verdict["on_pinned"]:
        pv = verdict["pinned"]["values"]
        console.print(f"[yellow]warning: on_pinned, no free fixed point reported: the free iteration "
                      f"{verdict['reason']}. The {verdict['branch']} point: q = {pv['q']:.6g}, m = {pv['m']:.4g}, "
                      f"theta = {pv['theta']:.6g}, e_t = {pv['e_t']:.6g} (provenance.free_verdict)[/yellow]")
    elif not converged:
        if verdict is not None:
            status += f" (free branch verdict: {verdict['reason']})"
        console.print(f"[yellow]warning: not converged: {status}[/yellow]")
    elif verdict is not None:
        console.print(f"[yellow]note: checked against the {verdict['branch']} point: {verdict['reason']}[/yellow]")
    elif how != "qmc" and s.q == 0.0:
        console.print(f"[yellow]note: {zero_point_note(params, alpha, branch, s.e_t, s.stability)}[/yellow]")
    elif how != "qmc" and state is PointState.COLLAPSED:
        key = "theta" if branch == "semantic" else "m"
        console.print(f"[yellow]note: collapsed: the {branch} branch's overlap vanishes here (it is the "
                      f"uninformative point; |{key}| ≤ {COLLAPSE_TOL:g} σ√q)[/yellow]")
    elif how == "qmc" and g.stability is not None and g.stability["verdict"] != "stable":
        st = g.stability      # growth factor of the pinned direction (theory.stability_general)
        console.print(f"[yellow]note: {st['verdict']} against the pinned direction: growth {st['growth']:.3g} ± "
                      f"{st['growth_err']:.2g}" + (f" ({st['reason']})" if st["reason"] else "") + "[/yellow]")
    if how != "qmc" and d.get("resolution_note"):
        console.print(f"[yellow]note: {d['resolution_note']}[/yellow]")
    # exit 3 (cli.main) after the result and its status are printed, where the solver failed; a branch that
    # collapsed onto the uninformative point (or q = 0) and a free iteration on a pinned branch are results
    settled = zero or (verdict is not None and verdict["on_pinned"]) or (how == "qmc" and g.status.value == "collapsed")
    if not converged and not settled:
        raise NotConvergedError(f"theory point ({branch}, α={alpha:g}): {status}")


@theory_app.command("curve")
def curve(alphas: str = typer.Option(..., "--alphas", help="START:STOP:NUM (e.g. 0.5:2:20)."),
          omega: float = OmegaOpt, sigma: float = SigmaOpt, lam: float = LamOpt, A: str = AOpt,
          L: int = LOpt, r: int = ROpt, r_star: int = RStarOpt, P: str = POpt,
          branch: str = typer.Option("semantic,positional", "--branch", help="Comma-separated branches."),
          integrator: str = IntegratorOpt,
          nodes: int = typer.Option(None, "--nodes", help=NODES_HELP),
          rule: str = typer.Option(None, "--rule", help=RULE_HELP + " (alias of --integrator for L=2, r=1)"),
          qmc_points: int = QmcOpt, scrambles: int = ScramblesOpt, qmc_target: float = TargetOpt,
          out: Path = typer.Option(..., "--out", help="CSV file to write (tidy, one row per point)."),
          json_out: bool = typer.Option(False, "--json", help="Also print the rows and provenance as JSON."),
          dim: int = DimOpt) -> None:
    """Solve a curve in α for each branch and write a CSV. Split/product rule: continuation (the semantic branch
    from large α down, the positional one from small α up); QMC: all points of a branch in one vmapped batch."""
    import pandas as pd

    from functools import partial

    from ..phase import branch_table, follow_branch
    from ..provenance import provenance
    from ..theory import BRANCHES, solve_point
    from ..theory.finite_size import check_dimension
    params = _params(L, r, r_star, sigma, lam, omega, A, P)
    dim = None if dim is None else check_dimension(dim, "--d")
    branches = parse_list("--branch", branch, BRANCHES)
    grid = parse_linspace("--alphas", alphas)
    if (grid <= 0).any():
        raise ParameterError("--alphas", "values > 0", alphas)
    if rule is not None and rule not in ("split", "product"):
        raise ParameterError("--rule", "split or product", rule)
    how = _route(params, integrator, rule, nodes, qmc_points, scrambles, qmc_target)
    check_theory(params, qmc_points, scrambles, len(grid), ("--qmc-points", "--scrambles"))
    if how != "qmc":
        check_theory_request(params, nodes, how)
    out = check_output_path(out)
    order = sorted(grid, reverse=True)
    frames, solved = [], []
    if how == "qmc":
        from ..progress import QMCStatus
        from ..theory.engine import solve_batch
        cfg = _qmc_config(qmc_points, scrambles, qmc_target)
        for b in branches:
            with QMCStatus(f"{b}: {len(grid)} points in one batch") as progress:
                sols = solve_batch(params, grid, b, qmc_config=cfg, progress=progress)
            solved += sols
            frame = pd.DataFrame([{k: v for k, v in s.to_dict().items() if k not in ("matrices", "provenance")}
                                  for s in sols])
            frames.append(frame.assign(integrator="qmc", qmc_points=[s.qmc.points for s in sols],
                                       scrambles=[s.qmc.scrambles for s in sols]))
    else:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console) as prog:
            for b in branches:
                task = prog.add_task(b, total=len(order))
                sols = follow_branch(params, order if b != "positional" else order[::-1], b, nodes=nodes,
                                     progress=lambda i: prog.advance(task), rtol=1e-5, max_steps=300,
                                     solver=partial(solve_point, rule=how))
                frames.append(branch_table(sols))
                solved += [getattr(p, "solution", p) for p in sols]
    df = pd.concat(frames, ignore_index=True).sort_values(["branch", "alpha"])
    if dim is not None:
        df = _curve_finite_d(df, solved, dim)
    write_atomic(out, lambda t: with_stamp(df).to_csv(t, index=False))
    bad = int((~df["converged"].astype(bool)).sum())
    states = df["state"].value_counts().to_dict() if "state" in df else {}
    if json_out:
        emit_json(dict(rows=df.to_dict(orient="records"), out=str(out),
                       provenance=provenance(dict(params=params.to_dict(), alphas=list(map(float, grid)),
                                                  branches=branches, integrator=how, nodes=nodes, d=dim),
                                             kind="theory curve", not_converged=bad, finite_d=_curve_applied(dim))))
    console.print(f"wrote {len(df)} points to {out}" + (f" (states: {states})" if states else "")
                  + (f" ({bad} not converged)" if bad else ""))


def _curve_finite_d(df, sols: list, dim: int):
    """The curve's table with the O(1/d) columns (:data:`attnphase.theory.finite_size.COLUMNS`) of each
    solution, matched on (branch, α)."""
    import pandas as pd

    from ..theory.finite_size import solution_record
    with console.status(f"O(1/d) terms at d = {dim} ({len(sols)} points)"):
        recs = pd.DataFrame([{"branch": s.branch, "alpha": float(s.alpha), **solution_record(s, dim)} for s in sols])
    return df.assign(alpha=df["alpha"].astype(float)).merge(recs, on=["branch", "alpha"], how="left")


def _curve_applied(dim: int | None) -> dict | None:
    from ..theory.finite_size import APPLIED
    return None if dim is None else {"d": dim, "applied": APPLIED}
