#!/usr/bin/env bash
# Runs the comparison benchmark on a GPU machine: builds the CUB harness with nvcc,
# runs it and scanrt's bench_compare (staged by scripts/stage.sh), and merges the two
# into a table and plot. usage: bench/run_gpu_bench.sh STAGE_DIR OUT_DIR [--quick]
set -euo pipefail
stage=$1 out=$2 quick=${3:-}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)  # the harness binary stays out of OUT_DIR, which holds results only
nvcc -O3 -std=c++17 -arch=sm_90 -o "$bin/cub_bench" "$here/cub_bench.cu"
if [ "$quick" = "--quick" ]; then
  sizes=1048576,16777216,268435456 types=u32,f32
else
  sizes=$(python3 -c 'v=[1<<k for k in range(10,31)]+[x for k in (16,20,24,28) for x in ((1<<k)-1,(1<<k)+1,3*(1<<(k-1))+1)]; print(",".join(map(str,sorted(v))))')
  types=u32,f32,u64,f64
fi
"$bin/cub_bench" "$types" "$sizes" > "$out/cub.csv"
"$stage/bin/bench_compare" $quick > "$out/scanrt.csv"
python3 "$here/report.py" "$out/scanrt.csv" "$out/cub.csv" "$out"
