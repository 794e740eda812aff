"""PyTorch's paths on CPU tensors (scanrt's host backend), wherever PyTorch is installed:
gradients of every differentiable function with every option (gradcheck in f64 against
finite differences, results against sequential loops), the functions that refuse
gradients, and torch.compile graphs of scanrt's custom operators. Random data with
printed seeds."""

import numpy as np
import pytest

import scanrt
from sweeps import rng

torch = pytest.importorskip("torch")


def segment_forms(r, n):
    """Each form of segment data over n elements, as keyword arguments."""
    return {
        "flags": dict(segments=torch.as_tensor(r.random(n) < 0.2)),
        "offsets": dict(offsets=torch.tensor([0, 4, 4, 13, n])),
        "keys": dict(keys=torch.as_tensor(np.cumsum(r.random(n) < 0.2))),
    }


def starts_of(n, seg):
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    if "segments" in seg:
        starts |= seg["segments"].numpy()
    elif "keys" in seg:
        k = seg["keys"].numpy()
        starts[1:] |= k[1:] != k[:-1]
    else:
        for o in seg["offsets"].numpy():
            if o < n:
                starts[o] = True
    return starts


def ref_scan(x, f, identity, exclusive, reverse, initial, starts):
    """The sequential loop of a 1-D scan by segments."""
    n = len(x)
    out = np.empty(n)
    acc = identity
    order = range(n - 1, -1, -1) if reverse else range(n)
    for p in order:
        if (starts[p] if not reverse else (p == n - 1 or starts[p + 1])):
            acc = identity if initial is None else initial
        before, acc = acc, f(acc, x[p])
        out[p] = before if exclusive else acc
    return out


OPTIONS = [dict(exclusive=e, reverse=r, initial=i) for e in (False, True) for r in (False, True) for i in (None, 0.5)]


@pytest.mark.parametrize("form", ["flags", "offsets", "keys"])
def test_sums_by_segments_are_differentiable(form):
    r = rng(1)
    n = 30
    x = torch.tensor(r.standard_normal(n), requires_grad=True)
    seg = segment_forms(r, n)[form]
    for opts in OPTIONS:
        y = scanrt.cumsum(x, **seg, **opts)
        want = ref_scan(x.detach().numpy(), lambda a, b: a + b, 0.0, opts["exclusive"], opts["reverse"],
                        opts["initial"], starts_of(n, seg))
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12, err_msg=str(opts))
        assert torch.autograd.gradcheck(lambda t: scanrt.cumsum(t, **seg, **opts), (x,)), (form, opts)


def test_products_are_differentiable_with_every_option():
    r = rng(2)
    x = r.uniform(0.5, 1.5, (3, 12))
    x[0, 4] = 0.0  # zeros too: the gradient is PyTorch's own product scan's
    x[1, 2] = x[1, 7] = 0.0
    xt = torch.tensor(x, requires_grad=True)
    for opts in OPTIONS:
        for axis in (0, 1):
            assert torch.autograd.gradcheck(lambda t: scanrt.cumprod(t, axis=axis, **opts), (xt,)), (axis, opts)
    with pytest.raises(TypeError, match="segments"):
        scanrt.cumprod(xt[0], segments=torch.ones(12, dtype=torch.bool))


@pytest.mark.parametrize("form", ["rows", "flags", "offsets", "keys"])
def test_recipes_are_differentiable_with_every_option(form):
    r = rng(3)
    n = 24
    x = torch.tensor(r.standard_normal((2, n) if form == "rows" else n), requires_grad=True)
    a = torch.tensor(r.uniform(-0.9, 0.9, x.shape), requires_grad=True)
    seg = {} if form == "rows" else segment_forms(r, n)[form]

    def finite(f):
        # Exclusive heads without an initial value are -inf or the lowest value.
        def g(*t):
            y = f(*t)
            return torch.where(torch.isinf(y), torch.zeros_like(y), y)
        return g

    for opts in OPTIONS:
        assert torch.autograd.gradcheck(finite(lambda t: scanrt.logcumsumexp(t, **seg, **opts)), (x,)), opts
        assert torch.autograd.gradcheck(finite(lambda t: scanrt.cummax(t, **seg, **opts)[0]), (x,)), opts
        assert torch.autograd.gradcheck(finite(lambda t: scanrt.cummin(t, **seg, **opts)[0]), (x,)), opts
        if form == "offsets" and opts["exclusive"]:
            continue  # exclusive with states per sequence: a TypeError (below)
        f = lambda a, b: scanrt.linear_recurrence(a, b, **seg, **opts)  # noqa: E731
        assert torch.autograd.gradcheck(f, (a, x)), opts
        if form != "offsets":
            assert torch.autograd.gradgradcheck(f, (a, x)), opts
    if form == "offsets":
        with pytest.raises(TypeError, match="exclusive"):
            scanrt.linear_recurrence(a, x, exclusive=True, **seg)


