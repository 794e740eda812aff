"""scanrt's Python package against sequential references: NumPy on the host backend, and
PyTorch, CuPy and JAX on the GPU where present (skipped otherwise). Random data with
printed seeds; every function, axis, direction and exclusive form; autograd against
PyTorch's own operators; torch.compile and CUDA graphs; errors."""

import math
import os

import numpy as np
import pytest

import scanrt

SEED = int(os.environ.get("SCANRT_TEST_SEED", "20261126"))


def rng(salt: int = 0) -> np.random.Generator:
    print(f"seed {SEED} + {salt}")
    return np.random.default_rng(SEED + salt)


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


# ---------------------------------------------------------------- host (NumPy)

@pytest.mark.parametrize("shape", [(1,), (7,), (1000,), (3, 33), (4, 5, 6)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_cumsum_matches_the_loop(shape, exclusive, reverse):
    x = rng(len(shape)).integers(-50, 50, size=shape).astype(np.int32)
    got = scanrt.cumsum(x, exclusive=exclusive, reverse=reverse)
    want = seq_scan(x.astype(np.int64), lambda a, b: a + b, exclusive, reverse)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_numpy_axes_and_initial(axis):
    x = rng(axis + 10).standard_normal((6, 9)).astype(np.float64)
    got = scanrt.cumsum(x, axis=axis, initial=2.5)
    moved = np.moveaxis(x, axis, -1)
    want = np.moveaxis(seq_scan(moved, lambda a, b: a + b, initial=2.5), -1, axis)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("view", ["transposed", "every_other_column", "reversed_rows", "fortran", "cube_middle"])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_strided_views_scan_where_they_lie(view, reverse):
    """Views NumPy makes without a copy (transposes, slices with steps, negative strides,
    column-major arrays, inner axes): every axis against the loop."""
    base = rng(20).integers(-50, 50, size=(37, 66)).astype(np.int64)
    x, axes = {
        "transposed": (base.T, [0, 1]),
        "every_other_column": (base[:, ::2], [0, 1]),
        "reversed_rows": (base[::-1], [0, 1]),
        "fortran": (np.asfortranarray(base), [0, 1]),
        "cube_middle": (base[:36].reshape(3, 12, 66)[:, :, 5:60], [1, 0, 2]),
    }[view]
    for axis in axes:
        got = scanrt.cumsum(x, axis=axis, reverse=reverse)
        moved = np.moveaxis(x, axis, -1)
        want = np.moveaxis(seq_scan(moved, lambda a, b: a + b, reverse=reverse), -1, axis)
        np.testing.assert_array_equal(got, want, err_msg=f"{view} axis {axis}")


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_summed_area_tables(exclusive, reverse):
    x = rng(21).integers(0, 100, size=(3, 37, 66))[:, :, 3:60].astype(np.int32)
    got = scanrt.summed_area_table(x, exclusive=exclusive, reverse=reverse)
    want = seq_scan(x.astype(np.int64), lambda a, b: a + b, exclusive, reverse)
    want = np.moveaxis(seq_scan(np.moveaxis(want, -2, -1), lambda a, b: a + b, exclusive, reverse), -1, -2)
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        scanrt.summed_area_table(np.zeros(5))


@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_float16_accumulates_in_float32(reverse):
    """Each result is the f32 running sum rounded once to f16: a float16 accumulator
    would lose the eighths past 2^8."""
    x = (rng(16).integers(-64, 65, size=(3, 5000)) / 8).astype(np.float16)
    got = scanrt.cumsum(x, reverse=reverse, initial=0.375)
    want = seq_scan(x.astype(np.float32), lambda a, b: np.float32(a + b), reverse=reverse,
                    initial=np.float32(0.375), identity=np.float32(0))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want.astype(np.float16))
    wide = scanrt.cumsum(x, reverse=reverse, dtype="float32")
    assert wide.dtype == np.float32
    np.testing.assert_array_equal(wide, seq_scan(x.astype(np.float32), lambda a, b: np.float32(a + b),
                                                 reverse=reverse, identity=np.float32(0)))
    values, _ = scanrt.cummax(x, reverse=reverse)  # compared as float32, exactly
    np.testing.assert_array_equal(values, seq_scan(x, lambda a, b: max(a, b), reverse=reverse,
                                                   identity=np.float16(-np.inf)))


def test_numpy_cumprod_cummax_logcumsumexp_recurrence():
    r = rng(3)
    x = r.uniform(0.5, 1.5, size=(3, 200)).astype(np.float64)
    np.testing.assert_allclose(scanrt.cumprod(x), np.cumprod(x, axis=-1), rtol=1e-10)
    v, i = scanrt.cummax(x)
    np.testing.assert_array_equal(v, np.maximum.accumulate(x, axis=-1))
    want_i = np.array([[int(np.argmax(row[: k + 1] == row[: k + 1].max())) for k in range(len(row))] for row in x])
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_allclose(scanrt.logcumsumexp(x), np.logaddexp.accumulate(x, axis=-1), rtol=1e-10)
    a, b = r.uniform(-1, 1, size=(2, 300)), r.standard_normal((2, 300))
    h = scanrt.linear_recurrence(a, b, initial=0.5)
    want = np.empty_like(a)
    for row in range(2):
        s = 0.5
        for t in range(300):
            s = a[row, t] * s + b[row, t]
            want[row, t] = s
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64", "float16", "float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_numpy_sort_and_argsort_are_stable(dtype, descending):
    r = rng(7)
    keys = r.integers(0, 20, size=5001).astype(dtype)
    if dtype.startswith("float"):
        keys[::97] = np.nan
        keys[::89] = -0.0
    got, idx = scanrt.argsort(keys, descending=descending)
    # Python's sort is stable in both directions (equal keys keep their input order).
    order = sorted(range(len(keys)), key=lambda k: _sort_key(keys[k]), reverse=descending)
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(got.view(np.uint8), keys[order].view(np.uint8))


def _sort_key(v):
    if isinstance(v, (np.floating, float)):
        if math.isnan(v):
            return (2, 0.0)
        return (1, float(v), math.copysign(1.0, float(v)))
    return (1, int(v))


def _selections_match(xp, to_numpy, make):
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


def test_numpy_selections_and_segments():
    _selections_match(np, np.asarray, np.asarray)


@pytest.mark.parametrize("offset_type", ["int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_segments_by_offsets(offset_type, reverse):
    r = rng(36)
    x = r.integers(-50, 50, size=20000).astype(np.int64)
    lengths = r.integers(0, 300, size=200)  # empty segments too
    offsets = np.concatenate([[0], np.minimum(np.cumsum(lengths), x.size), [x.size]]).astype(offset_type)
    got = scanrt.cumsum(x, reverse=reverse, offsets=offsets)
    want = np.empty_like(x)
    bounds = sorted(set(int(o) for o in offsets) | {0, x.size})
    for a, b in zip(bounds[:-1], bounds[1:]):
        part = x[a:b][::-1] if reverse else x[a:b]
        run = np.cumsum(part)
        want[a:b] = run[::-1] if reverse else run
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        scanrt.cumsum(x, offsets=offsets.astype(np.float32))


AFFINE = """
struct Affine { float a, b; };
__device__ Affine combine(Affine l, Affine r) { return Affine{l.a * r.a, r.a * l.b + r.b}; }
__device__ Affine make(int64_t i, float a, float b) { return Affine{a, b}; }
__device__ void write(const Affine& s, float& h) { h = s.b; }
"""


def affine_operator():
    return scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                           load=("make", ["float32", "float32"]), store=("write", ["float32"]))


def test_operators_are_checked_and_need_host_functions_for_numpy():
    op = affine_operator()
    assert op.name == "affine"
    with pytest.raises(TypeError, match="host functions"):
        op(np.ones(4, np.float32), np.ones(4, np.float32))
    with pytest.raises(TypeError, match="host_load"):
        scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                        load=("make", ["float32", "float32"]), store=("write", ["float32"]),
                        host_combine=lambda l, r: l, host_store=lambda s: 0.0)
    with pytest.raises(ValueError, match="identity"):
        scanrt.Operator("bad", AFFINE, "Affine", 8, 4, "combine", b"\0" * 4)
    with pytest.raises((TypeError, ValueError)):
        scanrt.Operator("bad", AFFINE, "Affine", 6, 4, "combine", b"\0" * 6)


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


@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_user_operator_with_host_functions(reverse):
    r = np.random.default_rng(SEED + 11)
    op = host_affine_operator()
    for n in (1, 2, 1000):
        a, b = r.uniform(-1, 1, n).astype(np.float32), r.standard_normal(n).astype(np.float32)
        h = op(a, b, reverse=reverse)
        want, s = np.zeros(n), 0.0
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            s = float(a[t]) * s + float(b[t])
            want[t] = s
        np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-5)
    # Segments by offsets, each from its own carry, and an axis.
    offsets = np.array([0, 3, 3, 10], dtype=np.int64)
    a, b = r.uniform(-1, 1, 10).astype(np.float32), r.standard_normal(10).astype(np.float32)
    h = op(a, b, offsets=offsets, reverse=reverse)
    for lo, hi in zip(offsets[:-1], offsets[1:]):
        np.testing.assert_allclose(h[lo:hi], op(a[lo:hi], b[lo:hi], reverse=reverse) if hi > lo else h[lo:hi],
                                   rtol=1e-5)
    m_a, m_b = r.uniform(-1, 1, (7, 3)).astype(np.float32), r.standard_normal((7, 3)).astype(np.float32)
    cols = op(m_a, m_b, axis=0, reverse=reverse)
    for c in range(3):
        np.testing.assert_allclose(cols[:, c], op(m_a[:, c].copy(), m_b[:, c].copy(), reverse=reverse), rtol=1e-5)


