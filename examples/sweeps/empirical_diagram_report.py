"""Turn a finished (or partial) empirical-diagram sweep into its per-cell table, its α_c(ω) line and the paired
figure (attnphase.empirical_diagram.report; the command lines: examples/sweeps/paper_empirical_diagram.toml).

    python examples/sweeps/empirical_diagram_report.py examples/sweeps/paper_empirical_diagram.toml \
        --theory docs/data/phase_diagram_40x40 --out docs/data/empirical_diagram_d1000

Writes OUT/cells.csv (per (ω, α): e_t mean ± s.e. per start, Δe_t = pos − sem ± s.e., paired per instance,
converged counts), OUT/alpha_c.csv (per ω: the empirical α_c ± s.e. from Δe_t's sign change, the theory's α_c
and α_l, their difference), OUT/diagram.png and OUT/provenance.json (the spec, the code versions and commits that
ran the tasks, the tasks' summed wall time); prints a JSON summary (tasks done / pending / failed).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnphase.empirical_diagram import report
from attnphase.provenance import provenance
from attnphase.sweeps import frame, load, status


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec", help="the sweep's TOML file")
    ap.add_argument("--theory", default=None, help="folder with phase_grid.csv and phase_lines.csv")
    ap.add_argument("--out", required=True, help="output folder")
    a = ap.parse_args()
    sw = load(a.spec)
    df = frame(sw)
    df = df[(df["kind"] == "simulate") & (df["status"] == "done")]
    summary = report(df, a.out, a.theory)
    summary.update(sweep=sw.name, tasks=status(sw))
    tasks = df.drop_duplicates("key")
    ran_by = dict(versions=sorted(tasks["version"].astype(str).unique()),
                  commits=sorted(tasks["git"].astype(str).unique()),
                  dirty=bool(tasks["git_dirty"].astype(bool).any()),
                  task_wall_s_sum=float(tasks["wall_s"].sum()))
    prov = provenance(dict(spec=str(a.spec), theory=a.theory), sweep=sw.name, tasks=summary["tasks"],
                      students=summary["students"], unconverged_students=summary["unconverged"], ran_by=ran_by)
    (Path(a.out) / "provenance.json").write_text(json.dumps(prov, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
