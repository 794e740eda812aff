"""cummax, cummin and logcumsumexp with every option (exclusive, reverse, initial,
deterministic, dtype, out, segments by flags, offsets and keys, axes) against sequential
loops written here: NumPy on the host backend, PyTorch on the GPU where present (with
gradients, gradcheck in f64 and torch.compile). Random data with printed seeds."""

import math

import numpy as np
import pytest

import scanrt
from sweeps import (SEED, cuda, draw_segments, numpy_make, rng, segment_kwargs, starts_of, torch, torch_fetch,
                    torch_make, walk)


# ---------------------------------------------------------------- references


def lowest(dtype, is_max):
    """The value an empty extreme shows: the type's lowest (max) or highest (min)."""
    if dtype == np.bool_:
        return not is_max
    if np.issubdtype(dtype, np.floating):
        return -np.inf if is_max else np.inf
    info = np.iinfo(dtype)
    return info.min if is_max else info.max


def ref_extreme(x, is_max, exclusive, reverse, initial, starts):
    """Running extreme and index of the 1-D x: ties keep the first in traversal order, a
    NaN is never displaced, the initial value comes first (index -1)."""
    n = len(x)
    values, indices = np.empty(n, dtype=x.dtype), np.empty(n, dtype=np.int64)

    def better(v, b):
        if b != b:
            return False
        return v != v or (v > b if is_max else v < b)

    best = None
    for p, restart in walk(n, reverse, starts):
        if restart:
            best = None if initial is None else (x.dtype.type(initial), -1)
        before = best
        if best is None or better(x[p], best[0]):
            best = (x[p], p)
        shown = before if exclusive else best
        values[p], indices[p] = shown if shown is not None else (lowest(x.dtype, is_max), -1)
    return values, indices


def ref_logcumsumexp(x, exclusive, reverse, initial, starts):
    """In float64: log of the running sum of exponentials, the initial value one term more."""
    n = len(x)
    out = np.empty(n, dtype=np.float64)
    acc = -np.inf
    for p, restart in walk(n, reverse, starts):
        if restart:
            acc = -np.inf if initial is None else float(initial)
        before = acc
        acc = np.logaddexp(acc, float(x[p]))
        out[p] = before if exclusive else acc
    return out


def along(x, axis, f):
    """f applied to each 1-D lane along ``axis`` (f returns one array or a tuple)."""
    moved = np.moveaxis(x, axis, -1)
    lanes = [f(moved[i]) for i in np.ndindex(moved.shape[:-1])]
    results = list(zip(*lanes)) if isinstance(lanes[0], tuple) else [lanes]
    outs = [np.moveaxis(np.stack(r).reshape(moved.shape), -1, axis) for r in results]
    return tuple(outs) if len(outs) > 1 else outs[0]


# ---------------------------------------------------------------- random cases

EXTREME_TYPES = ["bool", "uint8", "int8", "uint16", "int16", "int32", "uint32", "int64", "float16", "float32",
                 "float64"]


def draw(r, dtype, shape):
    """Few distinct values (many ties); NaN and infinities now and then for floats."""
    if dtype == "bool":
        return r.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("float"):
        x = (r.integers(-40, 40, size=shape) / 4).astype(dtype)
        special = r.random(shape)
        x[special < 0.02] = np.nan
        x[(special >= 0.02) & (special < 0.03)] = np.inf
        x[(special >= 0.03) & (special < 0.04)] = -np.inf
        return x
    info = np.iinfo(dtype)
    x = r.integers(max(info.min, -50), min(info.max, 50), size=shape, endpoint=True).astype(dtype)
    x[r.random(shape) < 0.01] = info.max
    return x


def draw_initial(r, dtype):
    if r.integers(0, 3):
        return None
    if dtype == "bool":
        return bool(r.integers(0, 2))
    if dtype.startswith("float"):
        return float(r.integers(-40, 40)) / 4
    return int(r.integers(0, 40))


