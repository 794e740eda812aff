#!/usr/bin/env bash
# Small scans at the launch floor beside CUB, memcpy and an empty launch, in one process:
# builds bench/latency_bench.cu against the installed scanrt (STAGE_DIR/prefix, staged by
# scripts/stage.sh) on the GPU machine and runs it; the CSV and the summary table go to
# OUT_DIR. With BASELINE_PREFIX (another installed scanrt), the harness is built against
# both and the two run alternately, three times each.
# usage: bench/run_latency_bench.sh STAGE_DIR OUT_DIR [BASELINE_PREFIX]
set -euo pipefail
stage=$(cd "$1" && pwd) out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)  # the binaries stay out of OUT_DIR, which holds results only
build() {  # build PREFIX BINARY
  nvcc -O3 -std=c++17 -arch=sm_90 -I"$1/include" -o "$2" "$here/latency_bench.cu" \
    -L"$1/lib" -lscanrt -lcuda -Xlinker -rpath -Xlinker "$1/lib"
}
build "$stage/prefix" "$bin/current"
if [ -z "${3:-}" ]; then
  "$bin/current" | tee "$out/latency.txt"
  exit
fi
build "$(cd "$3" && pwd)" "$bin/baseline"
for round in 1 2 3; do
  for which in baseline current; do
    echo "=== $which, round $round"
    "$bin/$which" > "$out/latency-$which-$round.txt"
    grep -E "^host_ns,(empty_launch|scanrt)" "$out/latency-$which-$round.txt"
    sed -n '/^case/,$p' "$out/latency-$which-$round.txt"
  done
done