def test_sorts_and_selections_pass_gradients_back():
    r = rng(4)
    keys = torch.tensor(r.integers(0, 20, 50).astype(np.float64), requires_grad=True)
    values = torch.tensor(r.standard_normal(50), requires_grad=True)
    w = torch.tensor(r.standard_normal(50))
    got_keys, got_values = scanrt.sort(keys, values=values, descending=True)
    want_keys, order = torch.sort(keys.detach(), descending=True, stable=True)
    assert torch.equal(got_keys.detach(), want_keys)
    assert torch.equal(got_values.detach(), values.detach()[order])
    gk, gv = torch.autograd.grad((got_keys * w).sum() + (got_values * w).sum(), (keys, values))
    want_grad = torch.zeros(50, dtype=torch.float64).index_add_(0, order, w)
    assert torch.equal(gk, want_grad) and torch.equal(gv, want_grad)
    sorted_keys, indices = scanrt.sort(keys, return_indices=True)
    assert torch.equal(scanrt.argsort(keys), indices)
    assert torch.equal(indices, torch.sort(keys.detach(), stable=True).indices)
    (g,) = torch.autograd.grad(sorted_keys.sum(), keys)
    assert torch.equal(g, torch.ones(50, dtype=torch.float64))
    mask = torch.as_tensor(r.random(50) < 0.5)
    kept = scanrt.compress(values, mask)
    assert torch.equal(kept.detach(), values.detach()[mask])
    (g,) = torch.autograd.grad(kept.sum(), values)
    assert torch.equal(g, mask.to(torch.float64))
    out, count = scanrt.compress(values, mask, size=40)
    k = int(mask.sum())
    assert int(count[0]) == k and torch.equal(out.detach()[:k], values.detach()[mask])
    assert torch.equal(out.detach()[k:], torch.zeros(40 - k, dtype=torch.float64))
    (g,) = torch.autograd.grad(out.sum(), values)
    assert torch.equal(g, mask.to(torch.float64))


def test_axes_out_of_range_are_refused_with_gradients_too():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    for f in (scanrt.cumsum, scanrt.cumprod, scanrt.cummax, scanrt.logcumsumexp):
        for axis in (-3, 2):
            with pytest.raises(ValueError, match="out of range"):
                f(x, axis=axis)
    with pytest.raises(ValueError, match="out of range"):
        scanrt.linear_recurrence(x, x, axis=2)
    with pytest.raises(ValueError, match="at least one dimension"):
        scanrt.cumsum(torch.tensor(1.0, dtype=torch.float64, requires_grad=True))


def test_what_is_not_differentiable_says_so():
    x = torch.randn(10, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match="not differentiable"):
        scanrt.unique_consecutive(x)
    with pytest.raises(TypeError, match="not differentiable"):
        scanrt.scan_out_of_core(x)
    with pytest.raises(TypeError, match="not differentiable"):
        scanrt.cumsum(x, initial=torch.zeros(1, dtype=torch.float64), total=torch.zeros(1, dtype=torch.float64))


@pytest.mark.parametrize("axis", [0, 1])
def test_carries_per_sequence_on_cpu_tensors(axis):
    x = torch.tensor(rng(6).standard_normal((50, 7)))
    sequences = x.shape[1 - axis]
    initial = torch.tensor(rng(7).standard_normal(sequences))
    total = torch.empty(sequences, dtype=torch.float64)
    got = scanrt.cumsum(x, axis=axis, initial=initial, total=total)
    want = torch.cumsum(x, axis) + (initial[None, :] if axis == 0 else initial[:, None])
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(total, initial + x.sum(axis))


