"""Batches of variable-length sequences (segments by offsets) with an initial and a final
value per sequence, against sequential loops: cumsum's carries per segment and
linear_recurrence's varlen form, on NumPy (host backend) and PyTorch (GPU, with
gradients checked by torch.autograd.gradcheck in float64). Random data, printed seeds."""

import os

import numpy as np
import pytest

import scanrt

try:
    import torch
except ImportError:  # the host tests run without PyTorch
    torch = None

SEED = int(os.environ.get("SCANRT_TEST_SEED", "20261127"))
cuda = pytest.mark.skipif(not (torch and torch.cuda.is_available()), reason="no CUDA device")


def rng(salt: int) -> np.random.Generator:
    print(f"seed {SEED} + {salt}")
    return np.random.default_rng(SEED + salt)


def random_offsets(r: np.random.Generator, n: int, mean: int) -> np.ndarray:
    """Non-decreasing CSR offsets over n elements: random lengths, some empty sequences,
    now and then elements before the first offset or after the last."""
    starts = np.flatnonzero(r.random(n) < 1.0 / mean)
    cuts = np.sort(np.concatenate([starts, starts[r.random(len(starts)) < 0.1]]))  # empty ones
    first = [int(r.integers(0, n))] if n and r.random() < 0.25 else [0]
    last = [] if r.random() < 0.25 else [n]
    return np.array(first + [c for c in cuts if c > first[0]] + last, dtype=np.int64)


def sequences_of(offsets: np.ndarray, n: int):
    """Each sequence's [lo, hi), clipped to n."""
    return [(min(int(lo), n), min(int(hi), n)) for lo, hi in zip(offsets[:-1], offsets[1:])]


def loop(x, offsets, step, init, reverse, start, exclusive=False):
    """The sequential reference: each sequence from its own init, every element outside
    them from `start`; returns the outputs and each sequence's total."""
    n = len(x)
    out = np.zeros(n, dtype=x.dtype)
    totals = []

    def run(lo, hi, s):
        for t in (range(hi - 1, lo - 1, -1) if reverse else range(lo, hi)):
            nxt = step(s, t)
            out[t] = s if exclusive else nxt
            s = nxt
        return s

    seqs = sequences_of(offsets, n)
    for k, (lo, hi) in enumerate(seqs):
        totals.append(run(lo, hi, init[k]))
    if len(offsets):
        run(0, min(int(offsets[0]), n), start)
        run(min(int(offsets[-1]), n), n, start)
    else:
        run(0, n, start)
    return out, np.array(totals, dtype=x.dtype)


@pytest.mark.parametrize("offset_type", ["int32", "int64", "uint32", "uint64"])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_cumsum_carries_per_segment(offset_type, exclusive, reverse):
    r = rng(1)
    for n, mean in [(0, 3), (1, 1), (1000, 1), (5000, 37), (70000, 2000)]:
        offsets = random_offsets(r, n, mean).astype(offset_type)
        count = max(len(offsets) - 1, 0)
        x = r.integers(-1000, 1000, size=n).astype(np.int64)
        initial = r.integers(-10**6, 10**6, size=count).astype(np.int64)
        total = np.full(count, 7, dtype=np.int64)
        got = scanrt.cumsum(x, offsets=offsets, initial=initial, total=total, exclusive=exclusive, reverse=reverse)
        want, want_total = loop(x, offsets, lambda s, t: s + x[t], initial, reverse, 0, exclusive)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(total, want_total)
        # A scalar initial value for every segment, totals only.
        total = np.zeros(count, dtype=np.int64)
        got = scanrt.cumsum(x, offsets=offsets, initial=5, total=total, exclusive=exclusive, reverse=reverse)
        want, want_total = loop(x, offsets, lambda s, t: s + x[t], [5] * count, reverse, 5, exclusive)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(total, want_total)


