"""A small AST mutator for the equation modules: how many wrong answers does the fast suite catch? (issue 33)

Each mutant changes ONE site of a module's functions (docstrings excluded):

* ``flip``: a binary ``+`` becomes ``-`` and vice versa;
* ``scale``: a numeric constant that is an operand of arithmetic is multiplied by 0.97;
* ``compare``: ``<`` ↔ ``>``, ``<=`` ↔ ``>=``.

The mutant is written into a temporary copy of ``src/`` (the module is re-emitted by ``ast.unparse``: same
semantics, comments dropped) and a targeted subset of the fast tests runs against that copy
(``PYTHONPATH=<copy>``, ``pytest -x``) under a time limit. ``killed``: a test failed (or the run errored);
``timeout``: the subset ran past the limit (counted as killed, listed apart); ``survived``: every test passed.
Sites are sampled (``--per-module``, fixed ``--seed``) because compute is scarce.

    python bench/mutation.py run --per-module 5 --out bench/mutation_results.jsonl   # appends, resumable
    python bench/mutation.py report bench/mutation_results.jsonl                     # markdown table

The per-module subsets are :data:`MODULES`; the score per module goes to docs/benchmarks.md ("Mutation score").
A fixed set of five science mutants runs in the default suite (tests/test_science_mutants.py).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

THEORY_CORE = ["tests/test_real_runs.py::test_theory_point_positional_alpha2_against_the_paper_table",
               "tests/test_real_runs.py::test_theory_curve_semantic_against_the_paper_table",
               "tests/theory/test_theory.py::test_pinned_branches_are_fixed_points_of_full_map",
               "tests/theory/test_theory.py::test_small_alpha_limit"]
"""Fast checks against independent values (the paper's table, the full map, a limit) shared by the modules."""

MODULES: dict[str, dict] = {
    "theory/prior.py": dict(tests=THEORY_CORE),
    "theory/channel.py": dict(tests=THEORY_CORE + ["tests/theory/test_theory.py::test_stein_equals_derivative_forms"]),
    "theory/prox.py": dict(tests=["tests/theory/test_theory.py::test_prox_stationary_and_global",
                                  "tests/theory/test_theory.py::"
                                  "test_loss_gradient_and_hessian_against_finite_differences",
                                  *THEORY_CORE]),
    "theory/observables.py": dict(tests=THEORY_CORE),
    "baseline.py": dict(tests=["tests/test_real_runs.py::test_baseline_against_an_independent_monte_carlo",
                               "tests/test_baseline.py"]),
    "theory/solver.py": dict(tests=[
        "tests/theory/test_theory.py::test_stability_reported_and_semantic_branch_stable_at_alpha2",
        "tests/theory/test_theory.py::test_growth_factor_does_not_depend_on_the_difference_step"],
        functions=("growth", "stability", "_attracts")),
    "theory/stability_general.py": dict(tests=["tests/theory/test_stability_general.py"]),
    "theory/finite_size.py": dict(tests=["tests/theory/test_finite_size.py"]),
    "theory/channel_general.py": dict(tests=[
        "tests/theory/test_starts.py::test_engine_from_default_start_equals_split_rule_off_defaults",
        "tests/theory/test_engine_accuracy.py::test_closed_form_derivatives_equal_autodiff"]),
}
"""Module (under src/attnphase) -> the test subset run against its mutants; ``functions``: only functions whose
name contains one of these. The split rule's stability is ``solver._growth`` (the growth factor of the pinned
direction), the engine's ``stability_general``; the engine's map is ``channel_general`` (fields, hats, prior,
free energy of the general model)."""

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


def mutate(source: str, site: Site, names: tuple[str, ...] | None = None) -> str:
    """``source`` with ``site`` mutated (re-emitted by ``ast.unparse``)."""
    tree = ast.parse(source)
    node = {s.index: n for s, n in _sites_in(tree, source, site.module, names)}[site.index]
    if site.kind == "flip":
        node.op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
    elif site.kind == "scale":
        node.value = node.value * SCALE
    else:
        node.ops = [SWAP[type(node.ops[0])]()]
    return ast.unparse(tree) + "\n"


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


def copy_tree(dest: Path) -> Path:
    """A copy of ``src/attnphase`` under ``dest/src`` (without caches); returns ``dest/src``."""
    src = dest / "src"
    shutil.copytree(SRC / "attnphase", src / "attnphase", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def run_tests(src: Path, tests: list[str], timeout: float, cache: Path) -> tuple[str, float, str]:
    """Run ``tests`` against the package in ``src``: (outcome, seconds, last lines of output)."""
    env = {**os.environ, "PYTHONPATH": str(src), "ATTNPHASE_XLA_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", "-m", "not slow",
           "-o", "addopts=", *tests]
    t = time.time()
    try:
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.time() - t, ""
    tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-3:])
    return ("survived" if p.returncode == 0 else "killed"), time.time() - t, tail


