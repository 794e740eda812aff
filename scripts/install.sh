#!/usr/bin/env bash
# Builds scanrt in release mode and installs the C library into PREFIX:
#
#   PREFIX/include/scanrt.h
#   PREFIX/lib/libscanrt.a
#   PREFIX/lib/libscanrt.so -> libscanrt.so.0.4 -> libscanrt.so.0.4.0   (SONAME libscanrt.so.0.4)
#   PREFIX/lib/cmake/scanrt/scanrtConfig.cmake, scanrtConfigVersion.cmake
#   PREFIX/lib/pkgconfig/scanrt.pc
#   PREFIX/share/scanrt/kernels/scanrt-kernels-sm_*.pack   (when built: scanrt-pack build)
#
# Usage:  scripts/install.sh PREFIX
#
# Environment:
#   SCANRT_SKIP_BUILD=1  install what is already in target/release (no cargo), e.g. on a
#                        machine without Rust that received staged artifacts. When that
#                        libscanrt.so has no SONAME it is installed as a plain libscanrt.so
#                        (the CMake package and the .pc file handle both layouts).
#   SCANRT_STRIP=1       strip debug info from the installed libraries (smaller staging).
#   SCANRT_PACK_ARCHS    the kernel packs built first, so that no kernel compiles at first
#                        use: by default this machine's GPUs' (when NVRTC is there);
#                        "native" (the same, required), e.g. "80 90 100", or "none".
#   CARGO                the cargo to run (default: cargo).
#
# The installed prefix is relocatable: the CMake package and the .pc file locate
# everything relative to their own directory.
set -euo pipefail

usage() { echo "usage: $0 PREFIX   (env: SCANRT_SKIP_BUILD=1, SCANRT_STRIP=1, SCANRT_PACK_ARCHS=native|none|\"80 90\")" >&2; exit 2; }
[ $# -eq 1 ] || usage
[ -n "$1" ] || usage

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
cd "$root"

version=$(sed -n 's/^version *= *"\([0-9][0-9.]*\)".*/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || { echo "install.sh: cannot read the version from Cargo.toml" >&2; exit 1; }
major=${version%%.*}
minor=${version#*.}; minor=${minor%%.*}
# While the major version is 0, a minor release may change the ABI: the SONAME names the
# minor too (README, "Versions and the C ABI").
if [ "$major" = 0 ]; then abi="$major.$minor"; else abi="$major"; fi
soname="libscanrt.so.$abi"

target_dir=${CARGO_TARGET_DIR:-$root/target}
release="$target_dir/release"

if [ "${SCANRT_SKIP_BUILD:-0}" != "1" ]; then
  cargo=${CARGO:-cargo}
  # The C libraries, with the headers regenerated (feature `capi`) and a SONAME.
  # Arguments after `--` reach only the scanrt crate's rustc call (and the link-arg only
  # its cdylib), so unlike RUSTFLAGS this rebuilds no dependency.
  "$cargo" rustc --release --lib --features capi --crate-type staticlib,cdylib -- -C "link-arg=-Wl,-soname,$soname"
fi

for f in "$release/libscanrt.a" "$release/libscanrt.so" "$root/include/scanrt.h"; do
  [ -f "$f" ] || { echo "install.sh: $f is missing (build first, or unset SCANRT_SKIP_BUILD)" >&2; exit 1; }
done

# The SONAME the built library carries, if any (readelf, else objdump, else python).
read_soname() {
  if command -v readelf >/dev/null 2>&1; then
    readelf -d "$1" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p'
  elif command -v objdump >/dev/null 2>&1; then
    objdump -p "$1" 2>/dev/null | awk '$1 == "SONAME" { print $2 }'
  elif command -v python3 >/dev/null 2>&1; then
    python3 - "$1" <<'EOF'
import struct, sys
data = open(sys.argv[1], "rb").read()
if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
    sys.exit(0)  # only 64-bit little-endian ELF is handled here
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
for s in secs:
    if s[1] == 6:  # SHT_DYNAMIC
        strtab = secs[s[6]]
        for off in range(s[4], s[4] + s[5], 16):
            tag, val = struct.unpack_from("<qQ", data, off)
            if tag == 14:  # DT_SONAME
                start = strtab[4] + val
                print(data[start:data.index(b"\0", start)].decode())
EOF
  fi
}
built_soname=$(read_soname "$release/libscanrt.so" || true)

echo "installing scanrt $version into $prefix (SONAME: ${built_soname:-none})"
mkdir -p "$prefix/include" "$prefix/lib/cmake/scanrt" "$prefix/lib/pkgconfig"
install -m 644 include/scanrt.h "$prefix/include/scanrt.h"
install -m 644 "$release/libscanrt.a" "$prefix/lib/libscanrt.a"
# Remove what an earlier install left, whichever layout it used.
rm -f "$prefix/lib/libscanrt.so" "$prefix/lib/libscanrt.so.$major" "$prefix/lib/libscanrt.so.$major".*
if [ "$built_soname" = "$soname" ]; then
  install -m 755 "$release/libscanrt.so" "$prefix/lib/libscanrt.so.$version"
  ln -s "libscanrt.so.$version" "$prefix/lib/$soname"
  ln -s "$soname" "$prefix/lib/libscanrt.so"
else
  if [ -n "$built_soname" ]; then
    echo "install.sh: warning: libscanrt.so has SONAME $built_soname, expected $soname; installing it as plain libscanrt.so" >&2
  fi
  install -m 755 "$release/libscanrt.so" "$prefix/lib/libscanrt.so"
fi
if [ "${SCANRT_STRIP:-0}" = "1" ]; then
  strip --strip-debug "$prefix/lib/libscanrt.a" "$(readlink -f "$prefix/lib/libscanrt.so")"
fi

# Kernel packs (`scanrt-pack build` writes them to share/scanrt/kernels, or to
# $SCANRT_KERNEL_PACKS): scanrt looks for them in PREFIX/share/scanrt/kernels.
packs=${SCANRT_KERNEL_PACKS:-$root/share/scanrt/kernels}
# SCANRT_PACK_ARCHS says which to build first: unset, those of this machine's GPUs when
# nvidia-smi lists any and NVRTC is there (else none, with a note); "native" the same but
# failing without them; compute capabilities such as "80 90 100" (no GPU needed);
# "none" none.
native_archs() {  # empty where there is no nvidia-smi or it lists no GPU
  command -v nvidia-smi >/dev/null || return 0
  { nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null || true; } | tr -d . | sort -u | tr '\n' ' '
}
archs=
if [ "${SCANRT_SKIP_BUILD:-0}" != "1" ]; then
  case "${SCANRT_PACK_ARCHS-auto}" in
    none | "") ;;
    auto) archs=$(native_archs) ;;
    native)
      archs=$(native_archs)
      [ -n "$archs" ] || { echo "install.sh: SCANRT_PACK_ARCHS=native but nvidia-smi lists no GPU" >&2; exit 1; } ;;
    *) archs=$SCANRT_PACK_ARCHS ;;
  esac