@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_varlen_linear_recurrence(reverse):
    r = rng(2)
    for n, mean in [(1, 1), (3000, 1), (3000, 50), (40000, 5000)]:
        offsets = random_offsets(r, n, mean)
        count = max(len(offsets) - 1, 0)
        a, b = r.uniform(-1, 1, n), r.standard_normal(n)
        h0 = r.standard_normal(count)
        h, final = scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0, reverse=reverse, return_final=True)
        want, want_final = loop(a, offsets, lambda s, t: a[t] * s + b[t], h0, reverse, 0.0)
        np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(final, want_final, rtol=1e-9, atol=1e-12)
        h = scanrt.linear_recurrence(a, b, offsets=offsets, initial=0.5, reverse=reverse)
        want, _ = loop(a, offsets, lambda s, t: a[t] * s + b[t], [0.5] * count, reverse, 0.5)
        np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-12)


def test_numpy_sequence_errors():
    x = np.arange(10, dtype=np.int64)
    offsets = np.array([0, 4, 10], dtype=np.int64)
    with pytest.raises(TypeError, match="one per segment"):
        scanrt.cumsum(x, offsets=offsets, total=np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError, match="by offsets"):
        scanrt.cumsum(x, segments=np.zeros(10, dtype=np.uint8), total=np.zeros(1, dtype=np.int64))
    with pytest.raises(ValueError, match="one float64 h0 per sequence"):
        scanrt.linear_recurrence(x * 1.0, x * 1.0, offsets=offsets, initial=np.zeros(3))
    with pytest.raises(ValueError, match="do not decrease"):
        scanrt.cumsum(x, offsets=np.array([0, 6, 4, 10]), total=np.zeros(3, dtype=np.int64))


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_varlen_linear_recurrence_and_gradcheck(reverse):
    r = rng(3)
    for n, mean, dtype in [(5000, 40, torch.float32), (300_000, 3000, torch.float32), (50_000, 700, torch.float64)]:
        offsets = random_offsets(r, n, mean)
        count = len(offsets) - 1
        a_np, b_np, h0_np = r.uniform(-1, 1, n), r.standard_normal(n), r.standard_normal(count)
        a, b, h0 = (torch.tensor(v, dtype=dtype, device="cuda") for v in (a_np, b_np, h0_np))
        o = torch.tensor(offsets, device="cuda")
        h, final = scanrt.linear_recurrence(a, b, offsets=o, initial=h0, reverse=reverse, return_final=True)
        want, want_final = loop(a_np, offsets, lambda s, t: a_np[t] * s + b_np[t], h0_np, reverse, 0.0)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(h.cpu().numpy(), want, **tol)
        np.testing.assert_allclose(final.cpu().numpy(), want_final, **tol)
    # Gradients of a, b, h0 through h and the final states, in float64, including empty
    # sequences and elements outside every sequence.
    for offsets in ([0, 3, 3, 9, 20, 20], [2, 5, 11, 17], [0, 0, 20], [0, 20, 20, 25]):
        n = 20
        o = torch.tensor(offsets, device="cuda")
        count = len(offsets) - 1
        g = torch.Generator(device="cuda").manual_seed(SEED)
        a = (torch.rand(n, device="cuda", dtype=torch.float64, generator=g) * 1.6 - 0.8).requires_grad_()
        b = torch.randn(n, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
        h0 = torch.randn(count, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)

        def f(a, b, h0):
            return scanrt.linear_recurrence(a, b, offsets=o, initial=h0, reverse=reverse, return_final=True)

        assert torch.autograd.gradcheck(f, (a, b, h0))

        def f_scalar(a, b):
            return scanrt.linear_recurrence(a, b, offsets=o, initial=0.25, reverse=reverse, return_final=True)

        assert torch.autograd.gradcheck(f_scalar, (a, b))


@cuda
def test_torch_varlen_recurrence_compiles_and_cumsum_carries():
    offsets = torch.tensor([0, 100, 100, 4000, 4096], device="cuda")
    a = torch.rand(4096, device="cuda") * 0.9
    b = torch.randn(4096, device="cuda")
    h0 = torch.randn(4, device="cuda")
    eager = scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0, return_final=True)
    compiled = torch.compile(lambda a, b, h0: scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0,
                                                                       return_final=True), fullgraph=True)
    got = compiled(a, b, h0)
    torch.testing.assert_close(got[0], eager[0])
    torch.testing.assert_close(got[1], eager[1])
    x = torch.randint(-100, 100, (4096,), device="cuda", dtype=torch.int64)
    total = torch.zeros(4, dtype=torch.int64, device="cuda")
    init = torch.arange(4, dtype=torch.int64, device="cuda")
    y = scanrt.cumsum(x, offsets=offsets, initial=init, total=total)
    xs, os_ = x.cpu().numpy(), offsets.cpu().numpy()
    want, want_total = loop(xs, os_, lambda s, t: s + xs[t], init.cpu().numpy(), False, 0)
    np.testing.assert_array_equal(y.cpu().numpy(), want)
    np.testing.assert_array_equal(total.cpu().numpy(), want_total)


