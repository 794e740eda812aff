"""What the option sweeps of the recipes' and the recurrence's tests share: seeded random
generators, the segment forms and where their segments start, the traversal order, and
the makers that put NumPy data into each library."""

import os

import numpy as np
import pytest

SEED = int(os.environ.get("SCANRT_TEST_SEED", "20261127"))

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # the host-only CI
    torch, HAS_CUDA = None, False
cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs PyTorch with a CUDA GPU")


def rng(salt: int) -> np.random.Generator:
    print(f"seed {SEED} + {salt}")
    return np.random.default_rng(SEED + salt)


def starts_of(n, form, data):
    """Where segments start (forward sense) for each form of segment data."""
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
    if form == "flags":
        starts |= data.astype(bool)
    elif form == "keys":
        starts[1:] |= data[1:] != data[:-1]
    elif form == "offsets":
        for o in data:
            if 0 <= o < n:
                starts[o] = True
    return starts


def walk(n, reverse, starts):
    """(position, restart) in traversal order; a backward scan restarts at segment ends."""
    for k in range(n):
        p = n - 1 - k if reverse else k
        yield p, (starts[p] if not reverse else (p == n - 1 or starts[p + 1]))


def draw_segments(r, n):
    """A random segment form and its data (offsets with empty segments)."""
    form = ["flags", "offsets", "keys"][int(r.integers(0, 3))]
    if form == "flags":
        return form, r.random(n) < 0.05
    if form == "keys":
        return form, np.cumsum(r.random(n) < 0.05).astype(np.int32)
    cuts = np.sort(r.integers(0, n + 1, size=int(r.integers(1, 12))))
    return form, np.concatenate([[0], cuts, [n]]).astype(np.int64)


def segment_kwargs(form, data, make):
    return {{"flags": "segments"}.get(form, form): make(data)}


def numpy_make(a, dtype=None):
    return a if dtype is None else a.astype(dtype)


def torch_make(a, dtype=None):
    t = torch.as_tensor(np.ascontiguousarray(a), device="cuda")
    return t if dtype is None else t.to(getattr(torch, dtype))


def torch_fetch(t):
    return (t.float() if t.dtype == torch.bfloat16 else t).cpu().numpy()
