"""The outcome of :func:`~.transition.transition` (:class:`TransitionResult`) and the words for a missing
α_c or α_l (:func:`reasons`, :func:`global_reason`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..model import ModelParams
from ..theory.landscape_caveat import rs_caveat
from .continuation import Branch, PointState
from .rsb1_crossing import NOT_REQUESTED, Rsb1Crossing


@dataclass
class TransitionResult:
    """Outcome of :func:`transition` at one parameter point. ``alpha_c``/``alpha_l`` are None when not found;
    ``alpha_c_bound``/``alpha_l_bound`` then say ``"> α_max"`` or ``"< α_min"`` where that is known, and
    ``alpha_c_reason``/``alpha_l_reason`` why. ``semantic_end``/``positional_end``: where the branch stops
    being valid inside the range, with its kind (:class:`~attnphase.phase.continuation.BranchEnd`)."""

    params: ModelParams
    alpha_c: float | None
    alpha_l: float | None
    eps_lin: float
    semantic: Any  # pandas.DataFrame (branch_table)
    positional: Any
    global_table: Any
    branches: dict[str, Branch]
    alpha_c_against: str = "positional"
    alpha_c_bound: str | None = None
    alpha_l_bound: str | None = None
    alpha_c_reason: str = ""
    alpha_l_reason: str = ""
    alpha_range: tuple[float, float] = (float("nan"), float("nan"))
    alpha_c_grid: float | None = None
    alpha_l_grid: float | None = None
    alpha_c_pinned: float | None = None
    mixed: list[dict[str, Any]] = field(default_factory=list)
    refined: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    fixed_points: Any = None  # pandas.DataFrame (stability.survey): every fixed point found per α
    global_minimum: Any = None  # pandas.DataFrame (stability.global_minimum)
    alpha_c_kind: str = ""
    alpha_c_location: dict[str, Any] = field(default_factory=dict)
    """Where α_c is a growth factor's crossing of +1 (kind ``competitor loses stability``): the resolution it was
    located at (``nodes``, ``stability_nodes``), its bracket, and ``alpha_curve_nodes``/``difference``: the same
    crossing at the survey's resolution and how far the precise one lies from it (:func:`precise_crossing`)."""
    alpha_c_nodes: int | None = None
    """The split rule's outer order α_c was located at (None without α_c); ``alpha_l_nodes`` the same for α_l."""
    alpha_l_nodes: int | None = None
    alpha_c_err: float | None = None
    """Standard error of α_c from the integration error (:mod:`.uncertainty`); None with
    ``alpha_c_err_reason`` where not given (e.g. the split rule, whose error is not estimated per point)."""
    alpha_c_err_reason: str = ""
    alpha_l_err: float | None = None
    alpha_l_err_reason: str = ""
    integrator: str = ""
    rsb1: Rsb1Crossing = field(default_factory=lambda: Rsb1Crossing(None, None, NOT_REQUESTED))
    """α_c at one step of replica symmetry breaking where RS is in doubt (:func:`~.rsb1_crossing.report`)."""
    scale_refinement: dict[str, Any] = field(default_factory=dict)
    """The scale-aware refinement (:func:`~.scale_refine.scale_refine`), where the student's scale near the lines
    needed a finer order than ``nodes``: its order, α_c's bracket at it, the points solved; empty where not run."""

    @property
    def mixed_found(self) -> bool:
        return any(m.get("mixed", False) for m in self.mixed)

    def branch_end(self, b) -> tuple[float | None, str]:
        """Where branch ``b`` stops being valid: (α, kind), or (None, why not: "valid on the whole range" or
        "never valid on the range (…states…)")."""
        e = self.branches[b].end
        if e is not None:
            return e.alpha, e.kind.value
        if not self.branches[b].valid():      # e.g. collapsed at every α (a strong ridge: q = 0 throughout)
            states = sorted({p.state.value for p in self.branches[b]})
            return None, "never valid on the range (" + ", ".join(states) + ")"
        return None, "valid on the whole range"

    @property
    def spinodal_semantic(self):
        return self.branch_end("semantic")[0]

    @property
    def spinodal_positional(self):
        return self.branch_end("positional")[0]

    def to_dict(self, tables: bool = False) -> dict[str, Any]:
        ends = {b: (self.branches[b].end.to_dict() if self.branches[b].end else None) for b in self.branches}
        ends |= {f"{b}_begin": self.branches[b].begin.to_dict() for b in self.branches if self.branches[b].begin}
        sem_end, pos_end = self.branch_end("semantic"), self.branch_end("positional")
        d = dict(omega=self.params.omega, sigma=self.params.sigma, lam=self.params.lam,
                 alpha_c=self.alpha_c, alpha_c_bound=self.alpha_c_bound, alpha_c_reason=self.alpha_c_reason,
                 alpha_c_err=self.alpha_c_err, alpha_c_err_reason=self.alpha_c_err_reason,
                 alpha_l_err=self.alpha_l_err, alpha_l_err_reason=self.alpha_l_err_reason,
                 integrator=self.integrator, model=dict(L=self.params.L, r=self.params.r,
                                                        r_star=self.params.r_star, A=self.params.A,
                                                        P=self.params.P),
                 alpha_c_against=self.alpha_c_against, alpha_c_kind=self.alpha_c_kind,
                 transition_order=TRANSITION_ORDER.get(self.alpha_c_kind),
                 alpha_c_location=self.alpha_c_location, alpha_c_nodes=self.alpha_c_nodes,
                 alpha_l_nodes=self.alpha_l_nodes, scale_refinement=self.scale_refinement,
                 global_kinds=kind_runs(self.global_minimum), alpha_c_pinned=self.alpha_c_pinned,
                 alpha_l=self.alpha_l, alpha_l_bound=self.alpha_l_bound, alpha_l_reason=self.alpha_l_reason,
                 eps_lin=self.eps_lin, alpha_range=list(self.alpha_range),
                 spinodal_semantic=sem_end[0], spinodal_semantic_kind=sem_end[1],
                 spinodal_positional=pos_end[0], spinodal_positional_kind=pos_end[1], ends=ends,
                 alpha_c_grid=self.alpha_c_grid, alpha_l_grid=self.alpha_l_grid, mixed_found=self.mixed_found,
                 mixed=self.mixed, refined=self.refined, notes=self.notes,
                 states={b: br.states() for b, br in self.branches.items()},
                 params=self.params.to_dict(), provenance=self.provenance)
        d.update(alpha_c_rs=self.alpha_c, **self.rsb1.to_dict(),
                 caveat=rs_caveat(self.params, self.alpha_c, self.alpha_c_against, self.rsb1.alpha_c,
                                  self.rsb1.err))
        if tables:
            for k in ("semantic", "positional", "global_table", "fixed_points", "global_minimum"):
                if getattr(self, k) is not None:
                    d[k] = getattr(self, k).to_dict(orient="records")
        return d


