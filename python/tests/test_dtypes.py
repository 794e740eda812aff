"""What the package takes and refuses by element type and layout: narrow integers summed
in int64 as NumPy and PyTorch do, elements in the other byte order and sparse tensors
refused by name (never read as something else)."""

import numpy as np
import pytest

import scanrt
from sweeps import rng, torch


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "bool"])
@pytest.mark.parametrize("exclusive", [False, True])
def test_numpy_narrow_integers_sum_in_int64(dtype, exclusive):
    x = (rng(1).integers(-40, 40, (3, 200)) % (2 if dtype == "bool" else 256)).astype(dtype)
    wide = x.astype(np.int64)
    for axis in (0, 1):
        got = scanrt.cumsum(x, axis=axis, exclusive=exclusive)
        want = np.cumsum(wide, axis=axis) - (wide if exclusive else 0)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(scanrt.cumprod(x % 3, axis=axis), np.cumprod((x % 3).astype(np.int64), axis))
    np.testing.assert_array_equal(scanrt.cumsum(x[0], dtype="int32"), np.cumsum(wide[0]).astype(np.int32))
    if dtype != "bool":  # into their own type (summed in 32 bits), sums wrap as NumPy's do
        got = scanrt.cumsum(x, dtype=dtype, exclusive=exclusive)
        want = np.cumsum(x, axis=-1, dtype=dtype) - (x if exclusive else 0)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want.astype(dtype))
    flags = rng(2).random(200) < 0.1
    got = scanrt.cumsum(x[0], segments=flags)
    starts = np.flatnonzero(flags | (np.arange(200) == 0))
    want = np.concatenate([np.cumsum(part) for part in np.split(wide[0], starts[1:])])
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_torch_narrow_integers_sum_in_int64(dtype):
    x = torch.as_tensor(rng(3).integers(0, 100, 500)).to(getattr(torch, dtype))
    got = scanrt.cumsum(x)
    assert got.dtype == torch.int64 and torch.equal(got, torch.cumsum(x, 0))
    own = scanrt.cumsum(x, dtype=dtype)
    assert own.dtype == x.dtype and torch.equal(own, torch.cumsum(x, 0, dtype=x.dtype))


def test_the_other_byte_order_is_refused():
    for x in (np.arange(5, dtype=">f4"), np.arange(5, dtype=">i8")):
        with pytest.raises(TypeError, match="byte order"):
            scanrt.cumsum(x)
        with pytest.raises(TypeError, match="byte order"):
            scanrt.sort(x)
    np.testing.assert_array_equal(scanrt.cumsum(np.arange(5, dtype="<f4")), np.cumsum(np.arange(5, dtype="<f4")))


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
def test_sparse_tensors_are_refused_by_name():
    x = torch.randn(10).to_sparse()
    for f in (scanrt.cumsum, scanrt.cummax, scanrt.logcumsumexp, scanrt.sort):
        with pytest.raises(TypeError, match="dense tensors, not sparse_coo"):
            f(x)


def test_numpy_scalars_are_values_not_arrays():
    # NumPy's scalars have a shape and a dtype too; as initial values they are numbers.
    x = rng(4).standard_normal(50)
    np.testing.assert_allclose(scanrt.cumsum(x, initial=np.float64(1.5)), np.cumsum(x) + 1.5)
    np.testing.assert_array_equal(scanrt.cumsum(np.arange(5), initial=np.int64(2)), np.cumsum(np.arange(5)) + 2)
    np.testing.assert_array_equal(scanrt.cummax(x, initial=np.float64(0.5))[0], np.maximum.accumulate(
        np.maximum(x, 0.5)))
    np.testing.assert_allclose(scanrt.logcumsumexp(x, initial=np.float32(0.0)),
                               np.logaddexp.accumulate(np.concatenate([[0.0], x]))[1:])
    h = scanrt.linear_recurrence(np.full(4, 0.5), np.ones(4), initial=np.float32(2))
    np.testing.assert_allclose(h, [2.0, 2.0, 2.0, 2.0])


@pytest.mark.parametrize("f, ref", [(scanrt.cumsum, np.cumsum), (scanrt.cumprod, np.cumprod)])
def test_axis_none_scans_the_flattened_array(f, ref):
    x = rng(5).integers(1, 4, (3, 4, 5))
    np.testing.assert_array_equal(f(x, axis=None), ref(x, axis=None))
    np.testing.assert_array_equal(f(x.transpose(2, 0, 1), axis=None), ref(x.transpose(2, 0, 1), axis=None))
    if torch is not None:
        t = torch.as_tensor(x)
        assert torch.equal(f(t, axis=None), torch.as_tensor(ref(x, axis=None)))


@pytest.mark.parametrize("source, target", [("int32", "float64"), ("int64", "float32"), ("float64", "float32"),
                                            ("int64", "int32"), ("uint8", "float16"), ("float32", "float64"),
                                            ("int16", None), ("uint16", "uint32")])
def test_numpy_dtype_is_the_type_the_elements_are_summed_in(source, target):
    # As NumPy's: the elements are converted to it first where the scan does not read
    # them into it.
    x = rng(6).integers(0, 50, 300).astype(source)
    got = scanrt.cumsum(x, dtype=target)
    # scanrt sums float16 results in float32 and rounds each once (NumPy rounds each step).
    want = np.cumsum(x.astype(np.float64)).astype(target or "int64")
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-3 if "16" in str(target) else 1e-6)
    small = x[:12] % 2 + 1  # products that fit every target
    np.testing.assert_allclose(scanrt.cumprod(small, dtype=target), np.cumprod(small, dtype=target or "int64"),
                               rtol=1e-3)
    # Into 8 bits, sums wrap as NumPy's do.
    np.testing.assert_array_equal(scanrt.cumsum(x, dtype="int8"), np.cumsum(x, dtype="int8"))


def test_numpy_out_is_written_where_it_lies():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    out = np.empty((3, 4), np.int64)
    assert scanrt.cumsum(x, axis=0, out=out) is out
    np.testing.assert_array_equal(out, np.cumsum(x, 0))
    y = x.copy()
    assert scanrt.cumprod(y, out=y) is y  # in place
    np.testing.assert_array_equal(y, np.cumprod(x, 1))
    big = np.zeros((3, 8), np.int64)
    scanrt.cumsum(x, out=big[:, ::2])  # a strided view, written where it lies
    np.testing.assert_array_equal(big[:, ::2], np.cumsum(x, 1))
    assert not big[:, 1::2].any()
    wide = np.empty((3, 4), np.float64)
    assert scanrt.cumsum(x, out=wide) is wide  # another type: a copy into it
    np.testing.assert_array_equal(wide, np.cumsum(x, 1))
    z = np.arange(12, dtype=np.int64)
    with pytest.raises(ValueError, match="overlaps"):
        scanrt.cumsum(z[1:], out=z[:-1])
    np.testing.assert_array_equal(z, np.arange(12))  # nothing written
