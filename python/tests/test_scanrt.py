"""scanrt's Python package on NumPy arrays (the host backend) against sequential
references: random data with printed seeds; every function, axis, direction and
exclusive form; user-defined operators with Python host functions; errors. The GPU's
side is test_gpu.py."""

import math

import numpy as np
import pytest

import scanrt
from sweeps import AFFINE, SEED, affine_operator, host_affine_operator, rng, selections_match, seq_scan

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
    # dtype is the type of both passes (the column pass does not widen again).
    for dtype in ("int32", "uint32", "float32"):
        table = scanrt.summed_area_table(x, exclusive=exclusive, reverse=reverse, dtype=dtype)
        assert table.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(table, want.astype(dtype))


def test_numpy_outputs_and_arguments_that_are_refused():
    """Read-only outputs are refused (as NumPy's ufuncs refuse them), with nothing
    written; an operator's scan along an axis takes no segments."""
    x = np.arange(8, dtype=np.int64)
    frozen = np.zeros(8, np.int64)
    frozen.flags.writeable = False
    immutable = np.frombuffer(bytes(64), np.int64)
    for out in (frozen, immutable):
        with pytest.raises(ValueError, match="read-only"):
            scanrt.cumsum(x, out=out)
        assert not out.any()
    with pytest.raises(ValueError, match="read-only"):
        scanrt.scan_out_of_core(x, out=frozen)
    op = affine_operator()
    a, b = np.ones((3, 4), np.float32), np.ones((3, 4), np.float32)
    result = np.zeros(12, np.float32)
    result.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        op(a.ravel(), b.ravel(), out=result)
    for kw in (dict(segments=np.zeros(3, bool)), dict(offsets=np.array([0, 3])), dict(keys=np.zeros(3, np.int32))):
        with pytest.raises(TypeError, match="along an axis"):
            op(a, b, axis=0, **kw)


def test_numpy_out_arrays_take_the_results_shape_and_kind():
    """out= is an array of the result's shape whose type the result casts to by NumPy's
    same-kind rule (int into float, not float into int): anything else is refused with
    nothing written, for scans, recipes, recurrences, sorts and operators alike."""
    x = np.array([0.5, 0.5, 1.0])
    for out, error in ((np.zeros(3, np.int64), TypeError), (np.zeros((2, 3)), ValueError),
                       (np.zeros(4), ValueError)):
        for f in (scanrt.cumsum, scanrt.logcumsumexp):
            with pytest.raises(error):
                f(x, out=out)
            assert not out.any()
    wide = np.zeros(3, np.float64)
    assert scanrt.cumsum(np.array([1, 2, 3], np.int32), out=wide) is wide
    np.testing.assert_array_equal(wide, [1, 3, 6])
    with pytest.raises(TypeError, match="same-kind"):
        scanrt.linear_recurrence(np.ones(3, np.float32), np.ones(3, np.float32), out=np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="one per key"):
        scanrt.sort(np.array([3, 1, 2]), values=np.arange(5))
    op = host_affine_operator()
    a, b = np.ones(5, np.float32), np.ones(5, np.float32)
    for out in (np.zeros(2, np.float32), np.zeros(5, np.float64), (np.zeros(5, np.float32),) * 2):
        with pytest.raises((ValueError, TypeError)):
            op(a, b, out=out)
    short = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="out arrays"):
        op(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32), axis=0, out=short)
    assert not short.any()