def cmd_run(args) -> None:
    rng = random.Random(args.seed)
    done = set()
    out = Path(args.out)
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["module"], r["index"], r.get("baseline", False)))
    with tempfile.TemporaryDirectory(prefix="attnphase-mut-") as tmp:
        src = copy_tree(Path(tmp))
        cache = Path(args.cache or (Path(tempfile.gettempdir()) / "attnphase-mutation-xla"))
        for module in args.modules or MODULES:
            spec = MODULES[module]
            path = src / "attnphase" / module
            original = path.read_text()
            names = spec.get("functions")
            all_sites = [s for s, _ in sites(module, original, names)]
            chosen = sorted(rng.sample(all_sites, min(args.per_module, len(all_sites))), key=lambda s: s.index)
            if (module, -1, True) not in done:
                outcome, secs, tail = run_tests(src, spec["tests"], args.timeout * 2, cache)
                _append(out, dict(module=module, index=-1, baseline=True, outcome=outcome, seconds=round(secs, 1),
                                  sites=len(all_sites), tail=tail))
                if outcome != "survived":
                    print(f"{module}: the unmutated subset does not pass ({outcome}); skipped\n{tail}", flush=True)
                    continue
            for s in chosen:
                if (module, s.index, False) in done:
                    continue
                path.write_text(mutate(original, s, names))
                try:
                    outcome, secs, tail = run_tests(src, spec["tests"], args.timeout, cache)
                finally:
                    path.write_text(original)
                rec = asdict(s) | dict(outcome=outcome, seconds=round(secs, 1), sites=len(all_sites), tail=tail)
                _append(out, rec)
                print(f"{module}:{s.line} {s.kind} `{s.text}` -> {outcome} ({secs:.0f} s)", flush=True)


def _append(path: Path, rec: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def cmd_report(args) -> None:
    recs = [json.loads(line) for line in Path(args.file).read_text().splitlines() if line.strip()]
    explained = {}
    if args.explained and Path(args.explained).exists():
        explained = json.loads(Path(args.explained).read_text())
    print("| module | sites | sampled | killed | timeout | survived | explained | score |")
    print("|---|---|---|---|---|---|---|---|")
    for module in MODULES:
        rs = [r for r in recs if r["module"] == module and not r.get("baseline")]
        if not rs:
            continue
        k = sum(r["outcome"] == "killed" for r in rs)
        t = sum(r["outcome"] == "timeout" for r in rs)
        surv = [r for r in rs if r["outcome"] == "survived"]
        e = sum(f"{module}:{r['index']}" in explained for r in surv)
        score = (k + t + e) / len(rs)
        print(f"| {module} | {rs[0]['sites']} | {len(rs)} | {k} | {t} | {len(surv)} | {e} | {score:.0%} |")
    print()
    for r in recs:
        if r.get("outcome") == "survived" and not r.get("baseline"):
            key = f"{r['module']}:{r['index']}"
            print(f"- survivor `{key}` line {r['line']} {r['kind']} `{r['text']}`: {explained.get(key, 'OPEN')}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--per-module", type=int, default=5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--timeout", type=float, default=420)
    r.add_argument("--out", default=str(ROOT / "bench" / "mutation_results.jsonl"))
    r.add_argument("--cache", default=None)
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
