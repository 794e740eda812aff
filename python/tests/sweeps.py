"""What the tests share: seeded random generators, the segment forms and where their
segments start, the traversal order, the makers that put NumPy data into each library,
the sequential scan loop, the affine operator, and the selections checked on every
library's arrays."""

import os

import numpy as np
import pytest

import scanrt

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


def seq_scan(x: np.ndarray, f, exclusive=False, reverse=False, initial=None, identity=0):
    """The sequential loop along the last axis."""
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=np.result_type(x.dtype, np.asarray(identity).dtype))
    for row in np.ndindex(x.shape[:-1]):
        order = range(x.shape[-1] - 1, -1, -1) if reverse else range(x.shape[-1])
        acc = identity if initial is None else initial
        for i in order:
            nxt = f(acc, x[row + (i,)])
            out[row + (i,)] = acc if exclusive else nxt
            acc = nxt
    return out


AFFINE = """
struct Affine { float a, b; };
__device__ Affine combine(Affine l, Affine r) { return Affine{l.a * r.a, r.a * l.b + r.b}; }
__device__ Affine make(int64_t i, float a, float b) { return Affine{a, b}; }
__device__ void write(const Affine& s, float& h) { h = s.b; }
"""


def affine_operator():
    return scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                           load=("make", ["float32", "float32"]), store=("write", ["float32"]))


def host_affine_operator(**overrides):
    """The affine operator with host functions (states unpacked with struct)."""
    import struct

    def combine(first, then):
        la, lb = struct.unpack("ff", first)
        ra, rb = struct.unpack("ff", then)
        return struct.pack("ff", la * ra, ra * lb + rb)

    host = dict(host_combine=combine, host_load=lambda i, a, b: struct.pack("ff", a, b),
                host_store=lambda s: struct.unpack("ff", s)[1])
    host.update(overrides)
    return scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                           load=("make", ["float32", "float32"]), store=("write", ["float32"]), **host)


def selections_match(xp, to_numpy, make):
    """Compaction, nonzero (with a fixed size), unique runs and a segmented sum on arrays
    made by `make`, against NumPy."""
    r = rng(11)
    x_np = r.integers(0, 4, size=10_007).astype(np.int32)
    mask_np = r.integers(0, 2, size=x_np.shape[0]).astype(bool)
    x, mask = make(x_np), make(mask_np)
    np.testing.assert_array_equal(to_numpy(scanrt.compress(x, mask)), x_np[mask_np])
    np.testing.assert_array_equal(to_numpy(scanrt.nonzero(x)), np.nonzero(x_np)[0])
    out, count = scanrt.nonzero(x, size=x_np.shape[0])
    kept = int(to_numpy(count)[0])
    assert kept == np.count_nonzero(x_np)
    np.testing.assert_array_equal(to_numpy(out)[:kept], np.nonzero(x_np)[0])
    values, counts = scanrt.unique_consecutive(x, return_counts=True)
    heads = [0] + [i for i in range(1, len(x_np)) if x_np[i] != x_np[i - 1]]
    np.testing.assert_array_equal(to_numpy(values), x_np[heads])
    np.testing.assert_array_equal(to_numpy(counts), np.diff(heads + [len(x_np)]))
    # A segmented sum restarts at every flag.
    flags_np = r.integers(0, 50, size=x_np.shape[0]) == 0
    got = to_numpy(scanrt.cumsum(x, segments=make(flags_np)))
    want, acc = np.empty(len(x_np), dtype=np.int64), 0
    for i, v in enumerate(x_np):
        acc = int(v) if flags_np[i] else acc + int(v)
        want[i] = acc
    np.testing.assert_array_equal(got, want)