def test_numpy_host_function_errors_are_raised():
    x = np.ones(100, np.float32)

    def broken(first, then):
        raise ZeroDivisionError("from host_combine")

    with pytest.raises(ZeroDivisionError, match="from host_combine"):
        host_affine_operator(host_combine=broken)(x, x)
    with pytest.raises(ValueError, match="3 bytes; the state is 8"):
        host_affine_operator(host_load=lambda i, a, b: b"abc")(x, x)
    with pytest.raises(TypeError, match="not bytes"):
        host_affine_operator(host_load=lambda i, a, b: 5)(x, x)
    with pytest.raises(ValueError, match="2 values for 1 outputs"):
        host_affine_operator(host_store=lambda s: (1.0, 2.0))(x, x)
    # The operator stays usable after a failed scan.
    np.testing.assert_allclose(host_affine_operator()(x, x)[:3], [1, 2, 3])


def test_errors_are_python_exceptions():
    with pytest.raises(TypeError, match="complex64"):
        scanrt.cumsum(np.zeros(4, dtype=np.complex64))
    with pytest.raises(ValueError):
        scanrt.linear_recurrence(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError):
        scanrt.cumsum(np.zeros(4), axis=3)
    with pytest.raises(TypeError):
        scanrt.cumsum([1, 2, 3])


