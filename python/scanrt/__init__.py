"""scanrt: GPU prefix scans, sorts and selections for PyTorch, CuPy, JAX and NumPy arrays.

Every function takes an array of any of these libraries (on the GPU: CUDA tensors, CuPy
and JAX arrays, anything with ``__cuda_array_interface__``; NumPy arrays and CPU tensors
run on scanrt's host backend) and returns arrays of the same library on the same device,
computed on that library's current stream, without a copy or a synchronisation (JAX
arrays are waited for, as JAX has no stream to join).

Scans run along ``axis`` (default: the last). Any axis of any array, strided or
transposed, is scanned where it lies in memory (columns too: one pass, no copy); results
are new C-contiguous arrays.

PyTorch tensors that require gradients go through scanrt's operators with autograd
(``autograd.Function``s; inside ``torch.compile`` the same code registered as
``torch.ops.scanrt``); functions without a gradient refuse them with a ``TypeError``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from . import _arrays, _core, _nvrtc, _packs
from ._scanrt import ScanrtError, __version__
from . import _scanrt
from ._operator import Operator
from ._primitives import Predicate, argsort, compress, nonzero, partition, select, sort, unique_consecutive
from ._recipes import Extremes, cummax, cummin, logcumsumexp
from ._recurrence import linear_recurrence, linear_recurrence_adjoint

# Before the first kernel loads: the kernel packs of pip's scanrt-kernels-sm* wheels, and
# NVRTC from pip's wheel where it is installed (for kernels no pack holds).
_packs.register()
_nvrtc.preload()

__all__ = [
    "Extremes",
    "ScanrtError",
    "__version__",
    "Operator",
    "cumsum",
    "cumprod",
    "summed_area_table",
    "scan_across",
    "scan_out_of_core",
    "cummax",
    "cummin",
    "logcumsumexp",
    "linear_recurrence",
    "linear_recurrence_adjoint",
    "sort",
    "argsort",
    "compress",
    "select",
    "partition",
    "Predicate",
    "nonzero",
    "unique_consecutive",
]

# The accumulator of the half types (their carries in arrays have this type).
_ACCUMULATED = {"float16": "float32", "bfloat16": "float32"}


def _result_type(in_type: str, op: str, dtype: Optional[str]) -> str:
    """The type a scan of ``in_type`` elements writes: ``dtype``, or the input's (integer
    sums and products widened)."""
    out = dtype or (_core.WIDENED.get(in_type, in_type) if op in ("sum", "prod") else in_type)
    if out == "bool" and op in ("sum", "prod"):
        # Bytes would wrap past 255 and leave values that are no bool; NumPy's bool sum
        # and product are OR and AND: scanrt's max and min.
        raise TypeError(f"a {op} into bool: take op 'max' (any) or 'min' (all), or another dtype")
    return out


# Runs a binding call on the first array's stream (scanrt/_arrays.py).
_run = _arrays.run
_one_d = _arrays.one_d
_torch_autograd = _arrays.torch_autograd


def _xla() -> Any:
    """scanrt's XLA custom calls for JAX (``_jax``), imported where a JAX array is seen."""
    from . import _jax

    return _jax


def _readable(x: Any, op: str, dtype: Optional[str]) -> Any:
    """``x``, or converted to the result's type where the scan does not read its type
    into that one (int8 into int64, int64 into float32, ...): NumPy's ``dtype``, the type
    the elements are summed in."""
    in_type = _arrays.describe_dtype(x)
    out_type = _result_type(in_type, op, dtype)
    if out_type == in_type or _scanrt.scan_takes(in_type, out_type, op):
        return x
    # Where the result's type is not read either, the scan names it.
    return _arrays.astype(x, out_type) if _scanrt.scan_takes(out_type, out_type, op) else x


