#!/usr/bin/env bash
# Builds the Python package's binary wheel for any Linux x86-64 with glibc 2.17 or newer
# (manylinux2014; CPython 3.9+ through the stable ABI, one wheel for all) with maturin,
# linking through zig (the `ziglang` package): nothing outside the package registries,
# no system compiler. The wheel carries the kernel packs found in SCANRT_KERNEL_PACKS
# (default share/scanrt/kernels, as `scanrt-pack build` or scripts/install.sh make them)
# inside the package, where the extension looks for them (beside itself), so that a
# built-in kernel needs no NVRTC; without packs, kernels compile at first use.
#
# Usage:  scripts/build-wheels.sh [OUT_DIR]     (default: dist)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
tools=$root/build/wheel-tools
if [ ! -x "$tools/bin/maturin" ]; then
  python3 -m venv "$tools"
  "$tools/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2" "ziglang<0.14"
fi
packs=${SCANRT_KERNEL_PACKS:-$root/share/scanrt/kernels}
# The packs ride in the package directory for this build only.
staged=()
trap 'rm -f "${staged[@]}"' EXIT
for pack in "$packs"/scanrt-kernels-sm_*.pack; do
  [ -f "$pack" ] || continue
  install -m 644 "$pack" "$root/python/scanrt/" && staged+=("$root/python/scanrt/$(basename "$pack")")
done
echo "build-wheels.sh: ${#staged[@]} kernel pack(s) inside"
PATH=$tools/bin:$PATH "$tools/bin/maturin" build --release --zig --compatibility manylinux2014 \
  --manifest-path "$root/python/Cargo.toml" --out "$out"
ls -la "$out"/scanrt-*.whl