@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_carries_chain_chunks(reverse):
    """A long array scanned chunk after chunk, the carry one array element."""
    x = rng(7).integers(0, 1000, 100_001).astype(np.int64)
    carry = np.array([5], dtype=np.int64)
    out = np.empty_like(x)
    bounds = [0, 1, 40_000, 40_000, 99_999, 100_001]
    chunks = list(zip(bounds[:-1], bounds[1:]))
    for lo, hi in (reversed(chunks) if reverse else chunks):
        out[lo:hi] = scanrt.cumsum(x[lo:hi], exclusive=True, reverse=reverse, initial=carry, total=carry)
    want = seq_scan(x, lambda a, b: a + b, exclusive=True, reverse=reverse, initial=5)
    assert np.array_equal(out, want) and carry[0] == 5 + x.sum()
    # One row of a 2-D array is one sequence along the last axis: one carry.
    row_total = np.zeros(1, dtype=np.int64)
    scanrt.cumsum(x.reshape(1, -1), total=row_total)
    assert row_total[0] == x.sum()
    with pytest.raises(TypeError):
        scanrt.cumsum(x.reshape(1, -1), axis=0, total=carry)  # 100001 sequences along axis 0
    with pytest.raises(TypeError):
        scanrt.cumsum(x, total=np.zeros(1, dtype=np.int32))


# ---------------------------------------------------------------- GPU (PyTorch)

try:
    import torch
except ImportError:
    torch = None
cuda = pytest.mark.skipif(not (torch and torch.cuda.is_available()), reason="no CUDA device")


