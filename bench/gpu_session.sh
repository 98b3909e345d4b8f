#!/usr/bin/env bash
# One command for a lent GPU machine (docs/gpu.md, "The next GPU session: one command"):
#
#   device tool: run(command="bash bench/gpu_session.sh", carry=[".whl"], timeout_s=600)
#   (.whl/ from `bash bench/gpu_wheels.sh`: dask + distributed and what they need, missing from the image)
#
# Parts, in order of value, each under its own time limit (seconds; environment variables override them).
# A part that runs out of time gets SIGINT (Python prints where it was), SIGKILL 10 s later, is recorded as
# "timeout" in summary.txt, and the next part still runs. A part never gets more than the time left.
# A signal to the script (the device tool's own limit) stops the running part's whole process group first.
#   env       versions, devices, nvidia-smi, the carried wheels, Dask's requirements     GPU_SESSION_ENV_S      (40)
#   batch     bench_engine.py --parts batch --batch-sizes 4096x4 (64 points)              GPU_SESSION_BATCH_S    (100)
#   points    bench_engine.py --parts points --cases L2-semantic,L3-semantic            GPU_SESSION_POINTS_S   (120)
#   finite_d  bench_gpu_finite_d.py: L-BFGS and GD, d = 1000, α = 2, 24 instances,      GPU_SESSION_FINITE_D_S (150)
#             vmapped in groups of 24 and of 1
#   suite     gpu_suite.sh on docs/gpu.md's "short first look" (Dask tests included)     all the time left
# Issue 34's parts (not in the default selection; docs/gpu.md, "The paper's diagrams on a GPU"):
#   GPU_SESSION_PARTS=env,slice,diagram_cpu,diagram_gpu bash bench/gpu_session.sh
#   slice        bench_gpu_diagram.py: ω = 0.3, 25 α × 2 inits × 24 instances, d = 1000  GPU_SESSION_SLICE_S  (260)
#   diagram_cpu  theory phase-diagram 40 × 40 × 2, cores − 2 workers on the host's CPU     GPU_SESSION_DCPU_S   (100)
#   diagram_gpu  the same, its cores − 2 worker processes sharing the device               all the time left
# The whole script: GPU_SESSION_SECONDS (530) of wall time, compilation included; ~10 s kept for the end.
# GPU_SESSION_SCALE=tiny: the same parts at toy sizes and budgets of seconds (tests/test_gpu_session.py, on
# the CPU); GPU_SESSION_PARTS="env,finite_d" runs a subset.
#
# Files under $OUT (else ./gpu_session_out), at most 8 (the device tool returns 8):
#   summary.txt      one line per part: status (ok / timeout / failed rc / skipped), wall, budget; file count
#   session.log      the output of every part, with the commands
#   benchmarks.diff  what the benches wrote into docs/notes/benchmarks-log.md (apply with `git apply`)
#   finite_d.json    the finite-d numbers (bench_gpu_finite_d.py --json)
#   slice.json, diagram_cpu.json, diagram_gpu.json   issue 34's parts (bench_gpu_diagram.py; the CLI's --json)
#   suite/environment.txt, suite/progress.txt, suite/failures.txt, suite/pytest.log   (bench/gpu_suite.sh)
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="${OUT:-$root/gpu_session_out}"
mkdir -p "$out"
cd "$root"
scale="${GPU_SESSION_SCALE:-full}"
log="$out/session.log"
summary="$out/summary.txt"
: > "$log"
: > "$summary"
t_start=$(date +%s)
scratch="$(mktemp -d)"
part_pid=
# the outer limit (the device tool's timeout) signals this script: stop the running part's whole group first
stop_part() {
  if [ -n "$part_pid" ]; then
    kill -INT -- "-$part_pid" 2>/dev/null; sleep 2; kill -KILL -- "-$part_pid" 2>/dev/null
  fi
}
trap 'stop_part; rm -rf "$scratch"' EXIT
trap 'echo "=== stopped by a signal" >> "$log"; exit 143' TERM INT HUP
cp docs/notes/benchmarks-log.md "$scratch/benchmarks.before.md"
export XLA_PYTHON_CLIENT_PREALLOCATE=false     # benches start worker processes; each allocates as it needs
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1