def test_torch_func_grad_matches_autograd():
    # The eager operators are autograd.Functions with setup_context: torch.func transforms
    # take them.
    r = rng(8)
    x = torch.tensor(r.standard_normal(40))
    a = torch.tensor(r.uniform(-0.9, 0.9, 40))
    keys = torch.as_tensor(np.cumsum(r.random(40) < 0.2))
    for f in (lambda t: scanrt.cumsum(t, keys=keys, reverse=True), lambda t: scanrt.logcumsumexp(t, initial=0.5),
              lambda t: scanrt.cummax(t, exclusive=True, initial=0.0)[0], lambda t: scanrt.linear_recurrence(a, t),
              lambda t: scanrt.linear_recurrence(t, x, exclusive=True)):
        w = torch.tensor(r.standard_normal(40))
        got = torch.func.grad(lambda t: (f(t) * w).sum())(x)
        xx = x.clone().requires_grad_()
        (want,) = torch.autograd.grad((f(xx) * w).sum(), xx)
        torch.testing.assert_close(got, want)


def test_vmap_runs_each_batch_element_as_a_row():
    r = rng(10)
    x = torch.tensor(r.standard_normal((5, 30)))
    a = torch.tensor(r.uniform(-0.9, 0.9, (5, 30)))
    got = torch.func.vmap(lambda t: scanrt.cumsum(t, exclusive=True, reverse=True))(x)
    torch.testing.assert_close(got, scanrt.cumsum(x, exclusive=True, reverse=True))
    got = torch.func.vmap(lambda t: scanrt.cummax(t), in_dims=1, out_dims=1)(x.T)
    torch.testing.assert_close(got[0], x.T.cummax(0).values)
    assert torch.equal(got[1], scanrt.cummax(x.T, axis=0)[1])
    got = torch.func.vmap(lambda p, q: scanrt.linear_recurrence(p, q, initial=0.5))(a, x)
    torch.testing.assert_close(got, scanrt.linear_recurrence(a, x, initial=0.5))
    got = torch.func.vmap(lambda p: scanrt.linear_recurrence(p, x[0]))(a)  # b shared by every element
    torch.testing.assert_close(got, scanrt.linear_recurrence(a, x[0].expand(5, 30).contiguous()))
    # Per-sample gradients.
    per_sample = torch.func.vmap(torch.func.grad(lambda p, q: scanrt.linear_recurrence(p, q).pow(2).sum()))(a, x)
    for i in range(5):
        want = torch.func.grad(lambda p: scanrt.linear_recurrence(p, x[i]).pow(2).sum())(a[i])
        torch.testing.assert_close(per_sample[i], want)
    with pytest.raises(NotImplementedError, match="segments"):
        torch.func.vmap(lambda t: scanrt.cumsum(t, keys=torch.arange(30) // 5))(x)


def test_user_operators_on_cpu_tensors():
    import struct

    def combine(first, then):
        fa, fb = struct.unpack("dd", first)
        ta, tb = struct.unpack("dd", then)
        return struct.pack("dd", fa * ta, ta * fb + tb)

    affine = scanrt.Operator(
        "affine_cpu", "struct A { double a, b; };\n__device__ A c(A l, A r) { return A{l.a * r.a, r.a * l.b + r.b}; }\n"
        "__device__ A m(int64_t, double a, double b) { return A{a, b}; }\n"
        "__device__ void w(const A& s, double& h) { h = s.b; }", "A", 16, 8, "c", identity=np.array([1.0, 0.0]),
        load=("m", ["float64", "float64"]), store=("w", ["float64"]), host_combine=combine,
        host_load=lambda i, a, b: struct.pack("dd", a, b), host_store=lambda s: struct.unpack("dd", s)[1])
    r = rng(11)
    a, b = torch.tensor(r.uniform(-0.9, 0.9, 300)), torch.tensor(r.standard_normal(300))
    want = scanrt.linear_recurrence(a, b, reverse=True)
    torch.testing.assert_close(affine(a, b, reverse=True), want)  # eager: scanned directly
    compiled = torch.compile(lambda p, q: affine(p, q, reverse=True), fullgraph=True)
    torch.testing.assert_close(compiled(a, b), want)  # the custom operator
    h = affine(a.clone().requires_grad_(), b)
    with pytest.raises(RuntimeError, match="autograd"):
        h.sum().backward()


def test_custom_operators_compile_on_cpu():
    r = rng(5)
    x = torch.tensor(r.standard_normal(500), requires_grad=True)
    keys = torch.as_tensor(np.cumsum(r.random(500) < 0.05))

    def f(t):
        s = scanrt.cumsum(t, keys=keys, exclusive=True)
        v, _ = scanrt.cummax(t, reverse=True, initial=0.0)
        return s + v + scanrt.logcumsumexp(t, keys=keys) + scanrt.cumprod(t.reshape(20, 25), axis=0).reshape(-1)

    compiled = torch.compile(f, fullgraph=True)
    got, want = compiled(x), f(x)
    torch.testing.assert_close(got, want)
    w = torch.tensor(r.standard_normal(500))
    (g_got,) = torch.autograd.grad((compiled(x) * w).sum(), x)
    (g_want,) = torch.autograd.grad((f(x) * w).sum(), x)
    torch.testing.assert_close(g_got, g_want)


def test_compiled_integer_sums_keep_an_initial_value_past_2_53_exact():
    # The custom operator takes the initial value as a Scalar, not through a float.
    rows = np.arange(1, 301, dtype=np.int64).reshape(3, 100)
    initial = 2**53 + 1
    compiled = torch.compile(lambda t: scanrt.cumsum(t, initial=initial), fullgraph=True)
    np.testing.assert_array_equal(compiled(torch.as_tensor(rows)).numpy(), np.cumsum(rows, axis=1) + initial)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "bfloat16"])