def reasons(g, branches, alpha_c, alpha_l, lo, hi, alpha_min, alpha_max):
    """Bounds and reasons for a missing α_c / α_l."""
    c_bound = l_bound = None
    c_reason = l_reason = ""
    sem_end, pos_end = branches["semantic"].end, branches["positional"].end
    both = g.dropna(subset=["delta_e_t"])
    if alpha_c is None:
        if not branches["semantic"].valid():
            c_bound = f"> {hi:g}"
            saddles = [p.alpha for p in branches["semantic"] if p.state is PointState.UNSTABLE]
            c_reason = f"no valid semantic fixed point for α ≤ {hi:g}" + (
                f" (it exists only as a saddle, unstable against m, at {len(saddles)} α's in "
                f"[{min(saddles):g}, {max(saddles):g}]; elsewhere collapsed or not found)" if saddles else "")
        elif both.empty:
            c_reason = ("the two branches are never valid at the same α (semantic ends at "
                        f"{_fmt_end(sem_end)}, positional at {_fmt_end(pos_end)})")
        elif both["delta_e_t"].iloc[-1] > 0:
            c_bound = f"> {hi:g}"
            c_reason = f"e_t^sem > e_t^pos up to α = {hi:g}" + (" (α_max)" if hi >= alpha_max - 1e-9 else "")
        elif both["delta_e_t"].iloc[0] < 0:
            c_bound = f"< {both['alpha'].iloc[0]:g}"
            c_reason = (f"e_t^sem < e_t^pos wherever both are valid (from α = {both['alpha'].iloc[0]:g}); the "
                        f"semantic branch ends at {_fmt_end(sem_end)}")
        else:
            c_reason = "no down-crossing of e_t^sem − e_t^pos"
    if alpha_l is None:
        top = g.dropna(subset=["eps_lin_minus_eps_g"])
        if len(top) and top["eps_lin_minus_eps_g"].iloc[-1] < 0:
            l_bound = f"> {hi:g}"
            l_reason = f"ε_g of the global minimum stays above ε_lin up to α = {hi:g}"
        else:
            l_reason = "no crossing of ε_g(global) and ε_lin" + ("" if alpha_c is not None else " (no α_c)")
    return c_bound, c_reason, l_bound, l_reason


def _fmt_end(end) -> str:
    return "no end in range" if end is None else f"α ≈ {end.alpha:.4g} ({end.kind.value})"


TRANSITION_ORDER = {"continuous": "continuous onset", "crossing": "first-order crossing",
                    "semantic branch appears": "first order (the semantic branch appears at a fold)",
                    "competitor loses stability": "first order (the competitor loses stability)"}
"""What kind of transition each ``alpha_c_kind`` is (the JSON's ``transition_order``): the semantic branch
born continuously from the competitor (θ → 0 there, e_t continuous), or a jump between distinct fixed points."""


def kind_runs(gm) -> list[dict[str, Any]]:
    """The global minimum's kind as runs over the α table: [{kind, alpha_from, alpha_to}, …]; where e_t does
    not tell the semantic point from another (:func:`~.global_min.mark_ties`) the kind reads
    ``tied: semantic ~ <other>``."""
    if gm is None or gm.empty:
        return []
    runs: list[dict[str, Any]] = []
    kinds = gm["global_kind"].astype(str).to_numpy()
    if "tied" in gm:
        kinds = [f"tied: semantic ~ {o}" if t else k for k, t, o in zip(kinds, gm["tied"], gm["tied_with"])]
    for a, k in zip(gm["alpha"], kinds):
        if runs and runs[-1]["kind"] == k:
            runs[-1]["alpha_to"] = float(a)
        else:
            runs.append(dict(kind=str(k), alpha_from=float(a), alpha_to=float(a)))
    return runs


def global_reason(gm, lo: float, hi: float) -> str:
    runs = kind_runs(gm)
    return "global minimum (lowest e_t among the stable fixed points found): " + ", ".join(
        f"{r['kind']} for α in [{r['alpha_from']:g}, {r['alpha_to']:g}]" for r in runs)
