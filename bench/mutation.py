"""A small AST mutator for the equation modules: how many wrong answers do the fast tests catch? (issue 33)

Each mutant changes ONE site of a module-level function (docstrings excluded):

* ``flip``: a binary ``+`` becomes ``-`` and vice versa;
* ``scale``: a numeric constant that is an operand of arithmetic is multiplied by 0.97;
* ``compare``: ``<`` ↔ ``>``, ``<=`` ↔ ``>=``.

The mutated function is compiled in its module's namespace and put in place of the original in every attnphase
module that holds it; the package's compiled-program caches (``lru_cache``s, JAX's in-memory caches) are
cleared, and the stored exported programs are off (``ATTNPHASE_EXPORTED=off``), so a mutant inside a jitted
function is traced again. Then the module's targeted checks (:data:`MODULES`: test functions of the fast suite,
called directly) run in THIS process (compiled programs of unchanged code are shared: compute is scarce).
``killed``: a check raised (an AssertionError, or an error such as a non-finite value caught by the package);
``timeout``: the checks ran past ``--timeout`` seconds (SIGALRM; counted as killed, listed apart);
``survived``: every check passed. Sites are sampled (``--per-module``, fixed ``--seed``).

    python bench/mutation.py run --per-module 6 --out bench/mutation_results.jsonl   # appends; resumable
    python bench/mutation.py report bench/mutation_results.jsonl                     # markdown table

The score per module goes to docs/notes/benchmarks-log.md ("Tests that catch a wrong answer"); a fixed set of five science mutants runs
in the default suite (tests/test_science_mutants.py, the same mechanism).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

THEORY_CORE = ("point", "curve", "full_map", "small_alpha")
"""Checks against independent values (the paper's table, the full unpinned map, a small-α limit) shared by the
split rule's modules."""

MODULES: dict[str, dict] = {
    "theory/prior.py": dict(checks=THEORY_CORE),
    "theory/observables.py": dict(checks=THEORY_CORE),
    "baseline.py": dict(checks=("baseline", "baseline_unit")),
    "theory/channel.py": dict(checks=THEORY_CORE + ("stein", "split_map")),
    "theory/solver.py": dict(checks=("growth", "snap"), functions=("growth", "stability", "_attracts")),
    "theory/finite_size.py": dict(checks=("finite_size",), jitted=True),
    "theory/prox.py": dict(checks=("prox",) + THEORY_CORE, jitted=True),
    "theory/stability_general.py": dict(checks=("stability_general",)),
    "theory/channel_general.py": dict(checks=("engine_map",), jitted=True),
}
"""Module (under src/attnphase) -> the checks run against its mutants (:func:`checks`); ``functions``: only
functions whose name contains one of these; ``jitted``: its functions are traced into compiled programs, so
every mutant clears the compiled-program caches (the other modules' functions run as numpy code between
compiled calls, and their mutants reuse the programs). The split rule's stability is ``split_integrator.growth``/``stability``
(the growth factor of the pinned direction), the engine's ``stability_general``; the engine's map is
``channel_general`` (fields, hats, prior, free energy of the general model)."""

SCALE = 0.97
SWAP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


@dataclass(frozen=True)
class Site:
    module: str
    index: int          # position in the module's site list (stable for one source text)
    kind: str           # flip | scale | compare
    line: int
    text: str           # the source of the mutated expression, before


def _functions(tree: ast.Module, names: tuple[str, ...] | None):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                names is None or any(n in node.name for n in names)):
            yield node


def _is_docstring(node: ast.AST, parents: dict) -> bool:
    p = parents.get(node)
    return isinstance(p, ast.Expr) and isinstance(node, ast.Constant) and isinstance(node.value, str)


def sites(module: str, source: str, names: tuple[str, ...] | None = None) -> list[tuple[Site, ast.AST]]:
    """Every mutable site of ``source`` inside the selected functions, in a deterministic order."""
    return _sites_in(ast.parse(source), source, module, names)


