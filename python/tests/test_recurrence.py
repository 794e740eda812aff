"""linear_recurrence with every option (exclusive, reverse, initial, deterministic, dtype,
out, segments by flags, offsets and keys, axes) against a sequential loop written here:
NumPy on the host backend, PyTorch on the GPU where present (gradcheck, gradgradcheck and
torch.compile with options). Random data with printed seeds."""

import numpy as np
import pytest

import scanrt
from sweeps import cuda, draw_segments, numpy_make, rng, segment_kwargs, starts_of, torch, torch_fetch, torch_make, walk


def ref_recurrence(a, b, exclusive, reverse, initial, starts):
    """In float64: h = a h + b from ``initial`` (0) at each start; exclusive gives the
    state before each element."""
    n = len(a)
    out = np.empty(n, dtype=np.float64)
    h = 0.0
    for p, restart in walk(n, reverse, starts):
        if restart:
            h = 0.0 if initial is None else float(initial)
        before = h
        h = float(a[p]) * h + float(b[p])
        out[p] = before if exclusive else h
    return out


def check_recurrence_case(salt, make, fetch, dtype):
    r = rng(5000 + salt)
    exclusive, reverse, deterministic = bool(r.integers(0, 2)), bool(r.integers(0, 2)), bool(r.integers(0, 2))
    # Python and NumPy numbers alike (the PyTorch fast path takes ints and floats).
    initial = [None, None, float(r.integers(-8, 8)) / 4, int(r.integers(-2, 3)), np.float32(0.75)][int(r.integers(0, 5))]
    what = f"{dtype} exclusive={exclusive} reverse={reverse} initial={initial} deterministic={deterministic}"
    wide = "float64" if dtype == "float64" else "float32"
    opts = dict(exclusive=exclusive, reverse=reverse, initial=initial, deterministic=deterministic)
    if r.integers(0, 2):
        n = int(r.choice([1, 2, 31, 1000, 4097]))
        a, b = r.uniform(-0.95, 0.95, n).astype(wide), r.standard_normal(n).astype(wide)
        form, data = draw_segments(r, n)
        got = scanrt.linear_recurrence(make(a, dtype), make(b, dtype), **opts, **segment_kwargs(form, data, make))
        av, bv = fetch(make(a, dtype)).astype(np.float64), fetch(make(b, dtype)).astype(np.float64)
        want = ref_recurrence(av, bv, exclusive, reverse, initial, starts_of(n, form, data))
        what += f" n={n} segments by {form}"
    else:
        shape = [(3, 100), (5, 7, 9), (2000,)][int(r.integers(0, 3))]
        axis = int(r.integers(-len(shape), len(shape)))
        a, b = r.uniform(-0.95, 0.95, shape).astype(wide), r.standard_normal(shape).astype(wide)
        got = scanrt.linear_recurrence(make(a, dtype), make(b, dtype), axis=axis, **opts)
        av, bv = fetch(make(a, dtype)).astype(np.float64), fetch(make(b, dtype)).astype(np.float64)
        n = shape[axis]
        moved_a, moved_b = np.moveaxis(av, axis, -1), np.moveaxis(bv, axis, -1)
        want = np.empty(moved_a.shape)
        for i in np.ndindex(moved_a.shape[:-1]):
            want[i] = ref_recurrence(moved_a[i], moved_b[i], exclusive, reverse, initial, starts_of(n, "", 0))
        want = np.moveaxis(want, -1, axis)
        what += f" shape={shape} axis={axis}"
    h = fetch(got).astype(np.float64)
    rtol = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 1e-4, "float64": 1e-10}[dtype]
    np.testing.assert_allclose(h, want, rtol=rtol, atol=rtol, err_msg=what)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("salt", range(12))
def test_numpy_recurrence_every_option(dtype, salt):
    check_recurrence_case(salt, numpy_make, np.asarray, dtype)


