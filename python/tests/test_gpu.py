"""scanrt's Python package on the GPU against sequential references and PyTorch's own
operators: PyTorch tensors (every function, axis, direction and exclusive form, autograd,
torch.compile and CUDA graphs, errors), then CuPy and JAX arrays. Skipped without a CUDA
device."""

import numpy as np
import pytest

import scanrt
from sweeps import SEED, affine_operator, cuda, rng, selections_match, seq_scan, torch

# ---------------------------------------------------------------- GPU (PyTorch)



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
    # float32 tables past one wave of tiles (0/1 values: every sum exact), into `out`, in
    # place, from int32 (summed in int64), and backward.
    g = torch.Generator(device="cuda").manual_seed(SEED + 7)
    f = torch.randint(0, 2, (3001, 4099), device="cuda", generator=g).float()
    want = f.double().cumsum(-1).cumsum(-2).float()
    assert torch.equal(scanrt.summed_area_table(f), want)
    out = torch.empty_like(f)
    assert scanrt.summed_area_table(f, out=out) is out and torch.equal(out, want)
    same = f.clone()
    scanrt.summed_area_table(same, out=same)
    assert torch.equal(same, want)
    i = f.int()
    assert torch.equal(scanrt.summed_area_table(i), want.long())
    flipped = scanrt.summed_area_table(f, reverse=True)
    assert torch.equal(flipped, scanrt.summed_area_table(f.flip(0, 1)).flip(0, 1))


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
    v, i = scanrt.sort(x, return_indices=True)
    assert torch.equal(scanrt.argsort(x), i)
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
    selections_match(torch, lambda t: t.cpu().numpy(), lambda a: torch.as_tensor(a, device="cuda"))


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
    # Selections count in int32 where JAX has no 64-bit types (the binding writes a U32).
    mask = jx > 3
    kept, count = scanrt.partition(jx, mask)
    want = np.asarray(jx)[np.asarray(mask)]
    assert int(np.asarray(count)[0]) == want.size
    np.testing.assert_array_equal(np.asarray(kept)[:want.size], want)


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