def _builtin_scan(x: Any, op: str, axis: Optional[int], exclusive: bool, reverse: bool, initial: Any,
                  deterministic: bool, dtype: Optional[str], out: Any, segments: Any = None, total: Any = None,
                  offsets: Any = None, keys: Any = None) -> Any:
    if axis is None:  # NumPy's: the flattened array, in C order
        x, axis = x.reshape(-1), -1
    if _arrays.library(x) == "jax" and _xla().takes(out, initial, total):
        x = _readable(x, op, dtype)
        out_type = _result_type(_arrays.describe_dtype(x), op, dtype)
        data, kind = _xla().segments_of(segments, offsets, keys)
        return _xla().scan(x, op, axis, exclusive, reverse, initial, deterministic, out_type, data, kind)
    tensor = _arrays.is_torch(x)
    if dtype is not None or not tensor or x.dtype.itemsize < 4:
        x = _readable(x, op, dtype)
    if _arrays.is_array(initial) or total is not None:
        if keys is not None:
            raise TypeError("carries in arrays are for unsegmented scans and scans by offsets, not by keys")
        return _carried_scan(x, op, axis, exclusive, reverse, initial, deterministic, dtype, out, segments, total,
                             offsets)
    if segments is not None or offsets is not None or keys is not None:
        if _torch_autograd(x):
            # Here, not at the top: _torch imports torch, which scanrt does not require.
            from . import _torch

            _arrays.segment_data(x, segments, offsets, keys)
            return _torch.scan(x, op, 0, exclusive, reverse, initial, deterministic, dtype, out, segments, offsets,
                               keys)
        return _segmented_scan(x, op, exclusive, reverse, initial, deterministic, dtype, out, segments, offsets,
                               keys)
    if tensor:
        # The common call first, with nothing a small scan would feel: a CUDA tensor that
        # needs no graph (a torch.func transform's tensor, which has no storage of its
        # own, is caught where the fast path reads its address).
        import torch

        graph = (x.requires_grad and torch.is_grad_enabled()) or torch.compiler.is_compiling()
        if not graph and out is None and x.is_cuda:
            ndim = x.dim()
            if -ndim <= axis < ndim:
                try:
                    return _torch_scan_fast(x, op, axis % ndim, exclusive, reverse, initial, deterministic, dtype)
                except RuntimeError:
                    if not _arrays.TORCH_WRAPPED[0](x):
                        raise
        if graph or _arrays.TORCH_WRAPPED[0](x):
            from . import _torch

            return _torch.scan(x, op, axis, exclusive, reverse, initial, deterministic, dtype, out)
    axis = _arrays.normal_axis(x, axis)
    in_type = _arrays.describe_dtype(x)
    out_type = _result_type(in_type, op, dtype)
    # Into `out` itself where it is an array of the result's type and shape on the same
    # side (x itself too: in place), else into a new array copied there.
    direct = _writes_into(out, x, out_type)
    result = out if direct else _arrays.empty(x, x.shape, out_type)
    # Any axis of any strides is scanned where it lies: no transpose, no copy.
    _run([x], lambda s: _scanrt.scan(x=_arrays.describe(x), out=_arrays.describe(result), op=op,
                                     inclusive=not exclusive, reverse=reverse, initial=initial,
                                     deterministic=deterministic, stream=s, axis=axis))
    if direct:
        _arrays.mark_written([result])
    return result if direct else _finish(result, len(x.shape) - 1, out)


def _writes_into(out: Any, x: Any, out_type: str) -> bool:
    """Whether a scan of ``x`` can write ``out`` as it lies: an array of the result's
    type and ``x``'s shape in the same library and memory (scanrt refuses partial
    overlaps of the two, writing nothing)."""
    if out is None or not _arrays.is_array(out) or _arrays.library(out) != _arrays.library(x):
        return False
    if _torch_autograd(out):  # autograd sees the copy into it (and refuses leaves)
        return False
    if tuple(out.shape) != tuple(x.shape) or _arrays.describe_dtype(out) != out_type:
        return False
    if _arrays.library(out) == "jax":
        return False
    _arrays.check_writable(out)
    return _arrays.describe(out)[4] == _arrays.describe(x)[4]


