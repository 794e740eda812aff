#!/usr/bin/env python3
"""Builds the wheel of one kernel pack: scanrt_kernels_sm<N>-<version>-py3-none-any.whl,
which installs the pack into the directory ``scanrt_kernels`` on ``sys.path``, where
``scanrt`` tells its extension to look (python/scanrt/_packs.py). Data only: one wheel
serves every Python and platform. Standard library only.

Usage:  scripts/kernel-wheel.py PACK VERSION OUT_DIR     (prints the wheel's path)
"""

import base64
import hashlib
import os
import re
import sys
import zipfile


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(pack: str, version: str, out_dir: str) -> str:
    match = re.fullmatch(r"scanrt-kernels-sm_(\d+)\.pack", os.path.basename(pack))
    if not match:
        raise SystemExit(f"{pack}: not a kernel pack's file name (scanrt-kernels-sm_<N>.pack)")
    arch = match.group(1)
    name, dist = f"scanrt-kernels-sm{arch}", f"scanrt_kernels_sm{arch}"
    info = f"{dist}-{version}.dist-info"
    with open(pack, "rb") as f:
        data = f.read()
    files = {
        f"scanrt_kernels/{os.path.basename(pack)}": data,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            f"Summary: scanrt's kernels compiled ahead of time for sm_{arch} GPUs (a kernel pack)\n"
            "License: MIT OR Apache-2.0\nRequires-Python: >=3.9\n").encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: scanrt kernel-wheel.py\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
    }
    record = "".join(f"{path},{digest(body)},{len(body)}\n" for path, body in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    os.makedirs(out_dir, exist_ok=True)
    wheel = os.path.join(out_dir, f"{dist}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(wheel, "w") as z:
        for path, body in files.items():
            entry = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16  # read by every user, as installed data is
            # The pack is compressed already; the text files deflate.
            entry.compress_type = zipfile.ZIP_STORED if path.endswith(".pack") else zipfile.ZIP_DEFLATED
            z.writestr(entry, body)
    return wheel


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    print(build(*sys.argv[1:]))
