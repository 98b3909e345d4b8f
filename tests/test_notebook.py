"""The tutorial notebook (examples/tutorial.ipynb, issue 31) runs from top to bottom on the repository's sources
(its own asserts check α_c and the L = 3 point's convergence), and the committed copy carries its outputs
(the docs site renders them without executing: mkdocs-jupyter, ``execute: false``).

Refresh the committed outputs after changing the notebook:
``PYTHONPATH=src jupyter nbconvert --to notebook --execute --inplace examples/tutorial.ipynb``."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "tutorial.ipynb"


def _images(nb) -> int:
    return sum("image/png" in out.get("data", {}) for c in nb.cells if c.cell_type == "code" for out in c.outputs)


@pytest.mark.slow
def test_notebook_executes(tmp_path, monkeypatch):
    """Slow (50 s idle, 120 CPU-s on a cold compilation cache: 4 training shapes, the default transition, an
    L = 3 engine point): run by `pytest -m slow` and by the refresh command in this file's docstring. The
    default run keeps test_notebook_calls_bind_to_the_current_api (drift of the API the notebook calls) and
    test_committed_notebook_has_its_outputs; its numbers (α_c = 1.25…) are pinned by tests/test_phase.py and
    tests/test_real_runs.py."""
    # the kernel inherits this process's environment: it imports the repository's sources, draws inline
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert _images(nb) >= 1, "the finite-d overlay figure was not drawn"
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "α_c = 1.25" in text, text[-2000:]


def test_committed_notebook_has_its_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), "run the refresh command in this file's docstring"
    assert _images(nb) >= 1
    assert not any(o.output_type == "error" for c in code for o in c.outputs)


def _calls(nb):
    """(name, call node) of every call of ``attnphase.NAME(...)`` and of a name imported from attnphase."""
    imported, out = {}, []
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        tree = ast.parse(c.source)
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("attnphase"):
                imported.update({a.asname or a.name: (n.module, a.name) for a in n.names})
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "attnphase":
                    out.append((("attnphase", f.attr), n))
                elif isinstance(f, ast.Name) and f.id in imported:
                    out.append((imported[f.id], n))
    return out


def test_notebook_calls_bind_to_the_current_api():
    """Every call the notebook makes into attnphase names a function that exists and binds to its current
    signature (positional count and keyword names), without running it: the fast guard against API drift."""
    import importlib
    nb = nbformat.read(NOTEBOOK, as_version=4)
    calls = _calls(nb)
    assert {name for (_, name), _ in calls} >= {"curve", "transition", "simulate", "solve", "QMCConfig"}
    for (module, name), node in calls:
        obj = getattr(importlib.import_module(module), name)
        args = [object()] * len(node.args)
        kwargs = {k.arg: object() for k in node.keywords if k.arg is not None}
        try:
            inspect.signature(obj).bind(*args, **kwargs)
        except TypeError as exc:
            raise AssertionError(f"{module}.{name}({ast.unparse(node)[:80]}…): {exc}") from None