def _carried_scan(x, op, axis, exclusive, reverse, initial, deterministic, dtype, out, segments, total, offsets):
    """A scan whose initial value is read from an array (``initial``) and whose total goes
    to one (``total``), on the device: chunks of a long or streamed array chain with no
    copy to the host. One value for a 1-D scan; with ``offsets`` one per segment; along
    an axis of an N-D array one per sequence (the other axes' shape, row-major; a
    one-element ``initial`` serves every sequence)."""
    if segments is not None:
        raise TypeError("carries in arrays are for unsegmented scans and scans by offsets (one per segment)")
    if any(_torch_autograd(a) for a in (x, initial, total) if _arrays.is_array(a)):
        raise TypeError("a scan with carries in arrays is not differentiable; detach the input and carries")
    if total is not None:
        _arrays.check_carry_out(total, "total is an array that receives the total")
    along = None
    if offsets is not None:  # read as runs of elements, as _segmented_scan's
        x, offsets = _arrays.contiguous(x), _arrays.contiguous(offsets)
    if offsets is not None or len(x.shape) == 1:
        _one_d(x)
    else:
        along = _arrays.normal_axis(x, axis)
    in_type = _arrays.describe_dtype(x)
    out_type = _result_type(in_type, op, dtype)
    carry_type = _ACCUMULATED.get(out_type, out_type)
    count, what = 1, "one-element"
    if offsets is not None:
        _arrays.check_offsets(offsets)
        count = max(int(offsets.shape[0]) - 1, 0)
        what = f"{count}-element (one per segment)"
    elif along is not None:
        count = 1
        for k, extent in enumerate(x.shape):
            count *= int(extent) if k != along else 1
        what = f"{count}-element (one per sequence along axis {along})"
    for name, c in (("initial", initial), ("total", total)):
        allowed = (count, 1) if name == "initial" and along is not None else (count,)
        if _arrays.is_array(c) and (_arrays.describe_dtype(c) != carry_type or _arrays.size(c) not in allowed):
            raise TypeError(f"{name} is a {what} {carry_type} array (the accumulator's type)")
    result = _arrays.empty(x, x.shape, out_type)
    carry_in = _flat(initial) if _arrays.is_array(initial) else None
    carry_out = _flat(total) if total is not None else None
    starts = None if offsets is None else _arrays.describe(offsets)
    scalar = None if _arrays.is_array(initial) else initial
    _run([x], lambda s: _scanrt.scan(x=_arrays.describe(x), out=_arrays.describe(result), op=op,
                                     inclusive=not exclusive, reverse=reverse, initial=scalar,
                                     deterministic=deterministic, stream=s, carry_in=carry_in,
                                     carry_out=carry_out, offsets=starts, axis=-1 if along is None else along))
    _arrays.mark_written([total])
    return _finish(result, len(x.shape) - 1, out)


def _flat(a: Any) -> Any:
    """The description of a C-contiguous array as the 1-D array of its elements (carries
    are read and written in row-major order)."""
    address, dtype, shape, strides, device = _arrays.describe(a)
    step = 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent > 1 and stride != step:
            raise TypeError(f"carry arrays are C-contiguous; this one has shape {shape} and strides {strides}")
        step *= extent
    return (address, dtype, (step,), (1,), device)


def _segmented_scan(x, op, exclusive, reverse, initial, deterministic, dtype, out, segments, offsets, keys=None):
    # Segments are read as runs of elements: strided or reversed 1-D arrays become
    # contiguous ones (a copy only where needed).
    x, segments, offsets, keys = (None if a is None else _arrays.contiguous(a) for a in (x, segments, offsets, keys))
    data = _arrays.segment_data(x, segments, offsets, keys)
    in_type = _arrays.describe_dtype(x)
    out_type = _result_type(in_type, op, dtype)
    result = _arrays.empty(x, x.shape, out_type)
    flags = None if segments is None else _arrays.describe(segments)
    starts = None if offsets is None else _arrays.describe(offsets)
    runs = None if keys is None else _arrays.describe(keys)
    _run([x, data], lambda s: _scanrt.scan(x=_arrays.describe(x), out=_arrays.describe(result), op=op,
                                           inclusive=not exclusive, reverse=reverse, initial=initial,
                                           deterministic=deterministic, stream=s, segments=flags, offsets=starts,
                                           keys=runs))
    return _finish(result, 0, out)


def _torch_scan_fast(x: Any, op: str, axis: int, exclusive: bool, reverse: bool, initial: Any, deterministic: bool,
                     dtype: Optional[str]) -> Any:
    """The common PyTorch call, with nothing between it and the binding that a small scan
    would feel: a CUDA tensor (any axis, any strides) into a new contiguous one, on the raw
    current stream."""
    import torch

    name = _arrays.TORCH_DTYPE_NAMES.get(x.dtype) or str(x.dtype).replace("torch.", "")
    out_type = _result_type(name, op, dtype)
    if out_type == name and x.is_contiguous():
        result = torch.empty_like(x)  # a third of torch.empty's host time
    else:
        result = torch.empty(x.shape, dtype=getattr(torch, out_type), device=x.device)
    device = x.get_device()
    shape = tuple(x.shape)
    _scanrt.scan(x=(x.data_ptr(), name, shape, x.stride(), device),
                 out=(result.data_ptr(), out_type, shape, result.stride(), device), op=op, inclusive=not exclusive,
                 reverse=reverse, initial=initial, deterministic=deterministic,
                 stream=torch._C._cuda_getCurrentRawStream(device), axis=axis)
    return result


def _finish(result: Any, axis: int, out: Any) -> Any:
    result = _arrays.move_back(result, axis)
    return result if out is None else _arrays.copy_into(out, result)


