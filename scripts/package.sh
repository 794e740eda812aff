#!/usr/bin/env bash
# Makes a relocatable binary tarball of the C library for machines without Rust:
# scanrt-VERSION-linux-x86_64.tar.gz in OUT_DIR (default: dist), holding
#   scanrt-VERSION/include/scanrt.h, lib/libscanrt.{a,so*}, lib/cmake/scanrt/,
#   lib/pkgconfig/scanrt.pc and share/scanrt/kernels/scanrt-kernels-sm_*.pack
# (scripts/install.sh's layout). A CMake project unpacks it anywhere and points
# CMAKE_PREFIX_PATH at it: find_package(scanrt) finds everything relative to itself.
#
# Usage:  scripts/package.sh [OUT_DIR]
# Environment: SCANRT_PACK_ARCHS, the kernel packs inside (default "80 90 100": every
# built-in kernel compiled for sm_80, sm_90 and sm_100 with NVRTC; "none": no pack, the
# kernels then compile at first use with the user's NVRTC).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
version=$(sed -n 's/^version *= *"\([0-9][0-9.]*\)".*/\1/p' "$root/Cargo.toml" | head -1)
name=scanrt-$version
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
SCANRT_PACK_ARCHS=${SCANRT_PACK_ARCHS-80 90 100} SCANRT_STRIP=1 "$root/scripts/install.sh" "$staging/$name"
tar -C "$staging" -czf "$out/$name-linux-x86_64.tar.gz" "$name"
echo "$out/$name-linux-x86_64.tar.gz: $(du -h "$out/$name-linux-x86_64.tar.gz" | cut -f1)"
