"""The import architecture (issue 29, GUIDE "Architecture"): the import-linter contracts of pyproject.toml (layers
cli → api, reproduce, sweeps → phase → theory → model, data; no cycle inside theory/ and cli/; the QMC solve
never reaching the verdicts that call it; split rule and engine independent), and the structure of theory/: no
import cycle, no private (underscore) name imported across modules, no module over 700 lines."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
THEORY = SRC / "attnphase" / "theory"
MAX_LINES = 700


def _modules(package_dir: Path, src: Path = SRC) -> dict[str, Path]:
    """Dotted module name → file, for every .py under ``package_dir`` (a package's ``__init__`` is the package)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, str]]:
    """(imported module, imported name or "") for every import in the file, relative imports resolved; function-
    level and TYPE_CHECKING imports included (they are imports all the same)."""
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = pkg[: len(pkg) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub, "") if sub in known else (target, alias.name))
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _theory_graph(package_dir: Path = THEORY, src: Path = SRC):
    """(modules, import graph between them, private cross-module imports) of one package (theory/)."""
    mods = _modules(package_dir, src)
    top = ".".join(package_dir.relative_to(src).parts)
    graph, private = {m: set() for m in mods}, []
    for m, path in mods.items():
        for target, name in _imports(m, path, mods):
            if target in mods and target != m and target != top:
                graph[m].add(target)
                if name.startswith("_") and not name.startswith("__"):
                    private.append(f"{m} imports {target}.{name}")
    return mods, graph, private


def test_import_linter_contracts_hold():
    """``lint-imports`` on this checkout (its src/ first on the path, its pyproject.toml's contracts)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
                          "sys.exit(lint_imports(no_cache=True, no_logo=True))"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout and "BROKEN" not in run.stdout, run.stdout[-4000:]


def test_theory_has_no_import_cycle():
    _, graph, _ = _theory_graph()
    assert _cycles(graph) == []


def test_no_private_name_is_imported_across_theory_modules():
    _, _, private = _theory_graph()
    assert private == []


def test_no_theory_module_exceeds_700_lines():
    mods, _, _ = _theory_graph()
    big = {m: n for m, p in mods.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert big == {}


def test_the_checks_see_a_cycle_and_a_private_import(tmp_path):
    """The checks above can fail: a made-up package with a cycle hidden in a function-level import and a private
    name imported across modules is caught."""
    pkg = tmp_path / "pkg" / "theory"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import shown, _hidden\n")
    (pkg / "b.py").write_text("def shown():\n    from . import a\n    return a\n_hidden = 1\n")
    (pkg / "c.py").write_text("from . import b\n")
    mods, graph, private = _theory_graph(pkg, tmp_path)
    assert _cycles(graph) == [["pkg.theory.a", "pkg.theory.b"]]
    assert private == ["pkg.theory.a imports pkg.theory.b._hidden"]