def test_numpy_float16_recurrence_has_float32_states():
    r = rng(4)
    n = 3000
    offsets = random_offsets(r, n, 300)
    count = len(offsets) - 1
    a = r.uniform(-1, 1, n).astype(np.float16)
    b = r.standard_normal(n).astype(np.float16)
    h0 = r.standard_normal(count).astype(np.float32)
    h, final = scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0, return_final=True)
    assert h.dtype == np.float16 and final.dtype == np.float32
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want, want_final = loop(a32, offsets, lambda s, t: np.float32(a32[t] * s + b32[t]), h0, False, np.float32(0))
    np.testing.assert_allclose(h.astype(np.float32), want, rtol=4e-3, atol=4e-3)
    np.testing.assert_allclose(final, want_final, rtol=1e-4, atol=1e-4)


@cuda
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_torch_half_recurrence_with_float32_states_and_gradients(dtype_name):
    dtype = getattr(torch, dtype_name)
    r = rng(5)
    n = 20000
    offsets = torch.tensor(random_offsets(r, n, 500), device="cuda")
    count = offsets.shape[0] - 1
    a = (torch.rand(n, device="cuda") * 1.8 - 0.9).to(dtype).requires_grad_()
    b = torch.randn(n, device="cuda").to(dtype).requires_grad_()
    h0 = torch.randn(count, device="cuda", requires_grad=True)
    h, final = scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0, return_final=True)
    assert h.dtype == dtype and final.dtype == torch.float32
    # The same recurrence with f32 arrays: h to the half type's precision, final closer.
    a32, b32 = (t.detach().float().requires_grad_() for t in (a, b))
    h0_32 = h0.detach().clone().requires_grad_()
    w_h, w_final = scanrt.linear_recurrence(a32, b32, offsets=offsets, initial=h0_32, return_final=True)
    tol = 1e-2 if dtype == torch.bfloat16 else 2e-3
    torch.testing.assert_close(h.float(), w_h, rtol=tol, atol=tol)
    torch.testing.assert_close(final, w_final, rtol=1e-3, atol=1e-3)
    gh = torch.randn(n, device="cuda")
    ga, gb, g0 = torch.autograd.grad((h.float() * gh).sum() + final.sum(), (a, b, h0))
    wa, wb, w0 = torch.autograd.grad((w_h * gh).sum() + w_final.sum(), (a32, b32, h0_32))
    assert ga.dtype == dtype and g0.dtype == torch.float32
    torch.testing.assert_close(gb.float(), wb, rtol=5 * tol, atol=5 * tol)
    torch.testing.assert_close(g0, w0, rtol=5 * tol, atol=5 * tol)


AFFINE = """
struct Affine { float a, b; };
__device__ Affine combine(Affine l, Affine r) { return Affine{l.a * r.a, r.a * l.b + r.b}; }
__device__ Affine make(int64_t i, float a, float b) { return Affine{a, b}; }
__device__ void write(const Affine& s, float& h) { h = s.b; }
"""


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_user_operator_with_carries_per_segment(reverse):
    op = scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                         load=("make", ["float32", "float32"]), store=("write", ["float32"]))
    r = rng(6)
    n = 50_000
    offsets_np = random_offsets(r, n, 1000)
    count = len(offsets_np) - 1
    a_np, b_np = r.uniform(-1, 1, n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    h0_np = r.standard_normal(count).astype(np.float32)
    a, b, offsets = torch.tensor(a_np, device="cuda"), torch.tensor(b_np, device="cuda"), torch.tensor(offsets_np,
                                                                                                      device="cuda")
    states_in = torch.stack([torch.ones(count, device="cuda"), torch.tensor(h0_np, device="cuda")], -1)
    states_out = torch.full((count, 2), 7.0, device="cuda")
    h = op(a, b, offsets=offsets, reverse=reverse, carry_in=states_in, carry_out=states_out)
    want, want_final = loop(a_np, offsets_np, lambda s, t: np.float32(a_np[t] * s + b_np[t]), h0_np, reverse,
                            np.float32(0))
    np.testing.assert_allclose(h.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(states_out[:, 1].cpu().numpy(), want_final, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):  # the carries must not overlap
        op(a, b, offsets=offsets, carry_in=states_in, carry_out=states_in)


def along_loop(a, b, axis, reverse, initial=0.0):
    """The recurrence along `axis` of N-D arrays, one sequence at a time."""
    a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
    h = np.empty_like(a)
    for row in np.ndindex(a.shape[:-1]):
        s = initial
        for t in (range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])):
            s = a[row + (t,)] * s + b[row + (t,)]
            h[row + (t,)] = s
    return np.moveaxis(h, -1, axis)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape, axis", [((300, 7), 0), ((4, 50, 33), 1), ((3, 5, 64), 0)])