def cumsum(x: Any, axis: Optional[int] = -1, *, exclusive: bool = False, reverse: bool = False, initial: Any = None,
           deterministic: bool = False, dtype: Optional[str] = None, out: Any = None, segments: Any = None,
           total: Any = None, offsets: Any = None, keys: Any = None) -> Any:
    """Cumulative sum along ``axis`` (None: of the flattened array, as NumPy's).

    ``exclusive``: element i sums the elements before i (the first is ``initial``, or 0).
    ``reverse``: from the last element to the first. ``initial``: a value every result
    starts from, or an array of the accumulator's type on the same device, read there:
    one element for a 1-D ``x``; for N-D ``x`` one per sequence along ``axis`` (the other
    axes' shape, row-major) or one for all. ``total``: an array that receives each
    sequence's total (``initial`` plus every element), shaped as ``initial``; pass the
    same array as ``initial`` and ``total`` to scan a long array chunk after chunk on the
    device (a 2-D one's rows, chunks of columns at a time, too).
    ``deterministic``: bitwise identical float results on every run.
    ``dtype``: the result's (and accumulator's) type, as NumPy's (the elements are
    converted to it first where the scan does not read them into it); integers narrower
    than 64 bits sum in int64 (uint32 in uint64) by default, as NumPy and PyTorch do. float16 and bfloat16
    are read into float32, summed in float32 and rounded once as each result is written
    (their ``initial`` and ``total`` arrays are float32). ``segments``: a bool or uint8
    array as long as the 1-D ``x``; each nonzero starts a new sum. ``offsets``: segments
    as a CSR array of the 1-D ``x`` (int32, int64, uint32 or uint64; segment i is
    ``x[offsets[i]:offsets[i+1]]``, empty ones allowed): each offset below ``len(x)``
    starts a new sum, larger and negative ones nothing. With offsets, ``initial`` (an
    array) and ``total`` hold one value per segment (``len(offsets) - 1``): segment i
    starts from ``initial[i]`` and its total goes to ``total[i]`` (offsets must then
    not decrease). ``keys``: an array as long as the 1-D ``x``; each run of equal
    consecutive keys is a segment (as a scan by key).
    """
    return _builtin_scan(x, "sum", axis, exclusive, reverse, initial, deterministic, dtype, out, segments, total,
                         offsets, keys)


def summed_area_table(x: Any, *, exclusive: bool = False, reverse: bool = False, dtype: Optional[str] = None,
                      out: Any = None) -> Any:
    """The summed-area table (integral image) of ``x`` over its last two axes (earlier
    axes are a batch of tables): each element sums every element above and to the left
    of it, itself included (excluded when ``exclusive``; ``reverse`` sums from the last
    row and column). On the GPU an inclusive table is one pass over the data (two scans
    for an exclusive one, or where a batch axis interleaves with the table's columns in
    memory); ``dtype`` as :func:`cumsum`'s."""
    if len(getattr(x, "shape", ())) < 2:
        raise ValueError("a summed-area table takes an array of at least 2 dimensions")
    jax_traced = _arrays.library(x) == "jax" and _xla().takes(out)
    if _torch_autograd(x) or jax_traced:  # differentiable (and on JAX, jittable): two scans
        rows = cumsum(x, axis=-1, exclusive=exclusive, reverse=reverse, dtype=dtype)
        return cumsum(rows, axis=-2, exclusive=exclusive, reverse=reverse, dtype=dtype, out=out)
    x = _readable(x, "sum", dtype)
    out_type = _result_type(_arrays.describe_dtype(x), "sum", dtype)
    direct = _writes_into(out, x, out_type)
    result = out if direct else _arrays.empty(x, x.shape, out_type)
    _run([x], lambda s: _scanrt.summed_area_table(x=_arrays.describe(x), out=_arrays.describe(result), op="sum",
                                                  inclusive=not exclusive, reverse=reverse, stream=s))
    if direct:
        _arrays.mark_written([result])
    return result if direct else _finish(result, len(x.shape) - 1, out)


def cumprod(x: Any, axis: Optional[int] = -1, *, exclusive: bool = False, reverse: bool = False, initial: Any = None,
            deterministic: bool = False, dtype: Optional[str] = None, out: Any = None, segments: Any = None,
            total: Any = None, offsets: Any = None, keys: Any = None) -> Any:
    """Cumulative product along ``axis`` (integers wrap); arguments as :func:`cumsum`."""
    return _builtin_scan(x, "prod", axis, exclusive, reverse, initial, deterministic, dtype, out, segments, total,
                         offsets, keys)


