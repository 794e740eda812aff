#!/usr/bin/env bash
# Builds everything on a machine without a GPU and stages what the GPU machine (CUDA
# toolkit, no Rust) needs into ./stage: test and benchmark binaries, the demo, and an
# installed prefix (libraries, header, CMake package) for ffi-tests.
# Then, on the GPU machine:  scripts/gpu-suite.sh stage OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf stage && mkdir -p stage/bin stage/tests
cargo build --release --bins --examples --benches
cargo test --release --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        shutil.copy(m["executable"], "stage/tests/" + m["target"]["name"])
'
cp target/release/scanrt-demo target/release/examples/bench_compare stage/bin/
crit=$(ls -t target/release/deps/scan-* | grep -v '\.d$' | head -1)
cp "$crit" stage/bin/scan_criterion
if [ -x scripts/install.sh ]; then SCANRT_SKIP_BUILD=1 scripts/install.sh "$PWD/stage/prefix" >/dev/null; fi
strip stage/bin/* stage/tests/* 2>/dev/null || true
strip --strip-debug stage/prefix/lib/*.a stage/prefix/lib/*.so 2>/dev/null || true
du -sh stage