def check_extreme_case(salt, make, fetch):
    """One random cummax/cummin case on the arrays ``make`` builds (``fetch`` back to NumPy)."""
    r = rng(salt)
    dtype = EXTREME_TYPES[salt % len(EXTREME_TYPES)]
    is_max, exclusive, reverse = bool(r.integers(0, 2)), bool(r.integers(0, 2)), bool(r.integers(0, 2))
    initial = draw_initial(r, dtype)
    f = scanrt.cummax if is_max else scanrt.cummin
    what = f"{dtype} max={is_max} exclusive={exclusive} reverse={reverse} initial={initial}"
    if r.integers(0, 2):
        n = int(r.choice([1, 2, 31, 1000, 4097]))
        x = draw(r, dtype, (n,))
        form, data = draw_segments(r, n)
        got = f(make(x), exclusive=exclusive, reverse=reverse, initial=initial, **segment_kwargs(form, data, make))
        want = ref_extreme(x, is_max, exclusive, reverse, initial, starts_of(n, form, data))
        what += f" n={n} segments by {form}"
    else:
        shape = [(3, 100), (5, 7, 9), (2000,)][int(r.integers(0, 3))]
        axis = int(r.integers(-len(shape), len(shape)))
        x = draw(r, dtype, shape)
        got = f(make(x), axis=axis, exclusive=exclusive, reverse=reverse, initial=initial)
        n = shape[axis]
        want = along(x, axis, lambda lane: ref_extreme(lane, is_max, exclusive, reverse, initial, starts_of(n, "", 0)))
        what += f" shape={shape} axis={axis}"
    values, indices = fetch(got[0]), fetch(got[1])
    assert values.dtype == np.dtype(dtype), what
    np.testing.assert_array_equal(values, want[0], err_msg=what)
    np.testing.assert_array_equal(indices, want[1], err_msg=what)


def check_logcumsumexp_case(salt, make, fetch, dtype):
    r = rng(1000 + salt)
    exclusive, reverse = bool(r.integers(0, 2)), bool(r.integers(0, 2))
    initial = None if r.integers(0, 2) else float(r.integers(-40, 40)) / 8
    what = f"{dtype} exclusive={exclusive} reverse={reverse} initial={initial}"
    wide = "float64" if dtype == "float64" else "float32"
    if r.integers(0, 2):
        n = int(r.choice([1, 2, 31, 1000, 4097]))
        x = (r.standard_normal(n) * 4).astype(wide)
        form, data = draw_segments(r, n)
        got = scanrt.logcumsumexp(make(x, dtype), exclusive=exclusive, reverse=reverse, initial=initial,
                                  **segment_kwargs(form, data, make))
        xs = fetch(make(x, dtype)).astype(np.float64)
        want = ref_logcumsumexp(xs, exclusive, reverse, initial, starts_of(n, form, data))
        what += f" n={n} segments by {form}"
    else:
        shape = [(3, 100), (5, 7, 9), (2000,)][int(r.integers(0, 3))]
        axis = int(r.integers(-len(shape), len(shape)))
        x = (r.standard_normal(shape) * 4).astype(wide)
        got = scanrt.logcumsumexp(make(x, dtype), axis=axis, exclusive=exclusive, reverse=reverse, initial=initial)
        xs = fetch(make(x, dtype)).astype(np.float64)
        n = shape[axis]
        want = along(xs, axis, lambda lane: ref_logcumsumexp(lane, exclusive, reverse, initial, starts_of(n, "", 0)))
        what += f" shape={shape} axis={axis}"
    y = fetch(got).astype(np.float64)
    rtol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-4, "float64": 1e-10}[dtype]
    np.testing.assert_allclose(y, want, rtol=rtol, atol=rtol, err_msg=what)


# ---------------------------------------------------------------- host (NumPy)


@pytest.mark.parametrize("salt", range(66))
def test_numpy_extremes_every_option(salt):
    check_extreme_case(salt, lambda a: a, np.asarray)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("salt", range(12))
