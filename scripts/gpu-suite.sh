#!/usr/bin/env bash
# The GPU suite, run on the GPU machine from the repository root over a staged build:
#   scripts/gpu-suite.sh STAGE_DIR OUT_DIR [tests|ffi|sanitize|bench|quickbench|selectbench|sortbench]...
# (no step names = tests ffi bench). Logs go to OUT_DIR.
set -uo pipefail
stage=$(cd "$1" && pwd); out=$2; shift 2
steps=${*:-tests ffi bench}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# A kernel cache staged beside the binaries (scripts/stage.sh) saves compiling here. It
# goes into a directory private to this run (mode 0700), never a shared path.
export SCANRT_CACHE_DIR=${SCANRT_CACHE_DIR:-$(mktemp -d)}
mkdir -p -m 0700 "$SCANRT_CACHE_DIR"
if [ -f "$stage/kernel-cache.tar.xz" ]; then tar -C "$SCANRT_CACHE_DIR" -xJf "$stage/kernel-cache.tar.xz"; fi
status=0
run() { echo "=== $*"; "$@" || { echo "FAILED: $*"; status=1; }; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
for step in $steps; do
  case $step in
    tests)
      run "$stage/tests/kernels_compile" --nocapture
      run "$stage/tests/host"
      run "$stage/tests/gpu" --test-threads=1 --nocapture
      run timeout 600 "$stage/tests/embedding" --test-threads=1 --nocapture
      run "$stage/bin/scanrt-demo" $((1 << 28))
      ;;
    ffi)
      run cmake -S ffi-tests -B /tmp/ffi-build -DCMAKE_PREFIX_PATH="$stage/prefix" -DCMAKE_BUILD_TYPE=Release >"$out/ffi-build.log" 2>&1
      run cmake --build /tmp/ffi-build -j 8 >>"$out/ffi-build.log" 2>&1
      run ctest --test-dir /tmp/ffi-build --output-on-failure
      ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        compute-sanitizer --tool $tool --error-exitcode 9 "$stage/tests/gpu" --test-threads=1 sanitizer_subset >"$out/sanitizer-$tool.log" 2>&1 \
          || { echo "FAILED: compute-sanitizer $tool (see sanitizer-$tool.log)"; status=1; }
        grep -E "SUMMARY" "$out/sanitizer-$tool.log" | sed "s/^/$tool: /"
      done
      # Bad caller workspaces: refused or ended by the watchdog, never a write outside.
      compute-sanitizer --tool memcheck --error-exitcode 9 "$stage/tests/embedding" --test-threads=1 garbage_stale >"$out/sanitizer-workspaces.log" 2>&1 \
        || { echo "FAILED: compute-sanitizer memcheck on bad workspaces (see sanitizer-workspaces.log)"; status=1; }
      grep -E "SUMMARY" "$out/sanitizer-workspaces.log" | sed "s/^/memcheck (bad workspaces): /"
      ;;
    bench) run bench/run_gpu_bench.sh "$stage" "$out" ;;
    quickbench) run bench/run_gpu_bench.sh "$stage" "$out" --quick ;;
    selectbench) run bench/run_primitives_bench.sh select "$stage" "$out/select" ;;
    sortbench) run bench/run_primitives_bench.sh sort "$stage" "$out/sort" ;;
    criterion) run "$stage/bin/scan_criterion" --bench ;;
  esac
done
exit $status