def _sites_in(tree, source, module, names):
    """The sites of an already parsed ``tree`` (its own node objects), sorted by line, kind and text."""
    out, seen = [], set()
    for fn in _functions(tree, names):
        parents = {c: p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
        for node in ast.walk(fn):
            if id(node) in seen:
                continue
            kind = None
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
                kind = "flip"
            elif (isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value not in (0, 1)
                  and isinstance(parents.get(node), ast.BinOp) and not _is_docstring(node, parents)):
                kind = "scale"
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAP:
                kind = "compare"
            if kind:
                seen.add(id(node))
                text = ast.get_source_segment(source, node) or ast.unparse(node)
                out.append((Site(module, 0, kind, node.lineno, " ".join(text.split())[:80]), node))
    out.sort(key=lambda t: (t[0].line, t[1].col_offset, t[0].kind))
    return [(Site(s.module, i, s.kind, s.line, s.text), n) for i, (s, n) in enumerate(out)]


def checks() -> dict:
    """Named checks: test functions of the fast suite, called directly (fixtures built here)."""
    for d in (ROOT / "tests", ROOT / "tests" / "theory"):
        sys.path.insert(0, str(d))
    import test_baseline as B
    import test_collapse_snap as CS
    import test_finite_size as F
    import test_finite_size_independent as FI
    import test_real_runs as R
    import test_split_map as SM
    import test_stability_general as SGT
    import test_starts as ST
    import test_theory as T

    from attnphase.model import ModelParams
    from attnphase.theory.engine import solve
    from attnphase.theory.solver import solve_point

    def branches():
        return {b: solve_point(T.PAR, 2.0, b, nodes=6) for b in ("semantic", "positional")}

    def positional():
        s = solve(ModelParams(omega=0.3), 2.0, "positional", qmc_config=SGT.CFG)
        assert s.converged
        return s

    def run(*fs):
        for f in fs:
            f()

    return {
        "point": lambda tmp: R.test_theory_point_positional_alpha2_against_the_paper_table(),
        "curve": lambda tmp: R.test_theory_curve_semantic_against_the_paper_table(tmp),
        "full_map": lambda tmp: T.test_pinned_branches_are_fixed_points_of_full_map(branches()),
        "small_alpha": lambda tmp: T.test_small_alpha_limit(),
        "stein": lambda tmp: T.test_stein_equals_derivative_forms(),
        "snap": lambda tmp: CS.test_the_snap_needs_an_attracting_zero(),
        "split_map": lambda tmp: [SM.test_compiled_map_equals_reference_map(ModelParams(), a, x) for a, x in
                                  ((1.5, (0.08, 0.1, 11.0, 0.08)), (1.25, (0.114, 0.0, 12.3, 0.159)))],
        "prox": lambda tmp: run(T.test_prox_stationary_and_global,
                                T.test_loss_gradient_and_hessian_against_finite_differences),
        "baseline": lambda tmp: R.test_baseline_against_an_independent_monte_carlo(R.eps_lin_monte_carlo()),
        "baseline_unit": lambda tmp: run(B.test_eps_lin_paper_value, B.test_eps_lin_quadrature_converged_and_mc_agrees,
                                         B.test_eps_lin_limits, B.test_fit_linear_solves_normal_equations,
                                         B.test_finite_d_baseline_approaches_eps_lin),
        "growth": lambda tmp: (T.test_stability_reported_and_semantic_branch_stable_at_alpha2(branches()),
                               T.test_growth_factor_does_not_depend_on_the_difference_step()),
        "finite_size": lambda tmp: (
            [F.test_eps_g_coefficient_equals_an_explicit_student_at_dimension_d(c) for c in sorted(F.CASES)],
            F.test_passthrough_is_the_eps_g_term_only_without_positional_overlap(),
            F.test_e_t_term_is_alpha_times_the_training_passthrough(),
            FI.test_passthrough_equals_the_split_rules_prox(0.1148, 0.0, 0.1582, 12.67)),
        "stability_general": lambda tmp: _stability_general(SGT, positional()),
        "engine_map": lambda tmp: (
            ST.test_engine_from_default_start_equals_split_rule_off_defaults(
                "positional", [(0.3, 0.01, 2.0), (0.5, 0.1, 3.0)]),
            ST.test_engine_from_default_start_equals_split_rule_off_defaults(
                "semantic", [(1.0, 0.01, 2.0), (0.5, 0.001, 2.0)])),
    }


def _stability_general(SGT, pos) -> None:
    SGT.test_central_difference_recovers_the_pinned_block_of_a_linear_map()
    SGT.test_growth_is_the_leading_real_part_not_the_spectral_radius()
    SGT.test_verdict_needs_k_standard_errors_from_one()
    SGT.test_engine_growth_equals_split_rule_on_a_stable_positional_point(pos)


def clear_caches() -> None:
    """Forget every compiled program and cached result of the package (a mutant must be traced again)."""
    import jax
    jax.clear_caches()
    for name, mod in list(sys.modules.items()):
        if name.startswith("attnphase") and mod is not None:
            for obj in list(vars(mod).values()):
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()


def install(module_name: str, source: str, site: Site, names) -> list:
    """Compile the top-level function that holds ``site`` with the mutation, in its module's namespace, and put it
    in place of the original in every attnphase and test module; returns the (module, attribute, original) to
    restore."""
    import importlib
    mod = importlib.import_module(module_name)
    tree = ast.parse(source)
    node = {s.index: n for s, n in _sites_in(tree, source, site.module, names)}[site.index]
    top = next(f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and f.lineno <= node.lineno <= f.end_lineno)
    owner, fn = mod, top
    if isinstance(top, ast.ClassDef):           # a method: replaced on its class
        owner = getattr(mod, top.name)
        fn = next(f for f in top.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  and f.lineno <= node.lineno <= f.end_lineno)
    if site.kind == "flip":
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif site.kind == "scale":
        node.value = node.value * SCALE
    else:
        node.ops = [SWAP[type(node.ops[0])]()]
    local: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), mod.__file__, "exec"), mod.__dict__, local)
    original, mutant = vars(owner)[fn.name], local[fn.name]
    if owner is not mod:
        setattr(owner, fn.name, mutant)
        return [(owner, fn.name, original)]
    saved = []
    for name, m in list(sys.modules.items()):       # the package and the test modules (they import by name)
        if m is not None and (name.startswith("attnphase") or name.startswith("test_")):
            for attr, val in list(vars(m).items()):
                if val is original:
                    saved.append((m, attr, val))
                    setattr(m, attr, mutant)
    return saved


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_checks(fns, timeout: float, tmp: Path) -> tuple[str, float, str]:
    import signal
    signal.signal(signal.SIGALRM, _alarm)
    t = time.time()
    signal.alarm(int(timeout))
    try:
        for f in fns:
            f(tmp)
        return "survived", time.time() - t, ""
    except _Timeout:
        return "timeout", time.time() - t, ""
    except BaseException as exc:  # noqa: BLE001 -- any failure of a check kills the mutant
        if isinstance(exc, KeyboardInterrupt):
            raise
        return "killed", time.time() - t, f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.alarm(0)


