#!/usr/bin/env bash
# On the GPU machine (python3 with torch, CuPy and JAX; no Rust): installs the wheels of
# WHEEL_DIR (scripts/build-wheels.sh: scanrt and any scanrt-kernels-sm<N>) as a user
# would, with no index and LD_LIBRARY_PATH unset, into a directory of their own; times
# each library's first calls in a new process with an empty kernel cache
# (python/bench/first_call.py); then runs the Python tests against that install.
#   scripts/python-gpu-check.sh WHEEL_DIR OUT_DIR
set -uo pipefail
wheels=$(cd "$1" && pwd); out=$2; root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" "$wheels"/scanrt*.whl || exit 1
echo "installed: $(cd "$wheels" && ls scanrt*.whl | tr '\n' ' ')"
export XLA_PYTHON_CLIENT_PREALLOCATE=false
status=0
for lib in torch cupy jax; do
  env -u LD_LIBRARY_PATH PYTHONPATH="$site" SCANRT_CACHE_DIR="$(mktemp -d)" \
    python3 "$root/python/bench/first_call.py" $lib || status=1
done
(cd "$(mktemp -d)" && env -u LD_LIBRARY_PATH PYTHONPATH="$site" python3 -m pytest -q -rfs -p no:cacheprovider \
  "$root/python/tests" > "$out/pytest.log" 2>&1) || status=1
tail -15 "$out/pytest.log"
exit $status
