"""select and partition with every form of selection (mask, bits, comparisons, nonzero,
not-NaN, user predicates), output (values, indices, a size) and partition form, against
NumPy references: NumPy on the host backend, PyTorch on the GPU where present, and
gradients on CPU tensors wherever PyTorch is installed. Random data with printed seeds."""

import numpy as np
import pytest

import scanrt
from sweeps import cuda, rng, torch

with_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")

TYPES = ["uint8", "int16", "int32", "uint32", "int64", "float16", "float32", "float64"]
COMPARISONS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
               ">=": np.greater_equal}
ODD = scanrt.Predicate("odd", "template <typename T> __device__ bool odd(T x) { return ((long long)x) & 1; }",
                       host=lambda v: int(v) % 2 == 1)



def draw(r, dtype, n):
    x = r.integers(0, 10, n).astype(dtype)
    if dtype.startswith("float"):
        x[r.random(n) < 0.1] = np.nan
        x[r.random(n) < 0.05] = -0.0
    return x


def forms(r, x):
    """Every selection form over x: (name, keyword arguments, the NumPy mask)."""
    n = len(x)
    mask = r.random(n) < 0.5
    words = np.zeros((n + 31) // 32, np.uint32)
    for i in np.flatnonzero(mask):
        words[i // 32] |= np.uint32(1 << (i % 32))
    out = [("mask", dict(mask=mask), mask), ("bits", dict(bits=words), mask),
           ("nonzero", dict(where="nonzero"), x != 0), ("predicate", dict(predicate=ODD), None)]
    if x.dtype.kind == "f":
        out.append(("not_nan", dict(where="not_nan"), ~np.isnan(x)))
        out[-2] = ("predicate", None, None)  # predicates here are integer ones
    for op, f in COMPARISONS.items():
        out.append((op, dict(where=(op, x.dtype.type(4))), f(x, x.dtype.type(4))))
    return [(name, kw, m if m is not None or kw is None else np.array([int(v) % 2 == 1 for v in x], bool))
            for name, kw, m in out if kw is not None]


def check_everything(salt, make, fetch):
    r = rng(salt)
    dtype = TYPES[salt % len(TYPES)]
    for n in (0, 1, 31, 33, 1000, 5000):
        x = draw(r, dtype, n)
        for name, kw, keep in forms(r, x):
            what = f"{dtype} n={n} {name}"
            args = {k: (make(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
            xs = make(x)
            np.testing.assert_array_equal(fetch(scanrt.select(xs, **args)), x[keep], err_msg=what)
            np.testing.assert_array_equal(fetch(scanrt.select(xs, indices=True, **args)), np.flatnonzero(keep),
                                          err_msg=what)
            size = max(n // 3, 1)
            out, count = scanrt.select(xs, size=size, **args)
            k = int(fetch(count)[0])
            assert k == keep.sum(), what
            np.testing.assert_array_equal(fetch(out)[:min(k, size)], x[keep][:size], err_msg=what)
            out, count = scanrt.partition(xs, **args)
            k = int(fetch(count)[0])
            want = np.concatenate([x[keep], x[~keep][::-1]])
            assert k == keep.sum(), what
            np.testing.assert_array_equal(fetch(out), want, err_msg=what)
            selected, rejected, count = scanrt.partition(xs, split=True, **args)
            np.testing.assert_array_equal(fetch(selected)[:k], x[keep], err_msg=what)
            np.testing.assert_array_equal(fetch(rejected)[:n - k], x[~keep], err_msg=what)


@pytest.mark.parametrize("salt", range(len(TYPES)))
def test_numpy_selections_and_partitions(salt):
    check_everything(salt, lambda a: a, np.asarray)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (7, 5), (2, 3, 33), (4, 1, 250)])
def test_numpy_selections_of_arrays_of_any_shape(shape):
    """Arrays of several dimensions are read as their elements in C order (as NumPy's
    x[mask]); transposed ones too (a copy)."""
    r = rng(sum(shape) * 31 + len(shape))
    for x in (draw(r, "float32", shape), draw(r, "int64", shape[::-1]).T):
        keep = r.random(x.shape) < 0.5
        flat, flat_keep = x.ravel(), keep.ravel()
        what = f"{x.dtype} {x.shape}"
        np.testing.assert_array_equal(scanrt.select(x, keep), x[keep], err_msg=what)
        np.testing.assert_array_equal(scanrt.select(x, where="nonzero", indices=True), np.flatnonzero(flat != 0),
                                      err_msg=what)
        np.testing.assert_array_equal(scanrt.compress(x, keep), x[keep], err_msg=what)
        out, count = scanrt.partition(x, keep)
        assert int(count[0]) == flat_keep.sum(), what
        np.testing.assert_array_equal(out, np.concatenate([flat[flat_keep], flat[~flat_keep][::-1]]), err_msg=what)
        heads = np.r_[True, flat[1:] != flat[:-1]] if flat.size else np.zeros(0, bool)
        values, counts = scanrt.unique_consecutive(x, return_counts=True)
        np.testing.assert_array_equal(values, flat[heads], err_msg=what)
        np.testing.assert_array_equal(counts, np.diff(np.r_[np.flatnonzero(heads), flat.size]), err_msg=what)
        # With a size, without waiting: the first `count` written.
        runs = int(heads.sum())
        for size in (0, runs // 2, runs, flat.size + 3):
            got, lengths, count = scanrt.unique_consecutive(x, return_counts=True, size=size)
            assert got.shape == lengths.shape == (size,) and int(count[0]) == runs, (what, size, count)
            k = min(runs, size)
            np.testing.assert_array_equal(got[:k], flat[heads][:k], err_msg=what)
            np.testing.assert_array_equal(lengths[:k], counts[:k], err_msg=what)
            only, count = scanrt.unique_consecutive(x, size=size)
            np.testing.assert_array_equal(only[:k], flat[heads][:k], err_msg=what)
    with pytest.raises(ValueError, match="the mask has the data's shape"):
        scanrt.select(np.zeros(shape), np.zeros(shape[::-1] + (1,), bool))


def test_numpy_selection_errors():
    x = np.arange(10, dtype=np.int32)
    with pytest.raises(TypeError, match="one of"):
        scanrt.select(x, x > 3, where="nonzero")
    with pytest.raises(TypeError, match="one of"):
        scanrt.partition(x)
    with pytest.raises(ValueError, match="where is"):
        scanrt.select(x, where=("~", 3))
    with pytest.raises(ValueError, match="bits"):
        scanrt.select(np.arange(40), bits=np.zeros(1, np.uint32))
    with pytest.raises(ValueError, match="operand 300 does not fit uint8"):
        scanrt.select(x.astype(np.uint8), where=("<", 300))
    with pytest.raises(TypeError, match="Predicate"):
        scanrt.select(x, predicate=lambda v: v > 3)

    def boom(v):
        raise KeyError("raised by the predicate")

    with pytest.raises(KeyError, match="raised by the predicate"):
        scanrt.select(x, predicate=scanrt.Predicate("odd", ODD.source, host=boom))


@with_torch
def test_selections_and_partitions_pass_gradients_back():
    r = rng(100)
    x = torch.tensor(draw(r, "float64", 200), requires_grad=True)
    w = torch.tensor(r.standard_normal(200))
    finite = ~torch.isnan(x.detach())
    for kw, keep in ((dict(where=("<", 4.0)), x.detach() < 4), (dict(where="not_nan"), finite),
                     (dict(mask=(w > 0).numpy()), w > 0)):
        kw = {k: (torch.as_tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
        got = scanrt.select(x, **kw)
        assert torch.equal(got.detach().nan_to_num(7), x.detach()[keep].nan_to_num(7))
        (g,) = torch.autograd.grad(got.sum(), x)
        assert torch.equal(g, keep.to(torch.float64))
        out, count = scanrt.partition(x, **kw)
        want = torch.cat([x.detach()[keep], x.detach()[~keep].flip(0)])
        assert torch.equal(out.detach().nan_to_num(7), want.nan_to_num(7)) and int(count[0]) == int(keep.sum())
        (g,) = torch.autograd.grad((out * w).sum(), x)
        assert torch.equal(g, torch.cat([w[: int(keep.sum())], w[int(keep.sum()):]])[
            torch.argsort(torch.cat([torch.nonzero(keep)[:, 0], torch.nonzero(~keep)[:, 0].flip(0)]))])
        selected, rejected, count = scanrt.partition(x, split=True, **kw)
        k = int(count[0])
        assert torch.equal(selected.detach()[:k].nan_to_num(7), x.detach()[keep].nan_to_num(7))
        assert torch.equal(rejected.detach()[:200 - k].nan_to_num(7), x.detach()[~keep].nan_to_num(7))
        (g,) = torch.autograd.grad(selected.sum() + 2 * rejected.sum(), x)
        assert torch.equal(g, torch.where(keep, 1.0, 2.0).to(torch.float64))
    with pytest.raises(TypeError, match="not differentiable"):
        scanrt.partition(x, predicate=ODD)


@cuda
@pytest.mark.parametrize("salt", range(len(TYPES)))
def test_torch_selections_and_partitions_on_the_gpu(salt):
    dtypes = {"uint32": torch.uint32}

    def make(a):
        t = torch.as_tensor(a.view(np.int32) if a.dtype == np.uint32 else a, device="cuda")
        return t.view(dtypes["uint32"]) if a.dtype == np.uint32 else t

    def fetch(t):
        t = t.cpu()
        return t.view(torch.int32).numpy().view(np.uint32) if t.dtype == torch.uint32 else t.numpy()

    check_everything(salt, make, fetch)


@pytest.mark.parametrize("dtype, begin, end", [("uint32", 0, 8), ("uint32", 4, 20), ("int32", 24, 32),
                                               ("uint64", 30, 40)])
@pytest.mark.parametrize("descending", [False, True])
def test_numpy_sorts_by_a_bit_range(dtype, begin, end, descending):
    r = rng(200 + begin)
    keys = r.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, 3000, dtype=dtype, endpoint=True)
    values = np.arange(3000, dtype=np.int64)
    # The ordered form: signed integers with the sign bit flipped.
    ordered = keys.view(np.uint32 if dtype == "int32" else dtype).astype(np.uint64)
    if dtype == "int32":
        ordered ^= np.uint64(1 << 31)
    field = (ordered >> np.uint64(begin)) & np.uint64((1 << (end - begin)) - 1)
    order = np.argsort(-field.astype(np.int64) if descending else field, kind="stable")
    got_keys, got_values = scanrt.sort(keys, values=values, descending=descending, bits=(begin, end))
    np.testing.assert_array_equal(got_values, order)
    np.testing.assert_array_equal(got_keys, keys[order])
    got_keys, indices = scanrt.sort(keys, descending=descending, bits=(begin, end), return_indices=True)
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(got_keys, keys[order])
    np.testing.assert_array_equal(scanrt.argsort(keys, descending=descending, bits=(begin, end)), order)
    with pytest.raises(ValueError, match="return_indices"):
        scanrt.sort(keys, values=values, return_indices=True)
    with pytest.raises(ValueError):
        scanrt.sort(keys, bits=(0, 8 * keys.itemsize + 1))


@cuda
@pytest.mark.parametrize("descending", [False, True])
def test_torch_sorts_by_a_bit_range_on_the_gpu(descending):
    r = rng(300)
    keys = r.integers(-(1 << 62), 1 << 62, 100_000, dtype=np.int64)
    field = ((keys.view(np.uint64) ^ np.uint64(1 << 63)) >> np.uint64(40)) & np.uint64(0xFFF)
    order = np.argsort(-field.astype(np.int64) if descending else field, kind="stable")
    got_keys, indices = scanrt.sort(torch.as_tensor(keys, device="cuda"), descending=descending, bits=(40, 52),
                                    return_indices=True)
    np.testing.assert_array_equal(indices.cpu().numpy(), order)
    np.testing.assert_array_equal(got_keys.cpu().numpy(), keys[order])


@cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("descending", [False, True])
def test_torch_half_keys_sort_as_torch_does(dtype, descending):
    """f16 and bf16 keys with NaNs, infinities and signed zeros, against torch's stable
    sort (NaNs last either way round there; scanrt's total order puts them last
    ascending and first descending, so the comparison is on the numbers)."""
    generator = torch.Generator().manual_seed(400)
    keys = (torch.randint(-50, 50, (70_001,), generator=generator) / 4).to(getattr(torch, dtype))
    keys[::31] = float("inf")
    keys[::37] = float("-inf")
    keys[::41] = -0.0
    keys[::43] = float("nan")
    keys = keys.cuda()
    got, indices = scanrt.sort(keys, descending=descending, return_indices=True)
    assert torch.equal(scanrt.argsort(keys, descending=descending), indices)
    numbers = ~keys.isnan()
    want_keys, want_indices = torch.sort(keys[numbers], stable=True, descending=descending)
    # NaNs: last ascending, first descending, in input order.
    nan_at = torch.nonzero(~numbers).flatten()
    number_at = torch.nonzero(numbers).flatten()[want_indices]
    order = torch.cat([number_at, nan_at]) if not descending else torch.cat([nan_at, number_at])
    # -0.0 and +0.0 compare equal for torch: the signs settle within equal keys by the
    # total order (-0 first ascending), so compare the values and check the zeros' signs.
    torch.testing.assert_close(got.float(), keys[order].float(), equal_nan=True)
    assert torch.equal(keys[indices].view(torch.int16), got.view(torch.int16))
    stable = got != 0  # equal keys in input order, away from the zeros
    assert torch.equal(indices[stable], order[stable])
    zeros = got == 0
    signs = torch.signbit(got[zeros])
    assert torch.equal(signs, torch.sort(signs.int(), stable=True, descending=not descending)[0].bool())
    assert torch.equal(scanrt.compress(keys, numbers).view(torch.int16), keys[numbers].view(torch.int16))
