#!/usr/bin/env bash
# Wheels the device image lacks, fetched HERE (the device machine reaches nothing) into .whl/ for
# `run(..., carry=[".whl"])`; bench/gpu_session.sh installs them there (docs/gpu.md, "The next GPU session").
#
#   bash bench/gpu_wheels.sh            # downloads into .whl/ (ignored by git), checks the size and the imports
#
# The image (python 3.12, JAX 0.11.2) has cloudpickle, toolz, msgpack, psutil, sortedcontainers, pyyaml,
# jinja2, packaging, urllib3, fsspec and click, but not dask or distributed (pyproject.toml:
# dask[distributed]>=2024.1,<2027). Missing with them: their requirements partd, locket, tblib, zict, tornado
# (dask's importlib_metadata is required only below Python 3.12). Versions = those this project's
# development machines run (dask/distributed 2026.8.0; distributed pins dask to the same release).
# All are pure Python except tornado (cp311-abi3 manylinux: any CPython >= 3.11 on x86_64 Linux).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${GPU_WHEELS_DIR:-$root/.whl}"
WHEELS=(dask==2026.8.0 distributed==2026.8.0 partd==1.4.2 locket==1.0.0 tblib==3.2.2 zict==3.0.0 tornado==6.6.1)
MAX_MIB=20
mkdir -p "$dest"
rm -f "$dest"/*.whl
for w in "${WHEELS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dest" "$w" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
done
n="$(ls "$dest"/*.whl | wc -l)"
kib="$(du -sk "$dest" | cut -f1)"
echo "$n wheels, $((kib / 1024)) MiB in $dest:"; ls -1 "$dest"
[ "$n" -eq "${#WHEELS[@]}" ] || { echo "expected ${#WHEELS[@]} wheels" >&2; exit 1; }
[ "$kib" -le $((MAX_MIB * 1024)) ] || { echo "over $MAX_MIB MiB" >&2; exit 1; }
# the install the device does, into a fresh target; every carried module must load from there
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --target "$tmp" "$dest"/*.whl
PYTHONPATH="$tmp" python3 - "$tmp" <<'PY'
import importlib, sys
import dask.distributed  # noqa: F401  (the import the package's --dask-local/--scheduler paths make)
for name in ("dask", "distributed", "partd", "locket", "tblib", "zict", "tornado"):
    origin = importlib.import_module(name).__file__
    assert origin.startswith(sys.argv[1]), f"{name} loaded from {origin}, not from the wheels"
    print(f"ok {name} from the wheels")
PY
