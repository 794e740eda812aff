#!/usr/bin/env bash
# Builds the Python package's wheels:
# - scanrt: the extension for any Linux x86-64 with glibc 2.17 or newer (manylinux2014;
#   CPython 3.9+ through the stable ABI, one wheel for all), with maturin, linking
#   through zig (the `ziglang` package): nothing outside the package registries, no
#   system compiler. About 2 MB.
# - scanrt-kernels-sm<N>: one per kernel pack found in SCANRT_KERNEL_PACKS (default
#   share/scanrt/kernels, as `scanrt-pack build` or scripts/install.sh make them), data
#   only (py3-none-any, scripts/kernel-wheel.py). A pack of every built-in kernel set is
#   about 65 MB per architecture, too large to carry three in one wheel; installed
#   beside scanrt (`pip install "scanrt[sm90]"`, or `scanrt[kernels]` for all), a built-in
#   kernel needs no NVRTC. Without packs, kernels compile at first use.
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
PATH=$tools/bin:$PATH "$tools/bin/maturin" build --release --zig --compatibility manylinux2014 \
  --manifest-path "$root/python/Cargo.toml" --out "$out"
version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/python/pyproject.toml" | head -1)
packs=${SCANRT_KERNEL_PACKS:-$root/share/scanrt/kernels}
for pack in "$packs"/scanrt-kernels-sm_*.pack; do
  [ -f "$pack" ] || continue
  python3 "$root/scripts/kernel-wheel.py" "$pack" "$version" "$out" >/dev/null
done
ls -la "$out"/scanrt*.whl