if [ "$scale" = tiny ]; then
  total="${GPU_SESSION_SECONDS:-200}"
  b_env="${GPU_SESSION_ENV_S:-40}"; b_batch="${GPU_SESSION_BATCH_S:-2}"; b_points="${GPU_SESSION_POINTS_S:-2}"
  b_fd="${GPU_SESSION_FINITE_D_S:-90}"
  batch_args=(--batch 2 --batch-sizes 16x2)
  points_args=(--cases L2-semantic --reps 1)
  fd_args=(--d 60 --instances 4 --groups 2 --optimizers lbfgs,gd --gd-steps 20 --reps 1)
  suite_args=(tests/test_model.py -k positional_directions_orthonormal)
  b_slice="${GPU_SESSION_SLICE_S:-150}"; b_dcpu="${GPU_SESSION_DCPU_S:-150}"
  slice_args=(--d 40 --alphas 2 --instances 2)
  diagram_args=(--omegas 0.3:0.3:1 --alphas 1:1.5:2)
  export GPU_SUITE_WORKERS="${GPU_SUITE_WORKERS:-1}"
else
  total="${GPU_SESSION_SECONDS:-530}"
  b_env="${GPU_SESSION_ENV_S:-40}"; b_batch="${GPU_SESSION_BATCH_S:-100}"; b_points="${GPU_SESSION_POINTS_S:-120}"
  b_fd="${GPU_SESSION_FINITE_D_S:-150}"
  batch_args=(--batch-sizes 4096x4)
  points_args=(--cases L2-semantic,L3-semantic)
  fd_args=()
  suite_args=(tests/test_model.py tests/test_simulate.py tests/test_simulate_instance.py tests/test_baseline.py
              tests/test_robustness.py tests/test_compiled_programs.py tests/test_sweeps.py tests/test_sweeps_real.py
              tests/test_phase_continuation.py tests/test_precision.py tests/theory/test_split_map.py
              tests/theory/test_engine.py tests/theory/test_stability_general.py tests/theory/test_rank2_defaults.py)
  b_slice="${GPU_SESSION_SLICE_S:-260}"; b_dcpu="${GPU_SESSION_DCPU_S:-100}"
  slice_args=()
  diagram_args=()
fi
parts="${GPU_SESSION_PARTS:-env,batch,points,finite_d,suite}"
reserve=10

left() { echo $(( total - ($(date +%s) - t_start) - reserve )); }

say() { echo "$*" | tee -a "$log"; }

# run_part NAME BUDGET COMMAND...: run under min(BUDGET, time left); one line in summary.txt
run_part() {
  local name=$1 budget=$2; shift 2
  case ",$parts," in *",$name,"*) ;; *) printf '%-9s %-14s\n' "$name" "not selected" >> "$summary"; return;; esac
  local l; l=$(left)
  [ "$budget" -gt "$l" ] && budget=$l
  if [ "$budget" -lt 2 ]; then
    printf '%-9s %-14s %7s  budget %4ss\n' "$name" "skipped" "-" "$budget" >> "$summary"
    say "=== $name: skipped, no time left"; return
  fi
  say "=== $name: $(date -u +%H:%M:%S), budget ${budget}s: $*"
  local t0 t1 rc status
  t0=$(date +%s.%N)
  # timeout makes its own process group, which a signal to this script's group does not reach: run it in the
  # background and pass the outer limit's signal on to that group (stop_part), so no pytest outlives the script
  timeout --signal=INT --kill-after=10 "$budget" "$@" >> "$log" 2>&1 &
  part_pid=$!
  wait "$part_pid"
  rc=$?
  part_pid=
  t1=$(date +%s.%N)
  case $rc in
    0) status=ok;;
    124|137) status=timeout;;
    *) status="failed rc $rc";;
  esac
  local wall; wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
  printf '%-9s %-14s %6ss  budget %4ss\n' "$name" "$status" "$wall" "$budget" >> "$summary"
  say "=== $name: $status after ${wall}s (exit status $rc)"
}

env_part() {
  date -u +%FT%TZ
  echo "cores $(nproc); scale $scale; total ${total}s; PYTHONPATH=$PYTHONPATH"
  free -g 2>/dev/null | head -2
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,utilization.gpu,clocks.max.sm \
    --format=csv 2>&1 | head -4
  python3 - <<'EOF'
import importlib.metadata as md, platform
print("python", platform.python_version())
for name in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda13-pjrt", "numpy", "scipy",
             "optax", "dask", "distributed", "tornado", "typer", "click", "pytest", "pytest-xdist", "pytest-timeout"):
    try:
        print(f"  {name} {md.version(name)}")
    except md.PackageNotFoundError:
        print(f"  {name} NOT INSTALLED")
