#!/usr/bin/env bash
# Small scans at the launch floor beside CUB, memcpy and an empty launch, in one process:
# builds bench/latency_bench.cu against the installed scanrt (STAGE_DIR/prefix, staged by
# scripts/stage.sh) on the GPU machine and runs it; the CSV and the summary table go to
# OUT_DIR/latency.txt. usage: bench/run_latency_bench.sh STAGE_DIR OUT_DIR
set -euo pipefail
stage=$(cd "$1" && pwd) out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)  # the binary stays out of OUT_DIR, which holds results only
nvcc -O3 -std=c++17 -arch=sm_90 -I"$stage/prefix/include" -o "$bin/latency_bench" "$here/latency_bench.cu" \
  -L"$stage/prefix/lib" -lscanrt -lcuda -Xlinker -rpath -Xlinker "$stage/prefix/lib"
"$bin/latency_bench" | tee "$out/latency.txt"
