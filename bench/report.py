#!/usr/bin/env python3
"""Merges the scanrt and CUB benchmark CSVs (impl,dtype,n,us) into one table and a plot.

usage: report.py scanrt.csv cub.csv OUT_DIR
Prints: time, GB/s (2*n*sizeof(T)/t), ratio to memcpy throughput, ratio to CUB
(CUB time / scanrt time: > 1 means scanrt is faster). Writes OUT_DIR/bench.csv and
OUT_DIR/throughput.png.
"""
import csv
import sys
from collections import defaultdict

SIZE = {"u32": 4, "f32": 4, "u64": 8, "f64": 8, "f16": 2, "bf16": 2}


def load(path):
    rows = {}
    with open(path) as f:
        for impl, dtype, n, us in csv.reader(f):
            rows[(impl, dtype, int(n))] = float(us)
    return rows


def features(rows):
    """Backward, deterministic and segmented scans: throughput counting every byte moved,
    its ratio to memcpy throughput, and the comparison each issue target names."""
    print(f"{'impl':28} {'dtype':5} {'n':>10} {'time us':>9} {'GB/s':>7} {'/memcpy':>8}  comparison")
    for (impl, dtype, n), us in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        if not (impl.startswith("scanrt_backward") or impl.startswith("scanrt_deterministic")
                or impl.startswith("scanrt_seg") or impl.startswith("scanrt_by_key") or impl == "cub_by_key"):
            continue
        size = SIZE[dtype]
        if impl.startswith("scanrt_seg_bits"):
            moved = 2 * n * size + n / 8
        elif impl.startswith("scanrt_seg_offsets"):
            moved = 2 * n * size + 4 * (n / 5000.5 + 1)  # values in and out, the u32 offsets
            if impl.endswith("_carried"):
                moved += 2 * 4 * (n / 5000.5)  # an initial value and a total per segment
        elif impl.startswith("scanrt_seg"):
            moved = 2 * n * size + n  # values in and out, one flag byte each
        elif "by_key" in impl:
            moved = 3 * n * size  # keys, values in and out
        else:
            moved = 2 * n * size
        memcpy = rows.get(("scanrt_memcpy", dtype, n)) or rows.get(("memcpy", dtype, n))
        ratio = (moved / us) / (2 * n * size / memcpy) if memcpy else float("nan")
        note = ""
        if impl.startswith("scanrt_backward"):
            forward = rows.get((impl.replace("backward_", ""), dtype, n))
            if forward:
                note = f"backward/forward throughput {forward / us:.3f}"
        elif impl == "scanrt_deterministic":
            fast = rows.get(("scanrt_single_pass", dtype, n))
            if fast:
                note = f"of non-deterministic single pass {fast / us:.3f}"
        elif impl == "scanrt_seg_offsets_carried":
            plain = rows.get(("scanrt_seg_offsets", dtype, n))
            if plain:
                note = f"of the scan by offsets without carries {plain / us:.3f}"
        elif impl == "scanrt_seg_bytes_backward":
            fwd = rows.get(("scanrt_seg_bytes", dtype, n))
            if fwd:
                note = f"backward/forward throughput {fwd / us:.3f}"
        if impl == "scanrt_seg_offsets":
            cub = rows.get(("cub_by_key_offsets", dtype, n))
            if cub:
                note += f"CUB InclusiveSumByKey on the same segments / scanrt time {cub / us:.2f}"
        elif impl.startswith("scanrt_seg") or impl == "scanrt_by_key":
            cub = rows.get(("cub_by_key", dtype, n))
            if cub:
                note += ("; " if note else "") + f"CUB InclusiveSumByKey / scanrt time {cub / us:.2f}"
        print(f"{impl:28} {dtype:5} {n:>10} {us:9.1f} {moved / us / 1e3:7.1f} {ratio:8.3f}  {note}")


def main():
    rows = load(sys.argv[1])
    rows.update(load(sys.argv[2]))
    out_dir = sys.argv[3]
    table = []
    for (impl, dtype, n), us in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        if dtype not in SIZE or impl in ("memcpy",) or "back_to_back" in impl or "graph" in impl or "host_time" in impl:
            continue
        memcpy = rows.get(("scanrt_memcpy", dtype, n)) or rows.get(("memcpy", dtype, n))
        cub = rows.get(("cub_inclusive", dtype, n))
        gbs = 2 * n * SIZE[dtype] / (us * 1e-6) / 1e9
        table.append((dtype, n, impl, us, gbs, memcpy / us if memcpy else float("nan"), cub / us if cub else float("nan")))
    with open(f"{out_dir}/bench.csv", "w") as f:
        w = csv.writer(f)
        w.writerow(["dtype", "n", "impl", "us", "GB/s", "vs_memcpy", "vs_cub"])
        w.writerows(table)
    print(f"{'dtype':5} {'n':>11} {'impl':20} {'time us':>10} {'GB/s':>8} {'/memcpy':>8} {'CUB/x':>6}")
    for dtype, n, impl, us, gbs, rm, rc in table:
        if impl in ("scanrt_single_pass", "scanrt_matrix", "cub_inclusive", "scanrt_memcpy"):
            print(f"{dtype:5} {n:>11} {impl:20} {us:10.2f} {gbs:8.1f} {rm:8.3f} {rc:6.2f}")
    print()
    features(rows)
    print()
    for key in ("back_to_back", "graph", "host_time"):
        for (impl, dtype, n), us in rows.items():
            if key in impl:
                print(f"{impl:24} n={n}: {us:.2f} us per call")
    # scanrt's own host time: its call minus the driver's launch of an empty kernel.
    own = [(n, us - rows[("empty_launch_host_time", dtype, n)])
           for (impl, dtype, n), us in rows.items()
           if impl == "scanrt_host_time" and ("empty_launch_host_time", dtype, n) in rows]
    for n, us in own:
        print(f"{'scanrt_own_host_time':24} n={n}: {us:.2f} us per call (host time less an empty launch)")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, axes = plt.subplots(2, 2, figsize=(13, 9), sharex=True)
    for ax, dtype in zip(axes.flat, ("u32", "f32", "u64", "f64")):
        series = defaultdict(list)
        for d, n, impl, us, gbs, _, _ in table:
            if d == dtype and (n & (n - 1)) == 0:
                series[impl].append((n, gbs))
        # One colour per implementation across the panels; CUB dashed, memcpy black.
        colours = plt.get_cmap("tab20").colors
        for i, (impl, pts) in enumerate(sorted(series.items())):
            if impl in ("scanrt_auto", "cub_exclusive"):
                continue
            pts.sort()
            style = dict(color="black", lw=2) if impl == "scanrt_memcpy" else dict(color=colours[i % len(colours)])
            if impl.startswith("cub"):
                style["ls"] = "--"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=impl, **style)
        ax.set_xscale("log", base=2)
        ax.set_title(f"{dtype} inclusive sum")
        ax.set_ylabel("GB/s (2 n sizeof(T) / t)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("n")
    fig.tight_layout()
    fig.savefig(f"{out_dir}/throughput.png", dpi=110)
    print(f"plot: {out_dir}/throughput.png")


if __name__ == "__main__":
    main()