@cuda
@pytest.mark.parametrize("shape", [(1,), (4097,), (1 << 20,), (2, 3000), (1 << 10, 32)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_cumsum_matches_torch(shape, exclusive, reverse):
    g = torch.Generator(device="cuda").manual_seed(SEED)
    x = torch.randint(-100, 100, shape, device="cuda", generator=g, dtype=torch.int32)
    got = scanrt.cumsum(x, exclusive=exclusive, reverse=reverse)
    y = x.flip(-1) if reverse else x
    want = torch.cumsum(y, -1)
    if exclusive:
        want = torch.cat([torch.zeros_like(want[..., :1]), want[..., :-1]], -1)
    want = want.flip(-1) if reverse else want
    assert got.dtype == torch.int64 and got.device == x.device
    assert torch.equal(got, want)


@cuda
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_half_types_accumulate_in_float32(dtype_name, reverse):
    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cuda").manual_seed(SEED)
    x = (torch.randint(-64, 65, (4, 1 << 18), device="cuda", generator=g) / 8).to(dtype)
    x[0, 1000] = float("nan")
    x[1, 7] = float("inf")
    y = x.flip(-1) if reverse else x
    want = torch.cumsum(y.float(), -1)
    want = want.flip(-1) if reverse else want
    got = scanrt.cumsum(x, reverse=reverse)
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), want.to(dtype).float(), rtol=0, atol=0, equal_nan=True)
    assert torch.equal(scanrt.cumsum(x, reverse=reverse, dtype="float32").isnan(), want.isnan())
    x.requires_grad_(True)
    scanrt.cumsum(x, reverse=reverse).sum().backward()
    assert x.grad.dtype == dtype


@cuda
def test_torch_segments_by_offsets():
    g = torch.Generator(device="cuda").manual_seed(SEED)
    x = torch.randint(-100, 100, (1 << 22,), device="cuda", generator=g, dtype=torch.int32)
    lengths = torch.randint(0, 10_000, (1000,), device="cuda", generator=g)
    offsets = torch.cat([torch.zeros(1, device="cuda", dtype=torch.int64), lengths.cumsum(0).clamp(max=x.numel())])
    got = scanrt.cumsum(x, offsets=offsets)
    segment = torch.zeros(x.numel(), device="cuda", dtype=torch.int64)
    segment.index_put_((offsets[1:][offsets[1:] < x.numel()],), torch.ones(1, device="cuda", dtype=torch.int64),
                       accumulate=False)
    ids = segment.cumsum(0)
    want = torch.cumsum(x.long(), 0)
    starts = torch.zeros(int(ids[-1]) + 1, device="cuda", dtype=torch.int64).index_reduce_(
        0, ids, torch.arange(x.numel(), device="cuda"), "amin", include_self=False)
    base = torch.where(starts > 0, want[(starts - 1).clamp(min=0)], torch.zeros_like(starts))
    torch.testing.assert_close(got, want - base[ids], rtol=0, atol=0)


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_user_operator_linear_recurrence(reverse):
    g = torch.Generator(device="cuda").manual_seed(SEED)
    n = 100_003
    a = torch.rand(n, device="cuda", generator=g) * 0.5 + 0.5
    b = torch.rand(n, device="cuda", generator=g) * 2 - 1
    offsets = torch.tensor([0, 10, 10, 4097, 70_000, n], device="cuda", dtype=torch.int32)
    op = affine_operator()
    for kwargs in ({}, {"initial": np.array([1, 0.25], np.float32)}, {"offsets": offsets}):
        h = op(a, b, reverse=reverse, **kwargs)
        assert h.dtype == torch.float32 and h.device == a.device
        starts = set(offsets.tolist()) if "offsets" in kwargs else {0}
        h0 = 0.25 if "initial" in kwargs else 0.0
        ah, bh, want = a.double().cpu().numpy(), b.double().cpu().numpy(), np.empty(n)
        order = range(n - 1, -1, -1) if reverse else range(n)
        run = h0
        for i in order:
            head = (i + 1 in starts or i == n - 1) if reverse else i in starts
            run = ah[i] * (h0 if head else run) + bh[i]
            want[i] = run
        np.testing.assert_allclose(h.cpu().numpy(), want, rtol=1e-4, atol=1e-4)