def test_numpy_recurrence_dtype_out_and_exclusive_sequences():
    r = rng(6000)
    a, b = r.uniform(-0.9, 0.9, 300), r.standard_normal(300)
    out = np.empty(300, np.float32)
    assert scanrt.linear_recurrence(a, b, dtype="float32", out=out) is out
    np.testing.assert_allclose(out, ref_recurrence(a, b, False, False, None, starts_of(300, "", 0)), rtol=1e-4,
                               atol=1e-5)
    offsets = np.array([0, 10, 10, 200, 300])
    h0 = r.standard_normal(4)
    h, final = scanrt.linear_recurrence(a, b, offsets=offsets, initial=h0, exclusive=True, return_final=True)
    for i in range(4):
        lo, hi = offsets[i], offsets[i + 1]
        s, want = h0[i], []
        for t in range(lo, hi):
            want.append(s)
            s = a[t] * s + b[t]
        np.testing.assert_allclose(h[lo:hi], want, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(final[i], s, rtol=1e-12, atol=1e-12)
    with pytest.raises(TypeError, match="offsets"):
        scanrt.linear_recurrence(a, b, keys=offsets, return_final=True)
    with pytest.raises(TypeError, match="dtype="):
        scanrt.linear_recurrence(np.arange(3), np.arange(3))


@cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("salt", range(12))
def test_torch_recurrence_every_option(dtype, salt):
    check_recurrence_case(salt, torch_make, torch_fetch, dtype)


@cuda
@pytest.mark.parametrize("initial", [None, 0, 2, 0.5, True, np.float64(0.25), np.float32(0.75)])
@pytest.mark.parametrize("exclusive, reverse", [(False, False), (True, True)])
def test_torch_recurrence_initial_numbers(initial, exclusive, reverse):
    """Python and NumPy numbers as ``initial`` on CUDA tensors (the fast path along the
    last axis takes ints and floats, the rest go the general way): one result."""
    r = rng(6000)
    a, b = r.uniform(-0.95, 0.95, 3000).astype("float32"), r.standard_normal(3000).astype("float32")
    got = scanrt.linear_recurrence(torch_make(a, "float32"), torch_make(b, "float32"), initial=initial,
                                   exclusive=exclusive, reverse=reverse)
    want = ref_recurrence(a, b, exclusive, reverse, None if initial is None else float(initial), starts_of(3000, "", 0))
    np.testing.assert_allclose(torch_fetch(got).astype(np.float64), want, rtol=1e-4, atol=1e-4, err_msg=str(initial))


@cuda
@pytest.mark.parametrize("form", ["rows", "flags", "keys", "offsets"])
def test_torch_recurrence_gradcheck_with_options(form):
    r = rng(7000)
    n = 30
    shape = (2, n) if form == "rows" else (n,)
    a = torch.tensor(r.uniform(-0.9, 0.9, shape), device="cuda", requires_grad=True)
    b = torch.tensor(r.standard_normal(shape), device="cuda", requires_grad=True)
    seg = {}
    if form == "flags":
        seg = dict(segments=torch.as_tensor(r.random(n) < 0.2, device="cuda"))
    elif form == "keys":
        seg = dict(keys=torch.as_tensor(np.cumsum(r.random(n) < 0.2), device="cuda"))
    elif form == "offsets":
        seg = dict(offsets=torch.tensor([0, 4, 4, 17, n], device="cuda"))
    for exclusive in ((False,) if form == "offsets" else (False, True)):
        for reverse in (False, True):
            for initial in (None, 0.5):
                opts = dict(exclusive=exclusive, reverse=reverse, initial=initial, **seg)
                f = lambda a, b: scanrt.linear_recurrence(a, b, **opts)  # noqa: E731
                assert torch.autograd.gradcheck(f, (a, b)), (form, opts)
                if form != "offsets":
                    assert torch.autograd.gradgradcheck(f, (a, b)), (form, opts)


@cuda
def test_torch_recurrence_compiles_with_options():
    r = rng(8000)
    a = torch.tensor(r.uniform(-0.9, 0.9, 2000), device="cuda", dtype=torch.float32, requires_grad=True)
    b = torch.tensor(r.standard_normal(2000), device="cuda", dtype=torch.float32, requires_grad=True)
    keys = torch.as_tensor(np.cumsum(r.random(2000) < 0.01), device="cuda")

    def f(a, b):
        return scanrt.linear_recurrence(a, b, exclusive=True, reverse=True, initial=0.5, keys=keys)

    compiled = torch.compile(f, fullgraph=True)
    got, want = compiled(a, b), f(a, b)
    torch.testing.assert_close(got, want)
    g = torch.randn_like(got)
    got_grads = torch.autograd.grad(compiled(a, b), (a, b), g)
    want_grads = torch.autograd.grad(f(a, b), (a, b), g)
    for x, y in zip(got_grads, want_grads):
        torch.testing.assert_close(x, y)
    starts = starts_of(2000, "keys", keys.cpu().numpy())
    ref = ref_recurrence(a.detach().cpu().numpy(), b.detach().cpu().numpy(), True, True, 0.5, starts)
    np.testing.assert_allclose(got.detach().cpu().numpy(), ref, rtol=1e-4, atol=1e-4)