@pytest.mark.parametrize("reverse", [False, True])
def test_numpy_segmented_scans_of_strided_arrays(reverse):
    """Segments by flags and by offsets over strided and reversed 1-D views (and strided
    flags) give what the same scans of contiguous copies give."""
    r = rng(37)
    x = r.integers(-9, 9, size=401).astype(np.int64)
    flags = r.integers(0, 2, size=401).astype(np.uint8)
    for view, heads in ((x[::2], flags[::2]), (x[::-1], flags[::-1]), (x[1::3], flags[1::3])):
        got = scanrt.cumsum(view, reverse=reverse, segments=heads)
        want = scanrt.cumsum(view.copy(), reverse=reverse, segments=heads.copy())
        np.testing.assert_array_equal(got, want)
        offsets = np.array([0, 3, 3, len(view) // 2, len(view)], np.int64)
        got = scanrt.cumsum(view, reverse=reverse, offsets=np.repeat(offsets, 2)[::2])  # strided offsets
        np.testing.assert_array_equal(got, scanrt.cumsum(view.copy(), reverse=reverse, offsets=offsets))
        total = np.zeros(len(offsets) - 1, np.int64)
        scanrt.cumsum(view, reverse=reverse, offsets=offsets, total=total)
        np.testing.assert_array_equal(total, [view[lo:hi].sum() for lo, hi in zip(offsets[:-1], offsets[1:])])


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
    got, idx = scanrt.sort(keys, descending=descending, return_indices=True)
    assert idx.dtype == np.int64
    np.testing.assert_array_equal(scanrt.argsort(keys, descending=descending), idx)
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


def test_numpy_selections_and_segments():
    selections_match(np, np.asarray, np.asarray)


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
    # A scalar total (whose temporary array would be written after it is gone) and a
    # read-only one are refused.
    with pytest.raises(TypeError):
        scanrt.cumsum(x, total=np.int64(0))
    frozen = np.zeros(1, dtype=np.int64)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        scanrt.cumsum(x, total=frozen)
    assert frozen[0] == 0


def test_sums_into_bool_are_refused():
    """A sum or product into bool would wrap its bytes past 255: refused, naming max/min."""
    x = np.ones(300, dtype=bool)
    for scan in (scanrt.cumsum, scanrt.cumprod):
        with pytest.raises(TypeError, match="max"):
            scan(x, dtype="bool")
    assert scanrt.cumsum(x)[-1] == 300  # widened to int64, as NumPy does


def test_nvrtc_is_looked_for_in_pips_cuda_wheels(tmp_path):
    from scanrt import _nvrtc

    for lib in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"):
        (tmp_path / lib).mkdir(parents=True)
    (tmp_path / "nvidia/cu13/lib/libnvrtc.so.13").touch()
    (tmp_path / "nvidia/cuda_nvrtc/lib/libnvrtc.so.12").touch()
    found = _nvrtc.wheel_candidates([str(tmp_path / "elsewhere"), str(tmp_path)])
    assert found == [str(tmp_path / "nvidia/cu13/lib/libnvrtc.so.13"), str(tmp_path / "nvidia/cuda_nvrtc/lib/libnvrtc.so.12")]
    # The package tried to load one at import; whatever it found is a real library.
    assert _nvrtc.SEARCHED and all(isinstance(p, str) for p in _nvrtc.LOADED)


def test_xla_handlers_answer_the_metadata_query():
    """The XLA FFI handlers (registered with JAX for jit) answer XLA's metadata query with
    API version 0.1 and no traits, and ignore stages other than execute, without a GPU."""
    import ctypes as c

    from scanrt import _scanrt

    class Base(c.Structure):
        _fields_ = [("struct_size", c.c_size_t), ("type", c.c_int), ("next", c.c_void_p)]

    class Version(c.Structure):
        _fields_ = [("struct_size", c.c_size_t), ("ext", c.c_void_p), ("major", c.c_int), ("minor", c.c_int)]

    class Metadata(c.Structure):
        _fields_ = [("struct_size", c.c_size_t), ("api_version", Version), ("traits", c.c_uint32)]

    class MetadataExtension(c.Structure):
        _fields_ = [("base", Base), ("metadata", c.POINTER(Metadata))]

    class Frame(c.Structure):
        _fields_ = [("struct_size", c.c_size_t), ("ext", c.c_void_p), ("api", c.c_void_p), ("ctx", c.c_void_p),
                    ("stage", c.c_int), ("rest", c.c_char * 136)]

    handlers = _scanrt.xla_handlers()
    names = {"scanrt_scan", "scanrt_recipe", "scanrt_sort", "scanrt_select", "scanrt_operator"}
    assert {p: set(h) for p, h in handlers.items()} == {p: names for p in ("CUDA", "cpu")}
    for address in [a for h in handlers.values() for a in h.values()]:
        handler = c.CFUNCTYPE(c.c_void_p, c.c_void_p)(address)
        metadata = Metadata(36, Version(24, None, 9, 9), 7)
        extension = MetadataExtension(Base(32, 1, None), c.pointer(metadata))
        frame = Frame(168, c.cast(c.pointer(extension), c.c_void_p), None, None, 3)
        assert handler(c.addressof(frame)) is None
        assert (metadata.api_version.major, metadata.api_version.minor, metadata.traits) == (0, 1, 0)
        for stage in (0, 1, 2):  # instantiate, prepare, initialize: nothing to do
            assert handler(c.addressof(Frame(168, None, None, None, stage))) is None


def test_kernel_pack_wheels_install_where_scanrt_looks(tmp_path, monkeypatch):
    """scripts/kernel-wheel.py makes a data wheel that unpacks the pack into
    scanrt_kernels/ (every RECORD hash true, the pack readable by all), and
    scanrt._packs finds each scanrt_kernels directory on sys.path for the extension."""
    import base64
    import hashlib
    import importlib
    import os
    import subprocess
    import sys
    import zipfile

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    pack = tmp_path / "scanrt-kernels-sm_90.pack"
    pack.write_bytes(os.urandom(1000))
    wheel = subprocess.run([sys.executable, os.path.join(root, "scripts", "kernel-wheel.py"), str(pack), "1.2.3",
                            str(tmp_path / "dist")], check=True, capture_output=True, text=True).stdout.strip()
    assert os.path.basename(wheel) == "scanrt_kernels_sm90-1.2.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert "scanrt_kernels/scanrt-kernels-sm_90.pack" in names
        assert z.read("scanrt_kernels/scanrt-kernels-sm_90.pack") == pack.read_bytes()
        assert z.getinfo("scanrt_kernels/scanrt-kernels-sm_90.pack").external_attr >> 16 == 0o644
        metadata = z.read("scanrt_kernels_sm90-1.2.3.dist-info/METADATA").decode()
        assert "Name: scanrt-kernels-sm90" in metadata and "Version: 1.2.3" in metadata
        for line in z.read("scanrt_kernels_sm90-1.2.3.dist-info/RECORD").decode().splitlines():
            path, hashed, size = line.split(",")
            assert path in names
            if hashed:
                body = z.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
                assert (hashed, int(size)) == ("sha256=" + want, len(body)), path
        z.extractall(tmp_path / "site")
    refused = subprocess.run([sys.executable, os.path.join(root, "scripts", "kernel-wheel.py"),
                              str(tmp_path / "x.pack"), "1", str(tmp_path)], capture_output=True, text=True)
    assert refused.returncode != 0 and "not a kernel pack's file name" in refused.stderr
    from scanrt import _packs

    monkeypatch.setattr(sys, "path", [str(tmp_path / "site")] + sys.path)
    importlib.invalidate_caches()
    assert _packs.register() == [str(tmp_path / "site" / "scanrt_kernels")]