fi
if [ -n "$archs" ]; then
  args=()
  for a in $archs; do args+=(--arch "$a"); done
  if ! "${CARGO:-cargo}" run --release --bin scanrt-pack -- build "${args[@]}" --out "$packs"; then
    # Unasked-for packs are a convenience: without NVRTC the kernels compile at first use.
    [ "${SCANRT_PACK_ARCHS-auto}" = auto ] || exit 1
    echo "install.sh: no kernel pack built (NVRTC missing?); kernels compile at first use" >&2
  fi
fi
rm -rf "$prefix/share/scanrt/kernels"
if compgen -G "$packs/scanrt-kernels-sm_*.pack" >/dev/null; then
  mkdir -p "$prefix/share/scanrt/kernels"
  install -m 644 "$packs"/scanrt-kernels-sm_*.pack "$prefix/share/scanrt/kernels/"
fi

# CMake package (relocatable: paths relative to the config file's directory).
sed -e "s/@SCANRT_VERSION@/$version/g" -e "s/@SCANRT_SONAME@/$soname/g" cmake/scanrtConfig.cmake.in >"$prefix/lib/cmake/scanrt/scanrtConfig.cmake"
sed -e "s/@SCANRT_VERSION@/$version/g" cmake/scanrtConfigVersion.cmake.in >"$prefix/lib/cmake/scanrt/scanrtConfigVersion.cmake"
chmod 644 "$prefix/lib/cmake/scanrt/"*.cmake

# pkg-config file (relocatable through ${pcfiledir}). Libs.private: what
# `rustc --print native-static-libs` reports for the staticlib on Linux.
cat >"$prefix/lib/pkgconfig/scanrt.pc" <<EOF
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: scanrt
Description: Embeddable GPU prefix-scan runtime with a stable C ABI
Version: $version
Libs: -L\${libdir} -lscanrt
Libs.private: -lpthread -ldl -lm -lrt -lutil -lgcc_s -lc
Cflags: -I\${includedir}
EOF
chmod 644 "$prefix/lib/pkgconfig/scanrt.pc"

echo "installed:"
(cd "$prefix" && ls -l include/scanrt.h lib/libscanrt.* lib/cmake/scanrt/*.cmake lib/pkgconfig/scanrt.pc \
  $(compgen -G "share/scanrt/kernels/*.pack") | sed 's/^/  /')