@cuda
def test_torch_user_operator_on_whole_states_and_compile_errors():
    source = """
struct Pair { unsigned x, y; };
__device__ Pair add(Pair l, Pair r) { return Pair{l.x + r.x, l.y + r.y}; }
"""
    op = scanrt.Operator("pair_sum", source, "Pair", 8, 4, "add", bytes(8))
    pairs = torch.randint(0, 1 << 20, (5000, 2), device="cuda", dtype=torch.int32)
    states = op(pairs.view(torch.uint8).reshape(-1), exclusive=True)
    got = states.view(torch.int32).reshape(-1, 2)
    # The operator adds unsigned 32-bit words: the sums wrap modulo 2^32.
    want = torch.cumsum(pairs.long(), 0) - pairs.long()
    assert torch.equal(got.long() & 0xFFFFFFFF, want & 0xFFFFFFFF)
    broken = scanrt.Operator("broken", "struct Pair { unsigned x; };", "Pair", 4, 4, "missing", bytes(4))
    with pytest.raises(scanrt.ScanrtError, match="missing"):
        broken(torch.zeros(16, device="cuda", dtype=torch.uint8))


@cuda
def test_torch_user_operator_in_compile_and_cuda_graphs():
    op = affine_operator()
    g = torch.Generator(device="cuda").manual_seed(SEED + 5)
    a = torch.rand(70_001, device="cuda", generator=g) * 0.5 + 0.5
    b = torch.rand(70_001, device="cuda", generator=g) * 2 - 1
    want = op(a, b, reverse=True) * 2
    compiled = torch.compile(lambda a, b: op(a, b, reverse=True) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(a, b), want)
    # Captured once, replayed on new inputs.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        op(a, b)  # the kernels are loaded before the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        h = op(a, b)
    b.copy_(torch.rand(70_001, device="cuda", generator=g))
    graph.replay()
    torch.testing.assert_close(h, op(a, b))


@cuda
def test_torch_carries_on_the_device():
    x = torch.randint(0, 1000, (3_000_001,), device="cuda", dtype=torch.int64)
    carry = torch.tensor([7], device="cuda", dtype=torch.int64)
    parts = [scanrt.cumsum(c, initial=carry, total=carry) for c in x.split(1_000_000)]
    assert torch.equal(torch.cat(parts), torch.cumsum(x, 0) + 7)
    assert carry.item() == 7 + x.sum().item()


@cuda
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_scan_across_every_gpu(exclusive, reverse):
    """One logical array over every GPU (one chunk of unequal length per device)."""
    gpus = torch.cuda.device_count()
    g = torch.Generator().manual_seed(SEED)
    lengths = [int(torch.randint(1, 300_000, (1,), generator=g)) for _ in range(gpus)]
    chunks = [torch.randint(0, 1000, (n,), generator=g, dtype=torch.int64).to(f"cuda:{d}")
              for d, n in enumerate(lengths)]
    outs, totals = scanrt.scan_across(chunks, exclusive=exclusive, reverse=reverse, initial=3, with_total=True)
    whole = torch.cat([c.cpu() for c in chunks])
    want = seq_scan(whole.numpy(), lambda a, b: a + b, exclusive=exclusive, reverse=reverse, initial=3)
    assert all(o.device == c.device for o, c in zip(outs, chunks))
    assert np.array_equal(torch.cat([o.cpu() for o in outs]).numpy(), want)
    assert all(t.item() == 3 + whole.sum().item() for t in totals)
    maxes = scanrt.scan_across([c.to(torch.float32) for c in chunks], "max")
    assert torch.equal(torch.cat([m.cpu() for m in maxes]), torch.cummax(whole.to(torch.float32), 0).values)


@cuda
def test_torch_runs_on_the_current_stream_and_axes():
    x = torch.randn(64, 300, device="cuda", dtype=torch.float64)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        got = scanrt.cumsum(x, axis=0)
    s.synchronize()
    torch.testing.assert_close(got, torch.cumsum(x, 0))


