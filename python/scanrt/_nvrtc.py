"""NVRTC where Python users have it: the library compiles kernels no kernel pack holds
(user-defined operators, predicates, other architectures). The crate asks the dynamic
loader for ``libnvrtc.so.13`` (or ``.12``) by name; this module loads one first, with
global symbols, so that the loader hands the crate that one. In order: the
``nvidia-cuda-nvrtc`` wheel's ``nvidia/cu13/lib`` (``nvidia/cuda_nvrtc/lib`` for CUDA
12) on ``sys.path`` (``pip install scanrt[jit]``), then the library path, then the CUDA
toolkit (``$CUDA_HOME``, ``/usr/local/cuda``)."""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import List, Optional, Sequence

_NAMES = ("libnvrtc.so.13", "libnvrtc.so.12")
# Where the search looked and what it loaded (for the error message a failed compile
# leads to, and for users asking).
SEARCHED: List[str] = []
LOADED: List[str] = []


def wheel_candidates(paths: Sequence[str]) -> List[str]:
    """The NVRTC libraries of pip's CUDA wheels under ``paths`` (``sys.path``), newest
    CUDA first."""
    found = []
    for name in _NAMES:
        for base in paths:
            for lib in ("cu1*", "cuda_nvrtc"):
                found += sorted(glob.glob(os.path.join(base, "nvidia", lib, "lib", name)), reverse=True)
    return found


def _toolkit_candidates() -> List[str]:
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    return [os.path.join(r, "lib64", n) for r in roots if r for n in _NAMES]


def preload() -> Optional[str]:
    """Loads the first NVRTC found (once); returns its path or name, or None."""
    if LOADED:
        return LOADED[0]
    for candidate in wheel_candidates(sys.path) + list(_NAMES) + _toolkit_candidates():
        SEARCHED.append(candidate)
        if os.sep in candidate and not os.path.exists(candidate):
            continue
        try:
            ctypes.CDLL(candidate, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        LOADED.append(candidate)
        return candidate
    return None
