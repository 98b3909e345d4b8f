"""``attnphase theory point --landscape``: the RS landscape of one point at fixed overlaps, e_t(θ/σ²) and e_t(m)
profiles with their minima and barriers (:mod:`attnphase.theory.landscape`; docs/theory/beyond-rs.md)."""

from __future__ import annotations

from ..errors import ParameterError
from ._common import console, emit_json, print_table


def landscape(params, alpha: float, qmc_config, json_out: bool) -> None:
    """Print both profiles of ``params`` at ``alpha`` (table or JSON with provenance)."""
    from ..provenance import provenance
    from ..theory.landscape import profiles
    if (params.r, params.r_star, params.k) != (1, 1, 1):
        raise ParameterError("--landscape", "r = r* = 1 and one positional direction (k = 1)",
                             f"r={params.r}, r*={params.r_star}, k={params.k}")
    with console.status(f"landscape at α={alpha:g}: 2 profiles × 8 constrained saddle points (minutes)"):
        rec = profiles(params, alpha, qmc_config=qmc_config)
    rec["provenance"] = provenance(dict(params=params.to_dict(), alpha=alpha, qmc_points=1024 if qmc_config is None
                                        else qmc_config.points), kind="theory point --landscape")
    if json_out:
        emit_json(rec)
        return
    for key, label in (("theta", "θ/σ² fixed, m free"), ("m", "m fixed, θ free")):
        prof = rec[key]
        rows = [[r[f"{key}_imposed"], r["e_t"], r["e_t_err"], r["m"], r["theta"], r["q"], r[f"force_{key}"],
                 r["status"]] for r in prof["rows"]]
        print_table(f"e_t({key}) at α={alpha:g}, {label} (RS, d → ∞)",
                    [key, "e_t", "± s.e.", "|m|", "θ/σ²", "q", "force −de_t/dx", "status"], rows)
        st = ", ".join(f"{s['kind']} at {key} = {s['at']:.3g} (e_t {s['e_t']:.6g})" for s in prof["stationary"])
        console.print(f"stationary points along {key}: {st or 'none in the grid'}"
                      + (f"; barriers {', '.join(f'{b:.3g}' for b in prof['barriers'])}" if prof["barriers"] else "")
                      + (f"; barriers {prof['barriers_reason']}" if prof["barriers"] is None else "")
                      + (f"; [yellow]{prof['not_converged']} point(s) not converged (NaN)[/yellow]"
                         if prof["not_converged"] else ""))
    console.print("note: replica-symmetric profiles (docs/theory/beyond-rs.md says where they describe the "
                  "optimisers)")