try:   # Dask's own requirements against what this machine has (the image plus the carried wheels)
    from packaging.requirements import Requirement
    for dist in ("dask", "distributed"):
        for text in md.requires(dist) or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                have = md.version(req.name)
                ok = req.specifier.contains(have, prereleases=True)
            except md.PackageNotFoundError:
                have, ok = "missing", False
            print(f"  {dist} requires {req}: {have} {'ok' if ok else 'NOT MET'}")
    import dask.distributed  # noqa: F401
    print("import dask.distributed: ok")
except Exception as exc:  # noqa: BLE001  (evidence, not control flow)
    print("dask check:", repr(exc))
import jax
print("backend", jax.default_backend(), "devices", jax.devices())
EOF
}

# the carried wheels (bench/gpu_wheels.sh), installed outside the tree
if compgen -G "$root/.whl/*.whl" > /dev/null; then
  if python3 -m pip install -q --no-index --no-deps --no-compile --target "$scratch/site" "$root"/.whl/*.whl \
       >> "$log" 2>&1; then
    export PYTHONPATH="$PYTHONPATH:$scratch/site"
    say "wheels: installed $(ls "$root"/.whl/*.whl | wc -l) from .whl/"
  else
    say "wheels: pip install FAILED (see above)"
  fi
else
  say "wheels: none carried (.whl/ missing): Dask tests will fail"
fi

export -f env_part
export scale total
run_part env "$b_env" bash -c env_part
run_part batch "$b_batch" python3 bench/bench_engine.py --parts batch --before '' "${batch_args[@]}"
run_part points "$b_points" python3 bench/bench_engine.py --parts points --before '' "${points_args[@]}"
run_part finite_d "$b_fd" python3 bench/bench_gpu_finite_d.py --json "$out/finite_d.json" "${fd_args[@]}"
run_part slice "$b_slice" python3 bench/bench_gpu_diagram.py --json "$out/slice.json" "${slice_args[@]}"
# the theory diagram (CLI defaults: 40 ω × 40 α, both branches); its --json (wall time, cells, lines) to a file
diagram() {  # diagram NAME WORKERS [JAX_PLATFORMS]
  local name=$1 workers=$2
  env ${3:+JAX_PLATFORMS=$3} python3 -m attnphase theory phase-diagram --out "$scratch/$name" --workers "$workers" \
    --json "${diagram_args[@]}" > "$out/$name.json"
}
export -f diagram
export out scratch
export diagram_args_str="${diagram_args[*]}"
host_workers=$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))
run_part diagram_cpu "$b_dcpu" bash -c 'diagram_args=($diagram_args_str); diagram diagram_cpu "$1" cpu' _ "$host_workers"
run_part diagram_gpu "$(left)" bash -c 'diagram_args=($diagram_args_str); diagram diagram_gpu "$1"' _ "$host_workers"
# the suite: pytest stops at GPU_SUITE_SECONDS (SIGINT, summary) and is killed 20 s later; ~20 s before
# that for gpu_suite.sh's environment.txt
suite_budget=$(left)
export GPU_SUITE_SECONDS=$(( suite_budget - 45 ))
if [ "$GPU_SUITE_SECONDS" -ge 20 ]; then
  run_part suite "$suite_budget" env OUT="$out/suite" bash bench/gpu_suite.sh "${suite_args[@]}"
else
  run_part suite 0 true
fi
if [ -f "$out/suite/progress.txt" ]; then      # gpu_suite.sh exits 0 whatever pytest did: say what it did
  { echo "suite: $(grep -h 'pytest exit status' "$out/suite/progress.txt" | tail -1)"
    awk '$2 ~ /^(PASSED|FAILED|SKIPPED|ERROR)/ {split($2, w, "("); n[w[1]]++} END {for (k in n) printf "  %s %d\n", k, n[k]}' \
      "$out/suite/progress.txt"; } >> "$summary"
fi

python3 - "$scratch/benchmarks.before.md" docs/notes/benchmarks-log.md "$out/benchmarks.diff" <<'EOF'
import difflib, sys
before, after = (open(p).read().splitlines(keepends=True) for p in sys.argv[1:3])
diff = difflib.unified_diff(before, after, "a/docs/notes/benchmarks-log.md", "b/docs/notes/benchmarks-log.md")
open(sys.argv[3], "w").writelines(diff)
EOF
files=$(find "$out" -type f | wc -l)
{
  echo "total $(( $(date +%s) - t_start ))s of ${total}s; scale $scale; files under \$OUT: $files (limit 8)"
  [ "$files" -le 8 ] || echo "WARNING: more than 8 files; the device tool returns only 8"
} >> "$summary"
say "--- summary"
cat "$summary" >> "$log"
cat "$summary"
find "$out" -type f | sort | sed "s|^$out/|  |" >> "$log"
exit 0