def test_numpy_logcumsumexp_every_option(dtype, salt):
    check_logcumsumexp_case(salt, numpy_make, np.asarray, dtype)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_numpy_extremes_of_arrays_past_the_rows_index_limit(monkeypatch, axis):
    # Arrays of 2^32 - 2 elements or more are scanned along their axis (indices counted
    # along it): the same results as rows, here with the limit lowered to reach that path.
    from scanrt import _recipes

    x = draw(rng(2100 + axis), "float32", (40, 70))
    want = [scanrt.cummax(x, axis=axis, exclusive=e, initial=i) for e, i in ((False, None), (True, 1.5))]
    monkeypatch.setattr(_recipes, "ROWS_INDEX_LIMIT", 100)
    for (e, i), (v, idx) in zip(((False, None), (True, 1.5)), want):
        got = scanrt.cummax(x, axis=axis, exclusive=e, initial=i)
        np.testing.assert_array_equal(got[0], v)
        np.testing.assert_array_equal(got[1], idx)


def test_numpy_dtype_and_out():
    r = rng(2000)
    x = r.integers(-100, 100, size=(4, 50)).astype(np.int16)
    values, indices = np.empty((4, 50), np.float32), np.empty((4, 50), np.int64)
    got = scanrt.cummax(x, dtype="float32", out=(values, indices))
    assert got[0] is values and got[1] is indices
    np.testing.assert_array_equal(values, np.maximum.accumulate(x.astype(np.float32), axis=-1))
    y = np.empty((4, 50), np.float64)
    assert scanrt.logcumsumexp(x, dtype="float64", out=y, deterministic=True) is y
    np.testing.assert_allclose(y, np.logaddexp.accumulate(x.astype(np.float64), axis=-1), rtol=1e-10)


def test_numpy_segmented_recipes_of_strided_arrays():
    """Strided and reversed 1-D views are scanned as the elements they show (the
    segmented recipes read their arrays as runs of elements: a copy where needed)."""
    r = rng(2200)
    base = r.standard_normal(64)
    starts = r.random(64) < 0.2
    for view, flags in ((base[::2], starts[::2]), (base[::-1], starts[::-1]), (base[5:45:3], starts[5:45:3])):
        x, segments = view.astype(np.float64), flags.copy()
        segments[0] = True
        values, indices = scanrt.cummax(view, segments=segments)
        want = ref_extreme(x, True, False, False, None, segments)
        np.testing.assert_array_equal(values, want[0])
        np.testing.assert_array_equal(indices, want[1])
        np.testing.assert_allclose(scanrt.logcumsumexp(view, segments=segments),
                                   ref_logcumsumexp(x, False, False, None, segments), rtol=1e-12)
        a = np.full(len(view), 0.5)[::-1]
        h = scanrt.linear_recurrence(a, view, segments=segments)
        want, acc = np.empty(len(view)), 0.0
        for t in range(len(view)):
            acc = view[t] + (0.0 if segments[t] else 0.5 * acc)
            want[t] = acc
        np.testing.assert_allclose(h, want, rtol=1e-12)


def test_numpy_recipe_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(TypeError, match="dtype="):
        scanrt.logcumsumexp(x)
    with pytest.raises(TypeError, match="one of them"):
        scanrt.cummax(x, segments=np.zeros(10, bool), keys=x)
    with pytest.raises(ValueError, match="as long as"):
        scanrt.cummin(x, segments=np.zeros(9, bool))
    with pytest.raises(ValueError, match="1-D"):
        scanrt.cummax(x.reshape(2, 5), keys=x)
    with pytest.raises(TypeError, match="out takes 2"):
        scanrt.cummax(x, out=np.empty(10, np.int32))
    with pytest.raises(ValueError, match="initial 1000 does not fit int8"):
        scanrt.cummax(x.astype(np.int8), initial=1000)
    with pytest.raises(ValueError, match="axis"):
        scanrt.logcumsumexp(x.astype(np.float32), axis=1)


# ---------------------------------------------------------------- PyTorch on the GPU


@cuda
@pytest.mark.parametrize("salt", range(66))
def test_torch_extremes_every_option(salt):
    check_extreme_case(salt, torch_make, torch_fetch)


@cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("salt", range(12))
def test_torch_logcumsumexp_every_option(dtype, salt):
    check_logcumsumexp_case(salt, torch_make, torch_fetch, dtype)


