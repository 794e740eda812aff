#!/usr/bin/env bash
# Builds everything on a machine without a GPU and stages what the GPU machine (CUDA
# toolkit, no Rust) needs into ./stage: test and benchmark binaries, the demo, and an
# installed prefix (libraries, header, CMake package) for ffi-tests.
# Then, on the GPU machine:  scripts/gpu-suite.sh stage OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf stage && mkdir -p stage/bin stage/tests
cargo build --release --lib --bins --examples --benches
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], "stage/tests/" + m["target"]["name"])
    elif m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"] and {"lib", "rlib"} & set(m["target"]["kind"]):
        shutil.copy(m["executable"], "stage/tests/lib")  # unit tests; the GPU ones are #[ignore]d
'
cp target/release/scanrt-demo target/release/scanrt-pack stage/bin/
cp target/release/examples/{line_of_sight,fibonacci,polynomial,big_add,lexer,range_histogram} stage/bin/
newest() { ls -t target/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
cp "$(newest compare)" stage/bin/bench_compare
cp "$(newest scan)" stage/bin/scan_criterion
scripts/install.sh "$PWD/stage/prefix" >/dev/null  # builds the C libraries (feature capi)
strip stage/bin/* stage/tests/* 2>/dev/null || true
strip --strip-debug stage/prefix/lib/*.a stage/prefix/lib/*.so 2>/dev/null || true
# With SCANRT_STAGE_NVRTC=<dir holding the GPU machine's libnvrtc.so (same major.minor)>,
# fill stage/kernel-cache with every sm_90 specialisation, so the GPU machine loads them
# instead of compiling them (scripts/gpu-suite.sh uses it).
# Compiled once per version of the sources (from nothing, about 25 minutes on two
# cores), into the user's cache directory: a later session on this machine lays the work
# tree anew but may keep it. A new version starts from the newest earlier one: a unit's
# key covers only the headers it includes, so only the units whose sources changed
# compile; the entries no unit read (their atime still the epoch) are then dropped.
if [ -n "${SCANRT_STAGE_NVRTC:-}" ]; then
  sources=$(find kernels src -type f | sort | xargs cat Cargo.toml | sha1sum | cut -c1-12)
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/scanrt-stage/sm90-$sources
  seeded=
  if [ ! -d "$cache" ]; then
    previous=$(ls -td "$(dirname "$cache")"/sm90-* 2>/dev/null | head -1 || true)
    mkdir -p -m 0700 "$(dirname "$cache")" "$cache"
    if [ -n "$previous" ] && [ -n "$(ls -A "$previous")" ]; then
      cp -al "$previous"/. "$cache"/ && touch -a -d @0 "$cache"/* && seeded=1
    fi
  fi
  LD_LIBRARY_PATH="$SCANRT_STAGE_NVRTC" SCANRT_CACHE_DIR="$cache" SCANRT_KERNEL_SETS=every stage/tests/kernels_compile --nocapture
  if [ -n "$seeded" ]; then find "$cache" -type f ! -newerat @86400 -delete; fi
  # ~320 MB of CUBINs compress to ~30-50 MB (xz on every core: minutes less than one)
  XZ_OPT="${XZ_OPT:--T0}" tar -C "$cache" -cJf stage/kernel-cache.tar.xz .
fi
du -sh stage
