"""Kernel packs from pip. A pack (every built-in kernel of one GPU architecture, compiled
ahead of time) is too large to ride in the extension's wheel for every architecture at
once, so each comes in its own wheel: ``scanrt-kernels-sm80`` (A100 and the sm_8x GPUs),
``-sm90`` (H100, H200) and ``-sm100`` (B200), as the extras ``scanrt[sm80]``,
``scanrt[sm90]``, ``scanrt[sm100]`` or ``scanrt[kernels]`` (all three). Each installs its
pack into the directory ``scanrt_kernels`` on ``sys.path``, which the extension is told
to look in (``$SCANRT_KERNEL_PACK_DIR``, where set, still names the only one)."""

from __future__ import annotations

import importlib.util
from typing import List

from . import _scanrt


def register() -> List[str]:
    """Tells the extension every installed ``scanrt_kernels`` directory; returns them."""
    spec = importlib.util.find_spec("scanrt_kernels")
    found = list(spec.submodule_search_locations or []) if spec is not None else []
    for directory in found:
        _scanrt.add_kernel_pack_dir(directory)
    return found