@cuda
def test_torch_extremes_past_the_rows_index_limit(monkeypatch):
    from scanrt import _recipes

    x = torch.tensor(draw(rng(2200), "float32", (40, 70)), device="cuda")
    want = [scanrt.cummax(x, axis=a) for a in (0, 1)]
    monkeypatch.setattr(_recipes, "ROWS_INDEX_LIMIT", 100)
    for a, (v, i) in zip((0, 1), want):
        got = scanrt.cummax(x, axis=a)
        exact = dict(rtol=0, atol=0, equal_nan=True)
        torch.testing.assert_close(got[0], v, **exact)
        assert torch.equal(got[1], i)
        torch.testing.assert_close(v, torch.cummax(x, a).values, **exact)


@cuda
def test_torch_cummax_bfloat16_and_large_rows():
    g = torch.Generator(device="cuda").manual_seed(SEED)
    x = torch.randint(-1000, 1000, (3, 1 << 20), device="cuda", generator=g).to(torch.bfloat16)
    v, i = scanrt.cummax(x)
    wv, wi = torch.cummax(x.float(), -1)
    assert torch.equal(v.float(), wv)
    # torch moves the index to later ties; scanrt keeps the first: compare the values there.
    assert torch.equal(x.float().gather(-1, i), wv)
    assert bool((i <= wi).all())


@cuda
@pytest.mark.parametrize("form", ["rows", "flags", "offsets", "keys"])
def test_torch_gradcheck_with_options(form):
    r = rng(3000)
    n = 40
    x = torch.tensor(r.standard_normal((2, n) if form == "rows" else (n,)), device="cuda", dtype=torch.float64,
                     requires_grad=True)
    seg = {}
    if form != "rows":
        f, data = {"flags": ("flags", r.random(n) < 0.2), "keys": ("keys", np.cumsum(r.random(n) < 0.2)),
                   "offsets": ("offsets", np.array([0, 5, 5, 17, n]))}[form]
        seg = segment_kwargs(f, data, lambda a: torch.as_tensor(a, device="cuda"))
    def finite(f):
        # Exclusive heads without an initial value are -inf (logcumsumexp) or the lowest
        # value (cummax): their gradient is zero, but finite differences are not defined.
        def g(t):
            y = f(t)
            return torch.where(torch.isinf(y), torch.zeros_like(y), y)
        return g

    for exclusive in (False, True):
        for reverse in (False, True):
            for initial in (None, 0.5):
                opts = dict(exclusive=exclusive, reverse=reverse, initial=initial, **seg)
                lse = finite(lambda t: scanrt.logcumsumexp(t, **opts))
                assert torch.autograd.gradcheck(lse, (x,)), (form, opts)
                values = finite(lambda t: scanrt.cummax(t, **opts)[0])
                assert torch.autograd.gradcheck(values, (x,)), (form, opts)


@cuda
def test_torch_compile_with_options():
    r = rng(4000)
    x = torch.tensor(r.standard_normal(3000), device="cuda", dtype=torch.float32)
    keys = torch.as_tensor(np.cumsum(r.random(3000) < 0.01), device="cuda")

    def f(t):
        v, i = scanrt.cummin(t, exclusive=True, initial=0.0, keys=keys)
        return v + scanrt.logcumsumexp(t, reverse=True, keys=keys), i

    compiled = torch.compile(f, fullgraph=True)
    got_v, got_i = compiled(x)
    want_v, want_i = f(x)
    torch.testing.assert_close(got_v, want_v)
    assert torch.equal(got_i, want_i)
    starts = starts_of(3000, "keys", keys.cpu().numpy())
    ref_v, ref_i = ref_extreme(x.cpu().numpy(), False, True, False, 0.0, starts)
    np.testing.assert_array_equal(got_i.cpu().numpy(), ref_i)
    lse = ref_logcumsumexp(x.cpu().numpy().astype(np.float64), False, True, None, starts)
    np.testing.assert_allclose(got_v.cpu().numpy(), ref_v + lse, rtol=1e-4, atol=1e-4)
    assert not math.isnan(float(got_v.sum()))
