#!/usr/bin/env bash
# The default test suite on a GPU machine, keeping its evidence as it goes (docs/gpu.md).
#
#   bench/gpu_suite.sh [extra pytest arguments, e.g. tests/test_simulate.py]
#
# Writes to $OUT (the device tool's result folder), else ./gpu_suite_out:
#   environment.txt  versions (python, jax, jaxlib, the CUDA plugin, distributed, ...), devices, nvidia-smi, cores, memory
#   progress.txt     START / outcome line per test as it happens (bench/gpu_suite_plugin.py)
#   failures.txt     each failure's short traceback and captured output, as it happens
#   pytest.log       pytest's own output (-v, short tracebacks, summary if it got that far)
# Workers: GPU_SUITE_WORKERS (default: cores - 2); the whole script stays under 9 minutes (pytest gets
# GPU_SUITE_SECONDS = 500 s, then SIGINT, so that pytest prints its summary; SIGKILL 20 s later).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${OUT:-$root/gpu_suite_out}"
mkdir -p "$out"
export GPU_SUITE_DIR="$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false        # 1 + workers processes share the GPU's memory
export PYTHONPATH="$root/src:$here${PYTHONPATH:+:$PYTHONPATH}"
cores="$(nproc)"
workers="${GPU_SUITE_WORKERS:-$(( cores > 3 ? cores - 2 : 1 ))}"
budget="${GPU_SUITE_SECONDS:-500}"
cd "$root"

{
  echo "date: $(date -u +%FT%TZ)  cores: $cores  workers: $workers  budget: ${budget}s"
  free -g 2>/dev/null | head -2
  nvidia-smi -L 2>&1 | head -4
  timeout 60 python3 - <<'EOF' 2>&1
import importlib.metadata as md, platform
print("python", platform.python_version())
for name in ("attnphase", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin",
             "jax-cuda13-pjrt", "numpy", "scipy", "optax", "distributed", "dask", "pytest", "pytest-xdist",
             "pytest-timeout", "typer", "click", "rich", "pandas", "pyarrow", "matplotlib"):
    try:
        print(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"{name} NOT INSTALLED")
import jax
print("backend", jax.default_backend(), "devices", jax.devices())
import jax.numpy as jnp
x = jnp.full((256, 256), 1.0001, jnp.float32)          # TF32 drops the 1e-4: a default product shows it
print("float32 matmul, default precision: x@x[0,0] - 256 =", float((x @ x)[0, 0]) - 256.0,
      "; highest:", float(jnp.matmul(x, x, precision="highest")[0, 0]) - 256.0, "(TF32: 0.0; float32: ~0.05)")
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)     # Dask's LocalCluster needs loopback TCP
c = socket.create_connection(s.getsockname(), timeout=5); print("loopback tcp: ok"); c.close(); s.close()
EOF
} > "$out/environment.txt" 2>&1
cat "$out/environment.txt"

opts=(-p gpu_suite_plugin -v --tb=short -rfE -p no:cacheprovider)
if python3 -c "import xdist" 2>/dev/null; then opts+=(-n "$workers" --maxprocesses "$workers"); \
  else echo "pytest-xdist missing: one process" | tee -a "$out/environment.txt"; opts+=(-p no:xdist -o addopts="-m 'not slow' -ra"); fi
if python3 -c "import pytest_timeout" 2>/dev/null; then opts+=(--timeout 240); \
  else echo "pytest-timeout missing: no per-test limit" | tee -a "$out/environment.txt"; fi
timeout --signal=INT --kill-after=20 "$budget" python3 -m pytest "${opts[@]}" "$@" > "$out/pytest.log" 2>&1
rc=$?
echo "pytest exit status $rc (124/130: stopped by the time limit)" | tee -a "$out/progress.txt"
echo "--- outcomes so far:"
awk '$2 ~ /^(PASSED|FAILED|SKIPPED|ERROR)/ {split($2, w, "("); n[w[1]]++} END {for (k in n) print k, n[k]}' \
  "$out/progress.txt"
echo "--- failed:"
grep -E '^ *[0-9.]+ (FAILED|ERROR)' "$out/progress.txt" | awk '{print $4}'
echo "--- started, never ended:"
awk '$2 == "START" {s[$3] = 1} $2 ~ /^(PASSED|FAILED|SKIPPED|ERROR)/ {delete s[$4]} END {for (k in s) print k}' \
  "$out/progress.txt"
exit 0
