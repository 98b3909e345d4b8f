"""bench/gpu_session.sh, the one command for a lent GPU (docs/gpu.md), on the CPU at GPU_SESSION_SCALE=tiny:
every part's plumbing, the per-part time limits (a part that runs out is recorded, the next one still runs),
and what the device tool brings back (at most 8 files, at most ``$OUT/a/b/file`` deep).

The script runs on a copy of the tree (the benches write docs/notes/benchmarks-log.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_FILES = 8                       # the device tool returns at most 8 files ...
MAX_DEPTH = 3                       # ... no deeper than $OUT/a/b/file
DOCUMENTED = {"summary.txt", "session.log", "benchmarks.diff", "finite_d.json", "suite/environment.txt",
              "suite/progress.txt", "suite/failures.txt", "suite/pytest.log", "slice.json", "diagram_cpu.json",
              "diagram_gpu.json"}
PARTS = ("env", "batch", "points", "finite_d", "suite")
DIAGRAM_PARTS = ("env", "slice", "diagram_cpu", "diagram_gpu")   # issue 34's session (docs/gpu.md)
ENGINE_TITLE = "## General theory engine: the unrolled prox (issue 11, helper hA)"


def _copy_tree(dst: Path) -> None:
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
    for d in ("src", "bench", "tests"):
        shutil.copytree(ROOT / d, dst / d, ignore=skip)
    (dst / "docs" / "notes").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "notes" / "benchmarks-log.md", dst / "docs" / "notes")
    shutil.copy(ROOT / "pyproject.toml", dst)
    if (ROOT / ".whl").is_dir():                       # bench/gpu_wheels.sh's download, when there is one
        shutil.copytree(ROOT / ".whl", dst / ".whl")


def _run(tmp: Path, **env) -> tuple[Path, Path, subprocess.CompletedProcess]:
    root, out = tmp / "tree", tmp / "out"
    _copy_tree(root)
    full_env = {**os.environ, "OUT": str(out), "GPU_SESSION_SCALE": "tiny", **env}
    proc = subprocess.run(["bash", str(root / "bench" / "gpu_session.sh")], env=full_env, capture_output=True,
                          text=True, timeout=600)
    return root, out, proc


def _statuses(out: Path) -> dict[str, str]:
    """part -> the status column of summary.txt (ok, timeout, failed rc N, skipped, not selected)."""
    import re
    pat = re.compile(r"^(\S+)\s+(ok|timeout|failed rc \d+|skipped|not selected)\b")
    return {m[1]: m[2] for m in map(pat.match, (out / "summary.txt").read_text().splitlines())
            if m and m[1] in PARTS + DIAGRAM_PARTS}


def _files(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())


def _check_files(out: Path) -> None:
    files = _files(out)
    assert len(files) <= MAX_FILES, files
    assert all(len(Path(f).parts) <= MAX_DEPTH for f in files), files
    assert set(files) <= DOCUMENTED, set(files) - DOCUMENTED
    assert f"files under $OUT: {len(files)} (limit 8)" in (out / "summary.txt").read_text()


def test_a_part_out_of_time_is_recorded_and_unselected_parts_do_not_run(tmp_path):
    """One part (the engine batch, 2 s: JAX's import and compilation need more) runs out of time: the summary
    says timeout, the log holds the interrupted process's output, nothing else runs or is written."""
    root, out, proc = _run(tmp_path, GPU_SESSION_PARTS="batch")
    assert proc.returncode == 0, proc.stderr
    st = _statuses(out)
    assert st["batch"] == "timeout"
    assert all(st[p] == "not selected" for p in PARTS if p != "batch"), st
    log = (out / "session.log").read_text()
    assert "=== batch: timeout" in log and "bench_engine.py --parts batch" in log
    assert (out / "benchmarks.diff").read_text() == ""          # interrupted before its first row
    assert (root / "docs" / "notes" / "benchmarks-log.md").read_text() == (ROOT / "docs" / "notes" / "benchmarks-log.md").read_text()
    _check_files(out)


def test_no_time_left_skips_every_part(tmp_path):
    _, out, proc = _run(tmp_path, GPU_SESSION_SECONDS="5")
    assert proc.returncode == 0, proc.stderr
    st = _statuses(out)
    assert [st[p] for p in PARTS] == ["skipped"] * len(PARTS), st
    _check_files(out)


def test_diagram_session_on_the_cpu_at_a_reduced_size(tmp_path):
    """Issue 34's prepared session (the paper-size slice at ω = 0.3 and the 40 × 40 theory diagram, on the host's
    cores and on the device) on this CPU at a toy size: every part runs and writes its JSON with the timings the
    GPU run is for; nothing else is written (~30 CPU-s)."""
    root, out, proc = _run(tmp_path, GPU_SESSION_PARTS=",".join(DIAGRAM_PARTS), GPU_SESSION_SECONDS="1200",
                           GPU_SESSION_SLICE_S="500", GPU_SESSION_DCPU_S="300")
    assert proc.returncode == 0, proc.stderr
    st = _statuses(out)
    assert all(st[p] == "ok" for p in DIAGRAM_PARTS) and all(st[p] == "not selected" for p in PARTS[1:]), \
        (st, (out / "session.log").read_text()[-3000:])
    sl = json.loads((out / "slice.json").read_text())
    assert sl["backend"] == "cpu" and sl["group"] == 1 and sl["alphas_done"] == sl["alphas_planned"] == 2
    assert sl["students"] == 8 and [c["alpha"] for c in sl["cells"]] == [0.01, 2.0]
    assert [c["compiled"] for c in sl["calls"]] == [True, False, True, False]     # one compilation per α
    assert all(c["converged"] == 2 for c in sl["calls"]) and sl["per_student_compiled_ms"] > 0
    assert sl["cells"][-1]["delta_e_t"] > 0               # α = 2, ω = 0.3: the semantic start is lower (as at d = 1000)
    for name in ("diagram_cpu", "diagram_gpu"):
        pd_ = json.loads((out / f"{name}.json").read_text())
        assert pd_["not_converged_cells"] == 0 and pd_["provenance"]["seconds"] > 0
        # α_c(0.3) = 1.2515 (docs/notes/2026-12-03-phase-boundaries.md), here linearly interpolated between α = 1 and 1.5: 1.20
        assert pd_["lines"][0]["alpha_c"] == pytest.approx(1.2515, abs=0.06)
    assert (root / "docs" / "notes" / "benchmarks-log.md").read_text() == (ROOT / "docs" / "notes" / "benchmarks-log.md").read_text()
    _check_files(out)


@pytest.mark.slow
def test_tiny_session_runs_every_part(tmp_path):
    """All parts at toy sizes (~1 min): the engine parts run out of their 2 s, the finite-d bench and the GPU
    suite's selection still run and write their files; the finite-d block goes into the issue-10 section of
    docs/notes/benchmarks-log.md (the engine's section stays the last), and benchmarks.diff carries it."""
    root, out, proc = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    st = _statuses(out)
    assert st == dict(env="ok", batch="timeout", points="timeout", finite_d="ok", suite="ok",
                      slice="not selected", diagram_cpu="not selected", diagram_gpu="not selected"), \
        (st, (out / "session.log").read_text()[-3000:])
    log = (out / "session.log").read_text()
    assert "backend cpu" in log
    fd = json.loads((out / "finite_d.json").read_text())
    assert [(r["optimizer"], r["group"]) for r in fd["rows"]] == [("lbfgs", 2), ("gd", 2)]
    assert fd["rows"][0]["converged"] == fd["instances"] == 4
    doc = (root / "docs" / "notes" / "benchmarks-log.md").read_text()
    heads = [ln for ln in doc.splitlines() if ln.startswith("## ")]
    assert heads[-1] == ENGINE_TITLE
    block = doc.index("<!-- finite-d-device-cpu -->")
    assert doc.rindex("## Finite-d throughput and the paper's diagram (issue 10)", 0, block) == \
        doc.rindex("\n## ", 0, block) + 1                      # inside the issue-10 section
    # benchmarks.diff turns the tree's docs/notes/benchmarks-log.md of before the session into the one after it
    applied = tmp_path / "applied"
    (applied / "docs" / "notes").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "notes" / "benchmarks-log.md", applied / "docs" / "notes")
    subprocess.run(["git", "apply", str(out / "benchmarks.diff")], cwd=applied, check=True)
    assert (applied / "docs" / "notes" / "benchmarks-log.md").read_text() == doc
    assert "+### Finite-d training on the CPU: d = 60, α = 2 (n = 120)" in (out / "benchmarks.diff").read_text()
    progress = (out / "suite" / "progress.txt").read_text()
    assert "PASSED" in progress and "test_positional_directions_orthonormal" in progress
    assert (out / "suite" / "environment.txt").exists()
    _check_files(out)