@cuda
@pytest.mark.parametrize("shape,axis", [((4097, 3), 0), ((257, 64), 0), ((5, 300, 33), 1), ((6, 7, 2049), 0)])
def test_torch_columns_and_strided_tensors(shape, axis):
    """Scans along dim 0 and inner dims, of contiguous, transposed and sliced tensors,
    against torch.cumsum (integers: exact)."""
    g = torch.Generator(device="cuda").manual_seed(SEED + 7)
    x = torch.randint(-100, 100, shape, device="cuda", dtype=torch.int64, generator=g)
    for view in (x, x.transpose(0, -1), x[..., ::2], x.flip(0)):
        for dim in (axis, -1):
            got = scanrt.cumsum(view, axis=dim)
            assert got.is_contiguous()
            assert torch.equal(got, torch.cumsum(view, dim)), f"{tuple(view.shape)} {view.stride()} dim {dim}"
    f = x.to(torch.float32)  # integer values: every order of the sums is exact
    assert torch.equal(scanrt.cumsum(f, axis=axis, reverse=True), torch.cumsum(f.flip(axis), axis).flip(axis))
    try:
        import cupy
    except ImportError:
        return
    c = cupy.asarray(x.cpu().numpy())
    assert cupy.array_equal(scanrt.cumsum(c, axis=axis), cupy.cumsum(c, axis=axis))


@cuda
def test_torch_summed_area_table():
    x = torch.randint(0, 1000, (2, 1000, 700), device="cuda", dtype=torch.int64)
    assert torch.equal(scanrt.summed_area_table(x), x.cumsum(-1).cumsum(-2))
    t = x.transpose(1, 2)
    assert torch.equal(scanrt.summed_area_table(t), t.cumsum(-1).cumsum(-2))


@cuda
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
def test_torch_recipes_and_their_gradients(dtype_name):
    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cuda").manual_seed(SEED + 1)
    x = torch.randn(4, 5000, device="cuda", dtype=dtype, generator=g, requires_grad=True)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-10)
    # cumsum: its gradient sums 5000 sums again, so f32 results differ from PyTorch's
    # order of summation by up to ~1e-5 of their magnitude; compared against f64.
    (gs,) = torch.autograd.grad(scanrt.cumsum(x).pow(2).sum(), x)
    x64 = x.detach().double().requires_grad_()
    (ws,) = torch.autograd.grad(torch.cumsum(x64, -1).pow(2).sum(), x64)
    scale = ws.abs().max().item()
    torch.testing.assert_close(gs.double(), ws, rtol=0, atol=(1e-4 if dtype == torch.float32 else 1e-12) * scale)
    # cummax values, indices and gradient
    v, i = scanrt.cummax(x)
    wv, wi = torch.cummax(x, -1)
    torch.testing.assert_close(v, wv)
    assert torch.equal(i, wi)
    (gv,) = torch.autograd.grad(v.sum(), x)
    (wgv,) = torch.autograd.grad(wv.sum(), x)
    torch.testing.assert_close(gv, wgv)
    # logcumsumexp
    y = scanrt.logcumsumexp(x)
    torch.testing.assert_close(y, torch.logcumsumexp(x, -1), **tol)
    w = torch.randn_like(y)
    (gl,) = torch.autograd.grad((y * w).sum(), x)
    (wgl,) = torch.autograd.grad((torch.logcumsumexp(x, -1) * w).sum(), x)
    torch.testing.assert_close(gl, wgl, **tol)