def test_numpy_recurrence_along_inner_axes(reverse, shape, axis):
    r = rng(7)
    a, b = r.uniform(-1, 1, shape), r.standard_normal(shape)
    h = scanrt.linear_recurrence(a, b, axis=axis, reverse=reverse, initial=0.5)
    np.testing.assert_allclose(h, along_loop(a, b, axis, reverse, 0.5), rtol=1e-9, atol=1e-12)
    # A transposed view (columns of a column-major matrix) too.
    at, bt = a.T, b.T
    h = scanrt.linear_recurrence(at, bt, axis=-1 - axis, reverse=reverse)
    np.testing.assert_allclose(h, along_loop(at, bt, at.ndim - 1 - axis, reverse), rtol=1e-9, atol=1e-12)


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_user_operator_along_an_axis_with_carries(reverse):
    op = scanrt.Operator("affine", AFFINE, "Affine", 8, 4, "combine", np.array([1, 0], np.float32),
                         load=("make", ["float32", "float32"]), store=("write", ["float32"]))
    r = rng(8)
    T, B = 5000, 48
    a_np, b_np = r.uniform(-1, 1, (T, B)).astype(np.float32), r.standard_normal((T, B)).astype(np.float32)
    h0 = r.standard_normal(B).astype(np.float32)
    a, b = torch.tensor(a_np, device="cuda"), torch.tensor(b_np, device="cuda")
    states_in = torch.stack([torch.ones(B, device="cuda"), torch.tensor(h0, device="cuda")], -1)
    states_out = torch.zeros((B, 2), device="cuda")
    h = op(a, b, axis=0, reverse=reverse, carry_in=states_in, carry_out=states_out)
    want = along_loop(a_np.astype(np.float64), b_np.astype(np.float64), 0, reverse)
    # Each column from its own h0: add h0's contribution, the running product of a.
    prods = np.cumprod(a_np[::-1] if reverse else a_np, axis=0, dtype=np.float64)
    want = want + (prods[::-1] if reverse else prods) * h0
    np.testing.assert_allclose(h.cpu().numpy(), want, rtol=1e-3, atol=1e-3)
    last = 0 if reverse else T - 1
    np.testing.assert_allclose(states_out[:, 1].cpu().numpy(), want[last], rtol=1e-3, atol=1e-3)
    # The recipe along dim 0, in place of a transpose copy.
    h2 = scanrt.linear_recurrence(a, b, axis=0, reverse=reverse)
    np.testing.assert_allclose(h2.cpu().numpy(), along_loop(a_np, b_np, 0, reverse), rtol=1e-3, atol=1e-3)


def adjoint_loop(a, g, axis, initial, reverse):
    """lam_t = g_t + a_s lam_s along ``axis`` (s the element before t; ``initial`` before
    the first), in float64."""
    am, gm = np.moveaxis(a, axis, -1), np.moveaxis(g, axis, -1)
    want = np.zeros(am.shape)
    for row in np.ndindex(am.shape[:-1]):
        s, coefficient = initial, 1.0
        steps = range(am.shape[-1] - 1, -1, -1) if reverse else range(am.shape[-1])
        for t in steps:
            s = float(gm[row + (t,)]) + coefficient * s
            coefficient = float(am[row + (t,)])
            want[row + (t,)] = s
    return np.moveaxis(want, -1, axis)