def test_outer_limit_stops_the_running_part(tmp_path):
    """The device tool's limit signals the script's process group; `timeout` runs each part in a group of its
    own, which that signal does not reach. The script passes it on: after SIGTERM to the script's group, no
    process of the part (here the engine batch with a long budget) is left, and the log says why it stopped."""
    import signal
    import time

    root, out = tmp_path / "tree", tmp_path / "out"
    _copy_tree(root)
    env = {**os.environ, "OUT": str(out), "GPU_SESSION_SCALE": "tiny", "GPU_SESSION_PARTS": "batch",
           "GPU_SESSION_BATCH_S": "120"}
    proc = subprocess.Popen(["bash", str(root / "bench" / "gpu_session.sh")], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = out / "session.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "=== batch:" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    marker = "bench/bench_engine.py --parts batch"
    while time.monotonic() < deadline and not _processes_with(marker, root):   # the event: the part's python runs
        time.sleep(0.05)
    assert _processes_with(marker, root), "the part did not start"
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)
    gone = time.monotonic() + 30                          # the event: every process of the part has exited
    while time.monotonic() < gone and _processes_with(marker, root):
        time.sleep(0.05)
    assert not _processes_with(marker, root), "a process of the stopped part outlived the script"
    assert "=== stopped by a signal" in log.read_text()


def _processes_with(text: str, cwd: Path) -> list[int]:
    """pids whose command line contains ``text`` and whose working directory is ``cwd`` (from /proc)."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                here = Path(os.readlink(p / "cwd"))
            except OSError:
                continue
            if text in cmd and here == cwd:
                pids.append(int(p.name))
    return pids