def test_every_function_on_cpu_tensors_matches_numpy(dtype):
    # CPU tensors take the host backend through PyTorch's side of the package (its
    # descriptions, allocations and types); NumPy arrays through NumPy's. bfloat16 has no
    # NumPy type: its results are compared through float32 against float32 inputs.
    r = rng(9)
    base = r.integers(-8, 8, (6, 50)).astype(np.float64) / (1 if dtype.startswith("int") else 4)
    t = torch.tensor(base).to(getattr(torch, dtype))
    n = t.to(torch.float32).numpy().astype(np.float32) if dtype == "bfloat16" else t.numpy()
    back = lambda y: (y.to(torch.float32) if y.dtype == torch.bfloat16 else y).numpy()  # noqa: E731
    same = lambda got, want: np.testing.assert_allclose(  # noqa: E731
        back(got).astype(np.float64), np.asarray(want).astype(np.float64), rtol=2e-2 if "16" in dtype else 1e-6)
    for axis in (0, 1):
        for kw in (dict(), dict(exclusive=True, reverse=True)):
            same(scanrt.cumsum(t, axis=axis, **kw), scanrt.cumsum(n, axis=axis, **kw))
            if dtype != "bfloat16":
                v, i = scanrt.cummax(t, axis=axis, **kw)
                wv, wi = scanrt.cummax(n, axis=axis, **kw)
                same(v, wv)
                assert np.array_equal(i.numpy(), wi)
    if dtype.startswith("float") or dtype == "bfloat16":
        same(scanrt.logcumsumexp(t), scanrt.logcumsumexp(n))
        same(scanrt.linear_recurrence(t / 8, t), scanrt.linear_recurrence(n / 8, n))
    flat, flat_n = t.reshape(-1), n.reshape(-1)
    if dtype not in ("float16", "bfloat16"):  # sorts and selections take no 2-byte floats (a TypeError)
        same(scanrt.sort(flat), scanrt.sort(flat_n))
        same(scanrt.select(flat, where=(">", 0)), scanrt.select(flat_n, where=(">", 0)))
        same(scanrt.partition(flat, flat > 0)[0], scanrt.partition(flat_n, flat_n > 0)[0])
