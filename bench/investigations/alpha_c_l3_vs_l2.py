"""α_c(ω) at L = 3 (A = 0.4 I + 0.2 J, the QMC engine) next to L = 2 (the paper's model, split rule) — issue 29.

    python bench/investigations/alpha_c_l3_vs_l2.py OUT.png L3_JSON [L3_JSON ...]

L3_JSON: outputs of ``attnphase theory transition --L 3 --A "0.6,0.2,0.2;0.2,0.6,0.2;0.2,0.2,0.6" --omega W --json``.
The L = 2 line is read from docs/notes/2026-12-03-phase-boundaries.md (the 11 default-σ/λ rows). A bound (``< 0.3``) is drawn
as a triangle at the bound, an error bar where α_c carries one; an open diamond where α_c is a continuous onset
(``transition_order``), a filled circle where it is first order.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs"


def l2_rows():
    rows = []
    for line in (DOCS / "notes" / "2026-12-03-phase-boundaries.md").read_text().splitlines():
        m = re.match(r"\| ([0-9.]+) \| 0\.5 \| 0\.01 \| ([0-9.]+) \| [^|]* \| ([0-9.]+|> 6) \|", line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2)), None if m.group(3).startswith(">") else float(m.group(3))))
    return sorted(set(rows))


def main(out: str, files: list[str]) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    l2 = l2_rows()
    ax.plot([r[0] for r in l2], [r[1] for r in l2], "o-", color="C0", label="L = 2 (paper's A, P), α_c")
    ax.plot([r[0] for r in l2 if r[2]], [r[2] for r in l2 if r[2]], "s--", color="C0", alpha=0.5,
            label="L = 2, α_l")
    for f in files:
        d = json.loads(Path(f).read_text())
        w = d["omega"]
        if d["alpha_c"] is not None:
            cont = str(d.get("transition_order") or "").startswith("continuous")
            ax.errorbar([w], [d["alpha_c"]], yerr=[d["alpha_c_err"] or 0.0], fmt="D" if cont else "o", color="C3",
                        mfc="none" if cont else "C3", capsize=3)
        elif d.get("alpha_c_bound"):
            b = d["alpha_c_bound"]
            v = float(b.split()[-1])
            ax.plot([w], [v], "v" if b.startswith("<") else "^", color="C3", ms=9)
        if d["alpha_l"] is not None:
            ax.errorbar([w], [d["alpha_l"]], yerr=[d["alpha_l_err"] or 0.0], fmt="s", color="C3", alpha=0.5,
                        capsize=3)
        elif d.get("alpha_l_bound"):
            v = float(d["alpha_l_bound"].split()[-1])
            ax.plot([w], [v], "^", color="C3", alpha=0.5, ms=9)
    ax.plot([], [], "o", color="C3", label="L = 3, A = 0.4 I + 0.2 J (QMC), α_c, first order (▼: below the bound)")
    ax.plot([], [], "D", color="C3", mfc="none", label="L = 3, α_c, continuous onset")
    ax.plot([], [], "s", color="C3", alpha=0.5, label="L = 3, α_l (▲: above the bound)")
    ax.set_xlabel("ω")
    ax.set_ylabel("α")
    ax.set_title("α_c(ω), α_l(ω): L = 3 next to L = 2 (σ = 0.5, λ = 0.01)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
