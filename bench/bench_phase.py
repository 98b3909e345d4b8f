"""Phase boundaries and the phase diagram at the paper's resolution (issue 9).

    python bench/bench_phase.py lines [--quick]      # α_c, α_l per ω and per (σ, λ) -> docs/notes/2026-12-03-phase-boundaries.md
    python bench/bench_phase.py variant-grid        # α_c, α_l per (σ, λ) variant at every ω of the line grid
    python bench/bench_phase.py diagram [--omegas 10] [--alphas 40]   # timing -> docs/notes/benchmarks-log.md (last section)
    python bench/bench_phase.py refactor --old-src PATH [--repeat 1]  # transition at ω = 0.3: old vs this code

``lines`` runs :func:`attnphase.phase.transition` (defaults: curves at nodes = 4, Brent at nodes = 8 to 1e-4,
α range extended up to 6) and rewrites the generated table of docs/notes/2026-12-03-phase-boundaries.md (between the markers).
``diagram`` times :func:`attnphase.phase.phase_diagram` on a subset of the 40 × 40 default grid (every k-th ω
of the 40, all 40 α) and extrapolates to the full grid; it also checks that no cell is "not converged", and
writes the figure of the subset to docs/figures/phase_diagram_subset.png.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import time
from pathlib import Path

import numpy as np

from _docblock import write_block
from attnphase.model import ModelParams
from attnphase.phase import phase_diagram, transition
from attnphase.phase.diagram import DEFAULT_ALPHAS, DEFAULT_OMEGAS

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAPER = {0.3: (1.24, 1.45), 0.425: (1.94, None)}
"""The paper's published values (MODEL.md §6; α_c(0.425) from the paper's phase diagram)."""


def _machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores (shared with other jobs), Python "
            f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at the start")


def _val(x, bound) -> str:
    return f"{x:.4f}" if x is not None else (bound or "—")


LINE_OMEGAS = [0.1, 0.3, 0.5, 0.02, 0.2, 0.4, 0.05, 0.15, 0.25, 0.35, 0.45]
VARIANTS = [(0.7, 0.01), (1.0, 0.01), (0.3, 0.01), (0.5, 0.001), (0.5, 0.1)]
COLUMNS = ("| ω | σ | λ | α_c (ours) | α_c (paper) | α_l (ours) | α_l (paper) | α_c against | pinned crossing | "
           "branch ends (valid up to) | α range | reason | s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _row(sigma, lam, w, alphas=None) -> str:
    t0 = time.time()
    r = transition(ModelParams(omega=w, sigma=sigma, lam=lam), alphas=alphas, mixed_alphas=[])
    d = r.to_dict()
    if r.fixed_points is not None:  # every fixed point found per α: the evidence behind the global minimum
        (DOCS / "data").mkdir(exist_ok=True)
        r.fixed_points.assign(omega=w, sigma=sigma, lam=lam).to_csv(
            DOCS / "data" / f"fixed_points_omega{w:g}_sigma{sigma:g}_lam{lam:g}.csv", index=False)
    ends = "; ".join(f"{b[:3]}{' begins' if b.endswith('_begin') else ''}: {e['alpha']:.3f} {e['kind']}"
                     for b, e in d["ends"].items() if e) or "—"
    paper = PAPER.get(w) if (sigma, lam) == (0.5, 0.01) else None
    glob = ", ".join(f"{g['kind']} [{g['alpha_from']:g}, {g['alpha_to']:g}]" for g in d["global_kinds"])
    reason = "; ".join(x for x in (d["alpha_c_reason"], d["alpha_l_reason"]) if x)
    if glob and "global minimum (lowest" not in reason:   # (the list is already in a reason of _global_reason)
        reason = f"{reason}; global minimum: {glob}" if reason else f"global minimum: {glob}"
    loc = r.alpha_c_location
    if loc.get("difference") is not None and loc.get("nodes") != loc.get("curve_nodes"):
        reason += (f"; α_c = the growth factor's crossing located at nodes {loc['nodes']} (±{loc.get('fit_stderr', 0):.4f}; "
                   f"{loc['alpha_curve_nodes']:.4f} at nodes {loc['curve_nodes']})")
    elif loc.get("note"):
        reason += f"; α_c left at nodes {loc['nodes']}: {loc['note']}"
    against = r.alpha_c_against + (f" ({r.alpha_c_kind})" if r.alpha_c_kind and r.alpha_c_kind != "crossing" else "")
    return (f"| {w:g} | {sigma:g} | {lam:g} | {_val(r.alpha_c, r.alpha_c_bound)} | "
            f"{'—' if not paper else paper[0]} | {_val(r.alpha_l, r.alpha_l_bound)} | "
            f"{'—' if not paper or paper[1] is None else paper[1]} | {against} | "
            f"{'—' if r.alpha_c_pinned is None else f'{r.alpha_c_pinned:.3f}'} | {ends} | "
            f"{r.alpha_range[0]:g}–{r.alpha_range[1]:g} | {reason or '—'} | {time.time() - t0:.0f} |")


def lines(quick: bool, rows_file: Path, variants: list[tuple[float, float]] | None = None,
          alphas: list[float] | None = None) -> None:
    """One transition per (ω) at the defaults and per (σ, λ) at ω = 0.3; each row is appended to
    ``rows_file`` as it is done (a long run survives being stopped), then the doc's table is rewritten from
    all rows in the file, sorted."""
    todo = [(0.5, 0.01, w) for w in LINE_OMEGAS] + [(s, lam, 0.3) for s, lam in VARIANTS]
    if quick:
        todo = todo[:2]
    if variants is not None:  # recompute these (σ, λ) rows at ω = 0.3 (their old rows are dropped)
        todo = [(s, lam, 0.3) for s, lam in variants]
        keep = [ln for ln in (rows_file.read_text().splitlines() if rows_file.exists() else [])
                if (float(ln.split("|")[2]), float(ln.split("|")[3])) not in set(variants)]
        rows_file.write_text("".join(ln + "\n" for ln in keep))
    have = rows_file.read_text().splitlines() if rows_file.exists() else []
    done = {tuple(float(x) for x in (ln.split("|")[2], ln.split("|")[3], ln.split("|")[1])) for ln in have}
    for key in todo:
        if tuple(float(x) for x in key) in done:
            continue
        row = _row(*key, alphas=alphas)
        print(row, flush=True)
        with rows_file.open("a") as f:
            f.write(row + "\n")
    write_lines(rows_file)


VARIANT_GRIDS = {(0.7, 0.01): "0.3:1.5:13", (1.0, 0.01): "0.3:1.5:13", (0.5, 0.001): "0.3:1.5:13",
                 (0.3, 0.01): "0.5:2:4", (0.5, 0.1): "0.5:2:4"}
"""Starting α grid per variant (the range is extended by ``transition`` as needed): a fine one where the
transition is near α ≈ 1, a coarse one where the ω = 0.3 run found none below α = 6."""


def variant_grid(rows_file: Path, variants: list[tuple[float, float]] | None = None,
                 omegas: list[float] | None = None) -> None:
    """One transition per (σ, λ) variant and per ω of the line grid (issue 9's acceptance); rows appended to
    ``rows_file`` as they are done (rows already there are skipped), then the doc's variant table is
    rewritten."""
    variants = variants or list(VARIANT_GRIDS)
    omegas = omegas or sorted(LINE_OMEGAS)
    have = rows_file.read_text().splitlines() if rows_file.exists() else []
    done = {tuple(float(x) for x in (ln.split("|")[2], ln.split("|")[3], ln.split("|")[1])) for ln in have}
    for sigma, lam in variants:
        start, stop, num = VARIANT_GRIDS.get((sigma, lam), "0.3:2:18").split(":")
        grid = list(np.round(np.linspace(float(start), float(stop), int(num)), 6))
        for w in omegas:
            if (sigma, lam, w) in done:
                continue
            row = _row(sigma, lam, w, alphas=grid)
            print(row, flush=True)
            with rows_file.open("a") as f:
                f.write(row + "\n")
    write_lines(rows_file, marker="variants")


def write_lines(rows_file: Path, marker: str = "lines") -> None:
    rows = rows_file.read_text().splitlines()
    rows.sort(key=lambda ln: ((float(ln.split("|")[2]), float(ln.split("|")[3])) != (0.5, 0.01),
                              float(ln.split("|")[2]), float(ln.split("|")[3]), float(ln.split("|")[1])))
    command = "lines" if marker == "lines" else "variant-grid"
    text = (f"<!-- {marker}:begin (generated by bench/bench_phase.py {command}) -->\nMachine: {_machine()} (when the "
            f"table was written; the rows were computed one after another under varying load).\n\n{COLUMNS}\n"
            + "\n".join(rows) + f"\n<!-- {marker}:end -->")
    write_block(DOCS / "notes" / "2026-12-03-phase-boundaries.md", marker, text)


def diagram(n_omegas: int, n_alphas: int) -> None:
    w_all = np.array(DEFAULT_OMEGAS)
    idx = np.unique(np.round(np.linspace(0, len(w_all) - 1, n_omegas)).astype(int))
    omegas = w_all[idx]
    alphas = np.array(DEFAULT_ALPHAS)[np.unique(np.round(np.linspace(0, len(DEFAULT_ALPHAS) - 1, n_alphas))
                                                .astype(int))]
    start = _machine()
    t0 = time.time()
    cpu0 = time.process_time()
    grid, lns = phase_diagram(ModelParams(), omegas, alphas)
    wall, cpu = time.time() - t0, time.process_time() - cpu0
    solves = int(lns["solves"].sum())
    bad = int(((grid["state_sem"] == "not converged") | (grid["state_pos"] == "not converged")).sum())
    states = {c: grid[c].value_counts().to_dict() for c in ("state_sem", "state_pos")}
    cells = len(omegas) * len(alphas)
    full = len(DEFAULT_OMEGAS) * len(DEFAULT_ALPHAS)
    from attnphase.plots import plot_phase_diagram, save_figure
    save_figure(plot_phase_diagram(grid, lns), DOCS / "figures" / "phase_diagram_subset")
    lns.to_csv(DOCS / "figures" / "phase_diagram_subset_lines.csv", index=False)
    section = f"""## Phase diagram at the paper's resolution (issue 9)

`python bench/bench_phase.py diagram --omegas {len(omegas)} --alphas {len(alphas)}`. Machine: {start}; load at
the end {os.getloadavg()[0]:.1f}. Engine: `attnphase.phase.phase_diagram` defaults (split rule nodes = 4, rtol
1e-5, 60-step cap, stability of each point, warm starts across ω, ends located to a quarter of the α step).

Prediction (written before measuring): ~0.5 s per solve (warm, nodes = 4, a load of ~4 halves the speed of the
1-core-alone numbers above), ~1.2 solves per requested (ω, α, branch) cell (ends and saddles), i.e. about
0.6 s per cell → 40 × 40 × 2 ≈ 32 min; not the ≤ 10 min target without batched solves.

| what | value |
|---|---|
| subset | {len(omegas)} ω (every {max(1, len(w_all) // len(omegas))}th of the 40 in [0.02, 0.5]) × {len(alphas)} α in [{alphas[0]:g}, {alphas[-1]:g}] × 2 branches = {2 * cells} cells |
| wall / CPU of this process | {wall:.0f} s / {cpu:.0f} s |
| point solves | {solves} ({solves / (2 * cells):.2f} per cell; {wall / max(solves, 1):.2f} s wall per solve) |
| cells "not converged" | {bad} |
| states | {states} |
| extrapolated to 40 × 40 × 2 (wall, same load) | {wall * full / cells / 60:.1f} min |
| extrapolated from CPU time (an unshared core) | {cpu * full / cells / 60:.1f} min |
"""
    path = DOCS / "notes" / "benchmarks-log.md"
    doc = path.read_text()
    pat = re.compile(r"## Phase diagram at the paper's resolution \(issue 9\)\n.*?(?=\n## |\Z)", re.S)
    doc = pat.sub(lambda m: section.rstrip() + "\n", doc) if pat.search(doc) else doc.rstrip() + "\n\n" + section
    path.write_text(doc)
    print(section)


def refactor(old_src: Path, repeat: int = 1) -> None:
    """``attnphase theory transition --omega 0.3 --json`` with the code at ``old_src`` and with this checkout, in
    one run, alternating (old, new) ``repeat`` times: the wall times, their ratio and the α_c, α_l of each
    (issue 29: no slower, the same answers to 1e-4). Appends a block to docs/notes/benchmarks-log.md."""
    import json
    import subprocess
    import sys
    new_src = Path(__file__).resolve().parents[1] / "src"
    cmd = [sys.executable, "-m", "attnphase", "theory", "transition", "--omega", "0.3", "--json"]
    runs: dict[str, list] = {"old": [], "new": []}
    for _ in range(repeat):
        for tag, src in (("old", old_src), ("new", new_src)):
            t = time.time()
            out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)},
                                 check=True).stdout
            d = json.loads(out)
            runs[tag].append((time.time() - t, d["alpha_c"], d["alpha_l"]))
    told, tnew = (min(r[0] for r in runs[k]) for k in ("old", "new"))
    rows = [f"| {k} | {r[1]:.10f} | {r[2]:.10f} | {r[0]:.1f} s |" for k in ("old", "new") for r in runs[k]]
    text = (f"\n### transition at ω = 0.3, pre-refactor vs one-interface code (run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
            f"Machine: {_machine()}; load average {os.getloadavg()[0]:.1f} at the end (load during the run: other jobs).\n\n"
            "| code | α_c | α_l | wall |\n|---|---|---|---|\n" + "\n".join(rows)
            + f"\n\nRatio new / old (best of {repeat}): **{tnew / told:.2f}**.\n")
    print(text)
    with open(DOCS / "notes" / "benchmarks-log.md", "a") as f:
        f.write(text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["lines", "variant-grid", "diagram", "refactor"])
    ap.add_argument("--old-src", type=Path, default=None, help="refactor: the src/ folder of the old code")
    ap.add_argument("--repeat", type=int, default=1, help="refactor: (old, new) pairs")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--omegas", type=int, default=10)
    ap.add_argument("--alphas", type=int, default=40)
    ap.add_argument("--variants", default=None, help='lines: only these "σ,λ;σ,λ" at ω = 0.3 (rows recomputed)')
    ap.add_argument("--grid", default=None, help="lines: starting α grid START:STOP:NUM (default: transition's)")
    ap.add_argument("--omega-list", default=None, help='variant-grid: only these ω ("0.02,0.05"; default: all 11)')
    ap.add_argument("--rows", type=Path, default=DOCS / "notes" / "phase_boundaries_rows.md",
                    help="lines: the table's rows, appended as they are computed")
    a = ap.parse_args()
    var = [tuple(float(x) for x in v.split(",")) for v in a.variants.split(";")] if a.variants else None
    grid = (list(np.round(np.linspace(*(float(x) for x in a.grid.split(":")[:2]), int(a.grid.split(":")[2])), 6))
            if a.grid else None)
    if a.what == "lines":
        lines(a.quick, a.rows, var, grid)
    elif a.what == "variant-grid":
        variant_grid(a.rows if a.rows != DOCS / "notes" / "phase_boundaries_rows.md" else DOCS / "notes" / "phase_boundaries_variant_rows.md",
                     var, [float(w) for w in a.omega_list.split(",")] if a.omega_list else None)
    elif a.what == "refactor":
        if a.old_src is None:
            ap.error("refactor needs --old-src (the src/ folder of the code to compare with)")
        refactor(a.old_src, a.repeat)
    else:
        diagram(a.omegas, a.alphas)
