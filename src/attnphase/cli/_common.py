"""Shared pieces of the command line: option parsers, model options, output helpers."""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Iterable

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from ..errors import ParameterError
from ..guards import CONFIRM_TASKS, check_grid, check_model_size
from ..jsonable import to_jsonable  # noqa: F401  (re-exported for the commands)
from ..outputs import check_output_path, write_atomic  # noqa: F401 -- re-exported for the commands
from ..model import ModelParams

console = Console(stderr=True)
"""Progress bars and human-readable reports go to stderr; ``--json`` output alone goes to stdout."""


def parse_matrix(name: str, text: str) -> list[list[float]]:
    """``"0.6,0.4;0.4,0.6"`` -> ``[[0.6, 0.4], [0.4, 0.6]]`` (rows separated by ';')."""
    try:
        rows = [[float(v) for v in row.split(",")] for row in text.strip().split(";") if row.strip()]
    except ValueError:
        raise ParameterError(name, "rows of comma-separated numbers separated by ';' "
                             "(e.g. \"0.6,0.4;0.4,0.6\")", text) from None
    if not rows or len({len(r) for r in rows}) != 1:
        raise ParameterError(name, "a rectangular matrix \"a,b;c,d\"", text)
    return rows


def parse_linspace(name: str, text: str) -> np.ndarray:
    """``"START:STOP:NUM"`` -> ``np.linspace(START, STOP, NUM)``; a single number gives one point."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            return np.array([float(parts[0])])
        if len(parts) != 3:
            raise ValueError
        start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
    except ValueError:
        raise ParameterError(name, "START:STOP:NUM (e.g. 0.1:2:20) or a single number", text) from None
    if num < 1 or not (math.isfinite(start) and math.isfinite(stop)):
        raise ParameterError(name, "START:STOP:NUM with finite bounds and NUM >= 1", text)
    if num == 1 and start != stop:
        raise ParameterError(name, "START:STOP:NUM with NUM >= 2 when START != STOP (NUM = 1 would drop STOP)",
                             text)
    check_grid(name, text, num)
    return np.linspace(start, stop, num)


def parse_list(name: str, text: str, allowed: Iterable[str] | None = None) -> list[str]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if allowed is not None:
        allowed = list(allowed)
        bad = [s for s in items if s not in allowed]
        if bad or not items:
            raise ParameterError(name, f"a comma-separated subset of {{{', '.join(allowed)}}}", text)
    return items


def model_params(L: int, r: int, sigma: float, lam: float, omega: float, A: str | None,
                 r_star: int = 1, P: str | None = None) -> ModelParams:
    """Build validated :class:`ModelParams` from CLI options (``A``, ``P`` as ``"a,b;c,d"``); L, r, r* are
    checked against their maxima (:func:`attnphase.guards.check_model_size`) before any matrix is built."""
    L, r, r_star = check_model_size(L, r, r_star)
    kw: dict[str, Any] = dict(L=L, r=r, r_star=r_star, sigma=sigma, lam=lam, omega=omega)
    if A is not None:
        kw["A"] = parse_matrix("A", A)
    elif L != 2:
        kw["A"] = [[1.0 / L] * L for _ in range(L)]
    if P is not None:
        kw["P"] = parse_matrix("P", P)
    return ModelParams(**kw)


def with_stamp(df):
    """A copy of table ``df`` with provenance columns (package version, git commit, dirty flag)."""
    from ..provenance import stamp
    df = df.copy()
    for k, v in stamp().items():
        df[k] = v
    return df


def confirm_size(count: int, what: str, yes: bool, limit: int = CONFIRM_TASKS) -> None:
    """Big requests run only with ``--yes``; without it, one line says how big and how to proceed."""
    if count > limit and not yes:
        raise ParameterError("--yes", f"given to run {what} of {count} items (more than {limit}; "
                             "check the size, then add --yes)", False)


# Reusable Typer option declarations (paper defaults, MODEL.md §1-§4).
OmegaOpt = typer.Option(0.3, "--omega", help="Weight ω of the positional teacher, in [0, 1].")
SigmaOpt = typer.Option(0.5, "--sigma", help="Token standard deviation σ > 0.")
LamOpt = typer.Option(0.01, "--lam", help="Ridge strength λ >= 0.")
AOpt = typer.Option(None, "--A", help="Positional teacher attention, rows ';'-separated "
                    "(default \"0.6,0.4;0.4,0.6\" for L=2, uniform otherwise).")
LOpt = typer.Option(2, "--L", help="Sequence length L >= 2.")
ROpt = typer.Option(1, "--r", help="Student rank r >= 1.")
RStarOpt = typer.Option(1, "--r-star", help="Teacher rank r* >= 1.")
POpt = typer.Option(None, "--P", help="Positional-encoding coefficients, L rows of k numbers, ';'-separated "
                    "(p_l = Σ_j P_lj u_j; default \"1;-1\" for L=2, the identity otherwise).")
JsonOpt = typer.Option(False, "--json", help="One JSON object on stdout (with provenance).")


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")
    sys.stdout.flush()


def print_table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    """A rich table on stdout (human-readable default output)."""
    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right", overflow="fold")
    for row in rows:
        table.add_row(*[_fmt(v) for v in row])
    out = Console()
    # Off a terminal rich assumes 80 columns and would cut the numbers: give it room instead.
    Console(width=max(out.width, 160) if not out.is_terminal else None).print(table)


def _fmt(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{v:.5g}"
    return str(v)


def check_theory_request(params: ModelParams, nodes: int | None, rule: str = "split",
                         branch: str = "semantic", option: str = "--nodes") -> None:
    """The theory solver's own checks (supported L, r, r*; ``nodes`` range and parity for the rule), run
    before any work, so that e.g. ``theory transition --nodes 3`` fails at once instead of after the curves.
    A refusal of the resolution names the command's option (``option``, e.g. ``--curve-nodes``)."""
    from ..theory import solver
    check = getattr(solver, "validate_point", None) or solver._validate
    try:
        check(params, 1.0, branch, solver.DEFAULT_NODES if nodes is None else nodes, rule)
    except ParameterError as exc:
        if exc.name != "nodes":
            raise
        raise ParameterError(option, exc.allowed, exc.got) from None


QMC_OPTIONS = {"qmc_points": "--qmc-points", "points": "--qmc-points", "scrambles": "--scrambles",
               "target": "--qmc-target"}
"""The command-line options of :class:`attnphase.theory.engine.QMCConfig`'s fields (for refusals)."""


def as_option(exc: ParameterError, names: dict[str, str]) -> ParameterError:
    """``exc`` naming the command-line option instead of the library's parameter (``target`` -> ``--qmc-target``)."""
    return ParameterError(names.get(exc.name, exc.name), exc.allowed, exc.got)