@cuda
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("initial", [None, 0.5, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_recurrence_adjoint_against_its_loop(reverse, initial, dtype):
    """The adjoint on CUDA tensors (the fast path along the last axis, and an inner axis)
    against the loop."""
    r = rng(8)
    for shape, axis in [((4097,), -1), ((3, 1000), -1), ((300, 6), 0)]:
        a, g = r.uniform(-1, 1, shape), r.standard_normal(shape)
        ta, tg = (torch.tensor(x, device="cuda", dtype=getattr(torch, dtype)) for x in (a, g))
        lam = scanrt.linear_recurrence_adjoint(ta, tg, axis, initial=initial, reverse=reverse)
        want = adjoint_loop(ta.double().cpu().numpy(), tg.double().cpu().numpy(), axis, initial or 0.0, reverse)
        tol = 1e-4 if dtype == "float32" else 1e-10
        np.testing.assert_allclose(lam.double().cpu().numpy(), want, rtol=tol, atol=tol, err_msg=f"{shape} {axis}")


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape, axis", [((1,), -1), ((5000,), -1), ((4, 999), -1), ((300, 6), 0)])
def test_numpy_recurrence_adjoint_is_the_gradient(reverse, shape, axis):
    """linear_recurrence_adjoint against its loop, and as the recurrence's gradient: the
    directional derivative of <w, h> along random (da, db) by central differences."""
    r = rng(7)
    a, g = r.uniform(-1, 1, shape), r.standard_normal(shape)
    lam = scanrt.linear_recurrence_adjoint(a, g, axis, initial=0.5, reverse=reverse)
    np.testing.assert_allclose(lam, adjoint_loop(a, g, axis, 0.5, reverse), rtol=1e-10, atol=1e-12)
    # The gradient of <g, linear_recurrence(a, b, initial=h0)>: b's is the adjoint in the
    # other direction.
    b, h0 = r.standard_normal(shape), 0.3
    lam = scanrt.linear_recurrence_adjoint(a, g, axis, reverse=not reverse)
    db, eps = r.standard_normal(shape), 1e-6

    def value(b):
        return float(np.sum(g * scanrt.linear_recurrence(a, b, axis, initial=h0, reverse=reverse)))

    slope = (value(b + eps * db) - value(b - eps * db)) / (2 * eps)
    assert abs(slope - float(np.sum(lam * db))) <= 1e-6 * (1 + abs(slope))


@cuda
@pytest.mark.parametrize("reverse", [False, True])
def test_torch_recurrence_adjoint_gradcheck_and_double_backward(reverse):
    g = torch.Generator(device="cuda").manual_seed(SEED + 8)
    for shape in [(1,), (2, 17), (40,)]:
        a = (torch.rand(*shape, device="cuda", dtype=torch.float64, generator=g) * 1.6 - 0.8).requires_grad_()
        b = torch.randn(*shape, device="cuda", dtype=torch.float64, generator=g, requires_grad=True)
        assert torch.autograd.gradcheck(
            lambda a, b: scanrt.linear_recurrence_adjoint(a, b, initial=0.5, reverse=reverse), (a, b))
        assert torch.autograd.gradgradcheck(
            lambda a, b: scanrt.linear_recurrence(a, b, initial=0.25, reverse=reverse), (a, b))


def test_numpy_segments_by_keys():
    """cumsum, cumprod and a user operator with segments by keys (runs of equal keys),
    against a loop; keys of several types, every form refused beside another."""
    r = rng(9)
    for n, kt in [(1, np.int32), (1000, np.uint32), (5000, np.int64), (3000, np.uint64)]:
        keys = np.repeat(r.integers(0, 5, n), r.integers(1, 6, n))[:n].astype(kt)
        x = r.integers(-9, 9, n).astype(np.int64)
        for reverse in (False, True):
            got = scanrt.cumsum(x, keys=keys, reverse=reverse)
            want = np.zeros(n, np.int64)
            s = 0
            order = range(n - 1, -1, -1) if reverse else range(n)
            prev = None
            for t in order:
                s = (0 if prev is None or keys[t] != keys[prev] else s) + x[t]
                want[t], prev = s, t
            np.testing.assert_array_equal(got, want)
    x = np.arange(1, 7, dtype=np.int64)
    np.testing.assert_array_equal(scanrt.cumprod(x, keys=np.array([1, 1, 2, 2, 2, 1])), [1, 2, 3, 12, 60, 6])
    with pytest.raises(TypeError, match="one of them"):
        scanrt.cumsum(x, keys=np.zeros(6, np.int32), offsets=np.array([0, 6]))
    with pytest.raises(ValueError, match="one per element"):
        scanrt.cumsum(x, keys=np.zeros(5, np.int32))


@cuda
def test_torch_segments_by_keys():
    r = rng(10)
    n = 300_000
    keys_np = np.repeat(r.integers(0, 3, n), r.integers(1, 40, n))[:n].astype(np.int64)
    x_np = r.standard_normal(n).astype(np.float32)
    keys, x = torch.tensor(keys_np, device="cuda"), torch.tensor(x_np, device="cuda")
    want = scanrt.cumsum(x_np.astype(np.float64), keys=keys_np)
    np.testing.assert_allclose(scanrt.cumsum(x, keys=keys).cpu().numpy(), want, rtol=1e-4, atol=1e-3)
    pair_sum = scanrt.Operator("key_sum", "struct S { float v; };\n__device__ S add(S a, S b) { return S{a.v + b.v}; }",
                               "S", 4, 4, "add", bytes(4))
    got = pair_sum(x.view(torch.uint8), keys=keys).view(torch.float32)
    np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("shape, axis", [((6, 40), 1), ((6, 40), 0), ((3, 5, 7), 1), ((3, 5, 7), -1)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_carries_per_sequence_along_an_axis(shape, axis, exclusive, reverse):
    r = rng(900 + len(shape) * 10 + axis)
    x = r.integers(-20, 20, size=shape).astype(np.int64)
    others = tuple(e for k, e in enumerate(shape) if k != axis % len(shape))
    moved = np.moveaxis(x, axis, -1)
    for per_sequence in (True, False):
        initial = r.integers(-5, 5, size=others if per_sequence else (1,)).astype(np.int64)
        total = np.empty(others, np.int64)
        got = scanrt.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse, initial=initial, total=total)
        want = np.empty(moved.shape, np.int64)
        want_total = np.empty(others, np.int64)
        for i in np.ndindex(others):
            start = int(initial[i] if per_sequence else initial[0])
            acc, lane = start, np.empty(moved.shape[-1], np.int64)
            for t in (range(moved.shape[-1] - 1, -1, -1) if reverse else range(moved.shape[-1])):
                lane[t] = acc if exclusive else acc + moved[i][t]
                acc += moved[i][t]
            want[i] = lane
            want_total[i] = start + int(moved[i].sum())
        np.testing.assert_array_equal(got, np.moveaxis(want, -1, axis))
        np.testing.assert_array_equal(total, want_total)
    # Chunks of the scanned axis chained through one array that is both carries.
    carry = np.zeros(others, np.int64)
    pieces = np.array_split(np.arange(shape[axis]), 3)
    chunks = [scanrt.cumsum(np.take(x, p, axis=axis), axis=axis, reverse=reverse, initial=carry, total=carry)
              for p in (pieces[::-1] if reverse else pieces)]
    whole = np.concatenate(chunks[::-1] if reverse else chunks, axis=axis)
    np.testing.assert_array_equal(whole, scanrt.cumsum(x, axis=axis, reverse=reverse))
    with pytest.raises(TypeError, match="one per sequence"):
        scanrt.cumsum(x, axis=axis, initial=np.zeros(2 + int(np.prod(others)), np.int64))


@cuda
@pytest.mark.parametrize("axis", [0, 1])
def test_torch_carries_per_column_and_row_on_the_device(axis):
    g = torch.Generator(device="cuda").manual_seed(SEED + 31)
    x = torch.randn(3000, 70, device="cuda", dtype=torch.float64, generator=g)
    sequences = x.shape[1 - axis]
    initial = torch.randn(sequences, device="cuda", dtype=torch.float64, generator=g)
    total = torch.empty(sequences, device="cuda", dtype=torch.float64)
    got = scanrt.cumsum(x, axis=axis, initial=initial, total=total)
    want = torch.cumsum(x, axis) + (initial[None, :] if axis == 0 else initial[:, None])
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(total, initial + x.sum(axis))