def scan_across(chunks: Sequence[Any], op: str = "sum", *, exclusive: bool = False, reverse: bool = False,
                initial: Any = None, deterministic: bool = False, dtype: Optional[str] = None,
                with_total: bool = False) -> Any:
    """Scans one logical array split over the GPUs of this process: ``chunks`` are its
    consecutive 1-D pieces, one per GPU (distinct devices), in order. Returns the pieces
    of the result, each on its chunk's device (and, with ``with_total``, one-element
    arrays holding the whole array's total in the accumulator's type, float32 for half
    types, one per GPU). ``op`` is "sum", "prod", "min" or "max"; the other arguments as
    :func:`cumsum`. Each GPU reduces its chunk, the GPUs exchange one value each through
    NCCL, and each scans its chunk from its carry: about 3n of memory traffic per GPU, no
    copy to the host. Needs NCCL (``libnccl.so`` on the library path)."""
    chunks = list(chunks)
    if not chunks:
        raise ValueError("no chunks")
    if any(_torch_autograd(c) for c in chunks):
        raise TypeError("a scan across GPUs is not differentiable; detach the chunks")
    for c in chunks:
        _one_d(c)
    chunks = [_readable(c, op, dtype) for c in chunks]  # int8 into int64, as cumsum reads them
    in_type = _arrays.describe_dtype(chunks[0])
    if any(_arrays.describe_dtype(c) != in_type for c in chunks):
        raise TypeError("the chunks have different types")
    out_type = _result_type(in_type, op, dtype)
    outs = [_arrays.empty(c, c.shape, out_type) for c in chunks]
    # The total is the accumulator's (float32 for half types), as for carries in arrays.
    total_type = _ACCUMULATED.get(out_type, out_type)
    totals = [_arrays.empty(c, (1,), total_type) for c in chunks] if with_total else None
    _arrays.prepare_inputs(chunks)
    streams = [_arrays.stream_of(c) for c in chunks]
    _scanrt.scan_across(chunks=[_arrays.describe(c) for c in chunks], outs=[_arrays.describe(o) for o in outs], op=op,
                        inclusive=not exclusive, reverse=reverse, initial=initial, deterministic=deterministic,
                        streams=streams, totals=[_arrays.describe(t) for t in totals] if totals is not None else None)
    for c, s in zip(chunks, streams):
        if _arrays.needs_synchronize(c):
            _scanrt.synchronize(_arrays.describe(c)[4], s)
    return (outs, totals) if with_total else outs


def scan_out_of_core(x: Any, op: str = "sum", *, out: Any = None, device: int = 0, exclusive: bool = False,
                     reverse: bool = False, initial: Any = None, dtype: Optional[str] = None, chunk: int = 0,
                     progress: Optional[Callable[[int, int], Any]] = None) -> Any:
    """Scans a contiguous 1-D array too large for the GPU through GPU ``device``, in
    chunks whose upload, scan and download overlap, the running total carried on the
    GPU. ``x`` and ``out`` are each a NumPy array (host memory: page-locked memory moves
    fastest, pageable memory at the driver's staging speed) or an array on that GPU (a
    device array scanned into host memory, or a host array into device memory); ``out``
    defaults to a new NumPy array. ``op`` is "sum", "prod", "min" or "max"; ``exclusive``,
    ``reverse``, ``initial`` and ``dtype`` as :func:`cumsum`; ``chunk``: elements per
    chunk (0: 2^26). ``progress(done, total)`` is called after each chunk. Returns ``out``
    once the results are there."""
    _one_d(x)
    if _torch_autograd(x):
        raise TypeError("an out-of-core scan is not differentiable; detach the input")
    in_type = _arrays.describe_dtype(x)
    out_type = _result_type(in_type, op, dtype)
    if out is None:
        import numpy

        out = numpy.empty(x.shape, dtype=out_type)
    _one_d(out)
    _arrays.check_writable(out)
    _arrays.prepare_inputs([x])
    for a in (x, out):  # the scan runs on streams of its own: queued work on the arrays ends first
        if _arrays.describe(a)[4] >= 0:
            _scanrt.synchronize(_arrays.describe(a)[4], _arrays.stream_of(a))
    _scanrt.scan_out_of_core(x=_arrays.describe(x), out=_arrays.describe(out), op=op, inclusive=not exclusive,
                             reverse=reverse, initial=initial, device=device, chunk=chunk, progress=progress)
    return out