def cmd_run(args) -> None:
    os.environ.setdefault("ATTNPHASE_EXPORTED", "off")
    os.environ.setdefault("ATTNPHASE_XLA_CACHE", str(Path(tempfile.gettempdir()) / "attnphase-mutation-xla"))
    rng = random.Random(args.seed)
    done = set()
    out = Path(args.out)
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["module"], r["index"]))
    named = checks()
    with tempfile.TemporaryDirectory(prefix="attnphase-mut-") as tmp:
        for module in args.modules or MODULES:
            spec = MODULES[module]
            fns = [named[c] for c in spec["checks"]]
            source = (SRC / "attnphase" / module).read_text()
            names = spec.get("functions")
            all_sites = [s for s, _ in sites(module, source, names)]
            k = args.per_module if not spec.get("jitted") else max(1, args.per_module // 2)
            chosen = sorted(rng.sample(all_sites, min(k, len(all_sites))), key=lambda s: s.index)
            # the unmutated checks first, also on a resumed run: they must pass, and they compile the programs
            outcome, secs, tail = run_checks(fns, args.timeout * 3, Path(tmp))
            if (module, -1) not in done:
                _append(out, dict(module=module, index=-1, baseline=True, outcome=outcome, seconds=round(secs, 1),
                                  sites=len(all_sites), tail=tail))
            print(f"{module}: unmutated checks {outcome} ({secs:.0f} s) {tail}", flush=True)
            if outcome != "survived":
                continue
            mod_name = "attnphase." + module[:-3].replace("/", ".")
            for s in chosen:
                if (module, s.index) in done:
                    continue
                saved = install(mod_name, source, s, names)
                if spec.get("jitted"):
                    clear_caches()
                try:
                    outcome, secs, tail = run_checks(fns, args.timeout, Path(tmp))
                finally:
                    for m, attr, val in saved:
                        setattr(m, attr, val)
                    if spec.get("jitted"):
                        clear_caches()
                rec = asdict(s) | dict(outcome=outcome, seconds=round(secs, 1), sites=len(all_sites), tail=tail)
                _append(out, rec)
                print(f"{module}:{s.line} {s.kind} `{s.text}` -> {outcome} ({secs:.0f} s) {tail[:100]}", flush=True)


def _append(path: Path, rec: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def cmd_report(args) -> None:
    recs = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.strip()]
    explained = {}
    if args.explained and Path(args.explained).exists():
        explained = json.loads(Path(args.explained).read_text())
    print("| module | sites | sampled | killed | timeout | survived | explained | killed by the checks | score |")
    print("|---|---|---|---|---|---|---|---|---|")
    for module in MODULES:
        rs = [r for r in recs if r["module"] == module and not r.get("baseline")]
        if not rs:
            continue
        k = sum(r["outcome"] == "killed" for r in rs)
        t = sum(r["outcome"] == "timeout" for r in rs)
        surv = [r for r in rs if r["outcome"] == "survived"]
        e = sum(f"{module}:{r['index']}" in explained for r in surv)
        score = (k + t + e) / len(rs)
        print(f"| {module} | {rs[0]['sites']} | {len(rs)} | {k} | {t} | {len(surv)} | {e} | {(k + t) / len(rs):.0%} "
              f"| {score:.0%} |")
    n = [r for r in recs if not r.get("baseline")]
    k = sum(r["outcome"] != "survived" for r in n)
    e = sum(f"{r['module']}:{r['index']}" in explained for r in n if r["outcome"] == "survived")
    print(f"| all | | {len(n)} | | | | {e} | {k / len(n):.0%} | {(k + e) / len(n):.0%} |")
    print()
    for r in recs:
        if r.get("outcome") == "survived" and not r.get("baseline"):
            key = f"{r['module']}:{r['index']}"
            print(f"- survivor `{key}` line {r['line']} {r['kind']} `{r['text']}`: {explained.get(key, 'OPEN')}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--per-module", type=int, default=6)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--timeout", type=float, default=240)
    r.add_argument("--out", default=str(ROOT / "bench" / "mutation_results.jsonl"))
    r.add_argument("--modules", nargs="*")
    r.set_defaults(func=cmd_run)
    p = sub.add_parser("report")
    p.add_argument("file")
    p.add_argument("--explained", default=str(ROOT / "bench" / "mutation_explained.json"))
    p.set_defaults(func=cmd_report)
    a = ap.parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    main()