@cuda
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(3, 700), (1, 5001)])
def test_torch_linear_recurrence_and_gradient(reverse, shape):
    g = torch.Generator(device="cuda").manual_seed(SEED + 2)
    a = (torch.rand(*shape, device="cuda", dtype=torch.float64, generator=g) * 1.8 - 0.9).requires_grad_()
    b = torch.randn(*shape, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
    h = scanrt.linear_recurrence(a, b, initial=0.25, reverse=reverse)

    def loop(a, b):
        s = torch.full_like(a[:, 0], 0.25)
        steps = range(a.shape[1] - 1, -1, -1) if reverse else range(a.shape[1])
        out = [None] * a.shape[1]
        for t in steps:
            s = a[:, t] * s + b[:, t]
            out[t] = s
        return torch.stack(out, 1)

    want = loop(a, b)
    torch.testing.assert_close(h, want)
    w = torch.randn_like(h)
    ga, gb = torch.autograd.grad((h * w).sum(), (a, b))
    wa, wb = torch.autograd.grad((want * w).sum(), (a, b))
    torch.testing.assert_close(ga, wa)
    torch.testing.assert_close(gb, wb)
    # f32 through torch.compile: the same gradients as eager f64, to f32's precision.
    compiled = torch.compile(lambda a, b: scanrt.linear_recurrence(a, b, initial=0.25, reverse=reverse))
    a32, b32 = (t.detach().float().requires_grad_() for t in (a, b))
    ca, cb = torch.autograd.grad((compiled(a32, b32) * w.float()).sum(), (a32, b32))
    torch.testing.assert_close(ca, wa.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(cb, wb.float(), rtol=1e-3, atol=1e-3)


@cuda
def test_torch_sort_argsort_and_compile_and_graphs():
    x = torch.randn(100_003, device="cuda")
    x[::101] = float("nan")
    v, i = scanrt.argsort(x)
    wv, wi = torch.sort(x, stable=True)
    assert torch.equal(i, wi) and torch.equal(v.isnan(), wv.isnan())
    torch.testing.assert_close(v, wv, equal_nan=True)

    @torch.compile
    def f(t):
        return scanrt.cumsum(t * 2)

    t = torch.randn(5000, device="cuda")
    torch.testing.assert_close(f(t), torch.cumsum(t * 2, 0), rtol=1e-4, atol=1e-3)

    static_in = torch.randn(1 << 16, device="cuda")
    static_out = scanrt.cumsum(static_in)  # compiles outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = scanrt.cumsum(static_in)
    for _ in range(3):
        static_in.copy_(torch.randn_like(static_in))
        graph.replay()
        torch.testing.assert_close(static_out, torch.cumsum(static_in, 0), rtol=1e-4, atol=1e-3)


@cuda
def test_torch_errors():
    with pytest.raises(TypeError, match="complex64"):
        scanrt.cumsum(torch.zeros(4, device="cuda", dtype=torch.complex64))
    with pytest.raises(TypeError, match="dtype="):
        scanrt.logcumsumexp(torch.zeros(4, device="cuda", dtype=torch.int32))
    with pytest.raises(ValueError, match="one device|device"):
        scanrt.linear_recurrence(torch.zeros(4, device="cuda", dtype=torch.float64), torch.zeros(4, dtype=torch.float64))


@cuda
def test_torch_selections_and_segments():
    _selections_match(torch, lambda t: t.cpu().numpy(), lambda a: torch.as_tensor(a, device="cuda"))


# ---------------------------------------------------------------- CuPy and JAX

@cuda
def test_cupy_and_jax_arrays():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(100_000, dtype=cupy.float64) % 7
    got = scanrt.cumsum(x)
    assert isinstance(got, cupy.ndarray)
    cupy.testing.assert_allclose(got, cupy.cumsum(x))
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX has no GPU")
    jx = jnp.arange(100_000, dtype=jnp.float32) % 7
    jgot = scanrt.cumsum(jx)
    np.testing.assert_allclose(np.asarray(jgot), np.cumsum(np.asarray(jx)), rtol=1e-5)


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_scan_out_of_core_host_and_device_sides(reverse):
    x = rng(31).integers(-1000, 1000, 3_000_017).astype(np.int32)
    want = np.cumsum(x[::-1], dtype=np.int64)[::-1] if reverse else np.cumsum(x, dtype=np.int64)
    seen = []
    got = scanrt.scan_out_of_core(x, reverse=reverse, chunk=1_000_000, progress=lambda d, t: seen.append((d, t)))
    assert got.dtype == np.int64 and np.array_equal(got, want)
    assert seen[-1] == (x.size, x.size) and all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))
    # A device array into host memory, and a host array into device memory.
    on_gpu = torch.from_numpy(x).cuda() * 1  # queued work on the current stream, waited for
    np.testing.assert_array_equal(scanrt.scan_out_of_core(on_gpu, reverse=reverse, chunk=999_983), want)
    out = torch.empty(x.size, dtype=torch.int64, device="cuda")
    scanrt.scan_out_of_core(x, out=out, reverse=reverse, chunk=1 << 20)
    np.testing.assert_array_equal(out.cpu().numpy(), want)

    def stop(done, total):
        raise KeyboardInterrupt("stop")

    with pytest.raises(KeyboardInterrupt):
        scanrt.scan_out_of_core(x, chunk=1_000_000, progress=stop)
