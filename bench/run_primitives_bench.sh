#!/usr/bin/env bash
# The primitives beside CUB and memcpy in one run on a GPU machine: builds the CUB harness
# (bench/cub_select.cu or bench/cub_sort.cu), runs it and `bench_compare --select` or
# `--sort` (staged by scripts/stage.sh), and prints each case's time, its fraction of
# memcpy speed and CUB time / scanrt time against the issue's target.
# usage: bench/run_primitives_bench.sh select|sort STAGE_DIR OUT_DIR
set -euo pipefail
kind=$1 stage=$2 out=$3
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
nvcc -O3 -std=c++17 -arch=sm_90 -o "$bin/cub_$kind" "$here/cub_$kind.cu"
"$bin/cub_$kind" > "$out/cub_$kind.csv"
"$stage/bin/bench_compare" "--$kind" > "$out/scanrt_$kind.csv"
python3 - "$out/scanrt_$kind.csv" "$out/cub_$kind.csv" <<'PY'
import csv, sys
t = {}
for path in sys.argv[1:]:
    for impl, dtype, n, us in csv.reader(open(path)):
        t[(impl, dtype, int(n))] = float(us)
targets = {"select_flagged": 1.2, "partition_flagged": 1.2, "unique": 1.2, "run_length_encode": 1.2, "select_if": 1.0,
           "sort_keys": 1.1, "sort_keys_descending": 1.1, "sort_pairs": 1.0}
print(f"{'case':20} {'type':4} {'n':>10} {'scanrt us':>10} {'of memcpy':>9} {'CUB us':>9} {'CUB/scanrt':>10}  target")
for (impl, dtype, n), us in sorted(t.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0])):
    if not impl.startswith("scanrt_"):
        continue
    case = impl[len("scanrt_"):]
    copy, cub = t.get((f"memcpy_{case}", dtype, n)), t.get((f"cub_{case}", dtype, n))
    ratio = cub / us if cub else float("nan")
    target = targets.get(case, 1.0)
    verdict = "met" if ratio >= target else "NOT MET"
    print(f"{case:20} {dtype:4} {n:>10} {us:>10.1f} {copy / us:>9.3f} {cub or float('nan'):>9.1f} {ratio:>10.2f}  >= {target} {verdict}")
PY
